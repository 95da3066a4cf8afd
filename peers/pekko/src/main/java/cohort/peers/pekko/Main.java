package cohort.peers.pekko;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The comparison scenarios on Apache Pekko typed actors: {@code peer-pekko <scenario> [--flag N]...}
 * runs one scenario once (after untimed JIT warm-up runs), checks its result and prints one JSON
 * line, as the other ports do (see ../README.md):
 * {@code {"framework":"pekko","scenario":"skynet","elapsed_s":1.2,"messages":1111111,"ok":true}}.
 * Exit status 0 when the result was checked correct, 1 when wrong, 2 on bad usage.
 */
public final class Main {
  static final List<String> SCENARIOS = List.of(
      "ping-pong-one-thread", "ping-pong-two-threads", "skynet", "thread-ring",
      "parallel-thread-ring", "counting-actor", "fan-out", "self-send", "remote-ping-pong",
      "remote-ping-pong-latency");

  private Main() {}

  /** What one checked run measured. */
  record Outcome(double elapsedS, long messages, long p50Ns) {
    Outcome(double elapsedS, long messages) {
      this(elapsedS, messages, 0);
    }
  }

  /** A wrong result: its message goes into the JSON line. */
  static final class WrongResult extends Exception {
    WrongResult(String message) {
      super(message);
    }
  }

  static void check(String what, long got, long expected) throws WrongResult {
    if (got != expected) {
      throw new WrongResult("wrong " + what + ": " + Long.toUnsignedString(got) + ", expected "
          + Long.toUnsignedString(expected));
    }
  }

  /** The sizes of a run, by flag name (defaults are the source benchmarks' full sizes). */
  static Map<String, Long> defaults(String scenario) {
    Map<String, Long> z = new LinkedHashMap<>();
    z.put("count", scenario.equals("counting-actor") ? 3_000_000L : 1_000_000L);
    z.put("leaves", 1_000_000L);
    z.put("branching", 10L);
    z.put("agents", 503L);
    z.put("hops", 10_000_000L);
    z.put("tokens", 503L);
    z.put("workers", scenario.equals("self-send") ? 50L : 100L);
    z.put("messages", scenario.equals("remote-ping-pong") ? 200_000L : 100_000L);
    z.put("message-count", 1_000_000L);
    z.put("start-batch", 1L);
    z.put("clients", 1L);
    z.put("in-flight", 50L);
    z.put("round-trips", 20_000L);
    z.put("warmups", 1L);
    return z;
  }

  /** The messages a run handles in all (what its rate is computed from). */
  static long messagesOf(String s, Map<String, Long> z) {
    return switch (s) {
      case "ping-pong-one-thread", "ping-pong-two-threads" -> 2 * z.get("count");
      case "skynet" -> Skynet.actors(z.get("leaves"), z.get("branching"));
      case "thread-ring", "parallel-thread-ring" -> z.get("hops");
      case "counting-actor" -> z.get("count");
      case "fan-out" -> z.get("workers") * z.get("messages");
      case "self-send" -> z.get("workers") * z.get("message-count");
      case "remote-ping-pong" -> z.get("clients") * 2 * Math.max(1, z.get("messages") / 2);
      // The latency run: one ping in flight, `round-trips` pings and as many pongs.
      case "remote-ping-pong-latency" -> 2 * z.get("round-trips");
      default -> throw new IllegalArgumentException(s);
    };
  }

  static String validate(String s, Map<String, Long> z) {
    for (var e : z.entrySet()) {
      if (e.getValue() < 1 && !e.getKey().equals("warmups")) {
        return "--" + e.getKey() + " must be at least 1";
      }
    }
    switch (s) {
      case "skynet" -> {
        long b = z.get("branching");
        long n = z.get("leaves");
        if (b < 2) {
          return "--branching must be at least 2";
        }
        while (n > 1 && n % b == 0) {
          n /= b;
        }
        if (n != 1 || z.get("leaves") < b) {
          return "--leaves must be a power of --branching";
        }
      }
      case "thread-ring" -> {
        if (z.get("agents") < 2) {
          return "--agents must be at least 2";
        }
      }
      case "parallel-thread-ring" -> {
        if (z.get("tokens") > z.get("agents") || z.get("hops") < z.get("tokens")) {
          return "need --tokens <= --agents and --hops >= --tokens";
        }
      }
      case "self-send" -> {
        if (z.get("start-batch") > z.get("message-count")) {
          return "--start-batch must be at most --message-count";
        }
      }
      case "remote-ping-pong" -> {
        if (z.get("messages") < 2) {
          return "--messages must be at least 2 (a ping and its pong)";
        }
      }
      default -> {}
    }
    return null;
  }

  /** The warm-up's sizes: a fifth of the run (skynet: a tenth of the leaves), at least 1. */
  static Map<String, Long> warmupSizes(String s, Map<String, Long> z) {
    Map<String, Long> w = new LinkedHashMap<>(z);
    for (String k : List.of("count", "hops", "messages", "message-count", "round-trips")) {
      w.put(k, Math.max(z.get(k) / 5, 1));
    }
    if (z.get("leaves") >= z.get("branching") * z.get("branching")) {
      w.put("leaves", z.get("leaves") / z.get("branching"));
    }
    w.put("hops", Math.max(w.get("hops"), z.get("tokens")));
    w.put("messages", Math.max(w.get("messages"), 2));
    w.put("start-batch", Math.min(z.get("start-batch"), w.get("message-count")));
    return w;
  }

  static Outcome run(String s, Map<String, Long> z) throws Exception {
    return switch (s) {
      case "ping-pong-one-thread" -> PingPong.run(z.get("count"), false);
      case "ping-pong-two-threads" -> PingPong.run(z.get("count"), true);
      case "skynet" -> Skynet.run(z.get("leaves"), z.get("branching"));
      case "thread-ring" -> Ring.run(z.get("agents"), new long[] {z.get("hops")});
      case "parallel-thread-ring" ->
          Ring.run(z.get("agents"), Ring.splitHops(z.get("hops"), z.get("tokens")));
      case "counting-actor" -> Counting.run(z.get("count"));
      case "fan-out" -> FanOut.run(z.get("workers"), z.get("messages"));
      case "self-send" ->
          SelfSend.run(z.get("workers"), z.get("message-count"), z.get("start-batch"));
      default -> throw new IllegalArgumentException(s);
    };
  }

  static String json(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static int usage(String e) {
    System.err.println("peer-pekko: " + e + "\nusage: peer-pekko <scenario> [--count N] "
        + "[--leaves N] [--branching N] [--agents N] [--hops N] [--tokens N] [--workers N] "
        + "[--messages N] [--message-count N] [--start-batch N] [--clients N] [--in-flight N] "
        + "[--round-trips N] [--warmups N]\nscenarios: " + String.join(", ", SCENARIOS));
    return 2;
  }

  static int main2(String[] args) {
    if (args.length < 1) {
      return usage("no scenario");
    }
    String s = args[0];
    if (s.equals("remote-ping-pong-server")) {
      return RemotePingPong.serve(args);
    }
    if (!SCENARIOS.contains(s)) {
      return usage("unknown scenario " + s);
    }
    Map<String, Long> z = defaults(s);
    for (int i = 1; i < args.length; i += 2) {
      String flag = args[i];
      if (!flag.startsWith("--") || !z.containsKey(flag.substring(2))) {
        return usage("unknown flag " + flag);
      }
      if (i + 1 >= args.length) {
        return usage(flag + " needs a value");
      }
      try {
        z.put(flag.substring(2), Long.parseLong(args[i + 1].replace("_", "")));
      } catch (NumberFormatException e) {
        return usage(flag + " takes a whole number, not " + args[i + 1]);
      }
    }
    String bad = validate(s, z);
    if (bad != null) {
      return usage(bad);
    }
    String head = "{\"framework\":\"pekko\",\"scenario\":" + json(s);
    try {
      Outcome o;
      if (s.startsWith("remote-")) {
        o = RemotePingPong.run(s, z);
      } else {
        // JIT warm-up: untimed runs of the same scenario, smaller, in this JVM.
        for (long w = 0; w < z.get("warmups"); w++) {
          run(s, warmupSizes(s, z));
        }
        o = run(s, z);
      }
      check("message count", o.messages(), messagesOf(s, z));
      String p50 = o.p50Ns() > 0 ? ",\"p50_ns\":" + o.p50Ns() : "";
      System.out.println(head + ",\"elapsed_s\":" + o.elapsedS() + ",\"messages\":" + o.messages()
          + p50 + ",\"ok\":true}");
      return 0;
    } catch (WrongResult e) {
      System.out.println(head + ",\"ok\":false,\"error\":" + json(e.getMessage()) + "}");
      return 1;
    } catch (Throwable e) {
      // A crash (an exception, or an error such as running out of heap) is a failed run.
      System.out.println(head + ",\"ok\":false,\"error\":" + json(e.toString()) + "}");
      return 1;
    }
  }

  public static void main(String[] args) {
    int status = main2(args);
    System.out.flush();
    // Halts without waiting for lingering non-daemon threads of stopped actor systems.
    Runtime.getRuntime().halt(status);
  }
}
