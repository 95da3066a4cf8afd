package cohort.peers.pekko;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Akka's RemotePingPong between two JVMs on loopback, over Artery TCP: client actors in this
 * JVM, an echo actor per client in a child JVM ({@code remote-ping-pong-server}, the same jar).
 * Each client keeps {@code in-flight} pings outstanding and sends the next one when a pong comes
 * back, until it has sent its share; a client's messages are its pings plus its pongs. The
 * latency run: one client, one ping in flight, {@code round-trips} round trips, reporting the
 * median round trip. Both sides run Pekko's default dispatcher.
 */
final class RemotePingPong {
  private RemotePingPong() {}

  static final String SERVER = "rpp-server";
  static final String CLIENT = "rpp-client";

  /** Artery over TCP on loopback, a random port, the wire messages on their serializer. */
  static Config remote() {
    return ConfigFactory.parseString(
            "pekko.actor.provider = remote\n"
                + "pekko.remote.artery.transport = tcp\n"
                + "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"\n"
                + "pekko.remote.artery.canonical.port = 0\n"
                + "pekko.actor.serializers.rpp = \"cohort.peers.pekko.Wire$Serializer\"\n"
                + "pekko.actor.serialization-bindings {\n"
                + "  \"cohort.peers.pekko.Wire$Msg\" = rpp\n"
                + "}\n"
                // A benchmark of remoting alone: the hint to use Pekko Cluster is not needed.
                + "pekko.remote.warn-about-direct-use = off\n"
                + "pekko.remote.warn-unsafe-watch-outside-cluster = off\n")
        .withFallback(Systems.quiet());
  }

  // ---- the echo side (the child JVM) ----

  static Behavior<Wire.Msg> echo() {
    return Behaviors.setup(ctx -> new Echo(ctx));
  }

  static final class Echo extends AbstractBehavior<Wire.Msg> {
    private ActorRef<Wire.Pong> client;

    Echo(ActorContext<Wire.Msg> ctx) {
      super(ctx);
    }

    @Override
    public Receive<Wire.Msg> createReceive() {
      return newReceiveBuilder()
          .onMessage(Wire.Hello.class, h -> {
            client = h.client();
            return this;
          })
          .onMessage(Wire.Ping.class, p -> {
            client.tell(new Wire.Pong(p.sentNs()));
            return this;
          })
          .build();
    }
  }

  /**
   * The child's main: starts {@code echo-0..N-1}, prints {@code LISTEN <port>}, serves until
   * its standard input closes (the parent ended or died), then terminates.
   */
  static int serve(String[] args) {
    int clients = args.length == 3 && args[1].equals("--clients") ? Integer.parseInt(args[2]) : 30;
    CompletableFuture<Void> started = new CompletableFuture<>();
    Behavior<Void> guardian = Behaviors.setup(ctx -> {
      for (int i = 0; i < clients; i++) {
        ctx.spawn(echo(), "echo-" + i);
      }
      started.complete(null);
      return Behaviors.empty();
    });
    ActorSystem<Void> system = ActorSystem.create(guardian, SERVER, remote());
    try {
      started.get(60, TimeUnit.SECONDS);
      System.out.println("LISTEN " + system.address().getPort().get());
      System.out.flush();
      while (System.in.read() >= 0) {
        // Drains until the parent closes the pipe.
      }
      Systems.terminate(system);
      return 0;
    } catch (Exception e) {
      System.err.println("peer-pekko remote-ping-pong-server: " + e);
      system.terminate();
      return 1;
    }
  }

  /** The echo side as a child process: the same JVM, flags and jar. */
  static final class Child implements AutoCloseable {
    final Process process;
    final int port;

    Child(int clients) throws Exception {
      List<String> cmd = new ArrayList<>();
      cmd.add(ProcessHandle.current().info().command().orElse("java"));
      cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
      cmd.addAll(Arrays.asList("-cp", System.getProperty("java.class.path"),
          Main.class.getName(), "remote-ping-pong-server", "--clients",
          Integer.toString(clients)));
      process = new ProcessBuilder(cmd)
          .redirectError(ProcessBuilder.Redirect.INHERIT)
          .start();
      BufferedReader out = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      String first = out.readLine();
      if (first == null || !first.startsWith("LISTEN ")) {
        close();
        throw new Main.WrongResult("the server JVM did not start (exit status "
            + (process.isAlive() ? "none yet" : process.exitValue()) + ", first line "
            + first + ")");
      }
      port = Integer.parseInt(first.substring(7).trim());
    }

    @Override
    public void close() throws IOException {
      // Its standard input closing ends the child; it is killed if it lingers.
      process.getOutputStream().close();
      try {
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }

  // ---- the client side ----

  /** A round of clients, sent to this JVM's guardian. */
  record Round(ActorRef<Wire.Msg>[] echoes, int clients, long pings, long inFlight,
      boolean latency, CompletableFuture<Result> out) {}

  /** A client's end. */
  record Done(long received, long[] latencies) {}

  /** A round's end: when the last client finished, what they received, round-trip times. */
  record Result(long endNs, long received, long[] latencies) {}

  static final class Client extends AbstractBehavior<Wire.Pong> {
    private final ActorRef<Wire.Msg> echo;
    private final ActorRef<Done> done;
    private final long pings;
    private final long[] latencies;
    private long sent;
    private long received;

    Client(ActorContext<Wire.Pong> ctx, ActorRef<Wire.Msg> echo, ActorRef<Done> done, long pings,
        long inFlight, boolean latency) {
      super(ctx);
      this.echo = echo;
      this.done = done;
      this.pings = pings;
      this.latencies = latency ? new long[(int) pings] : null;
      echo.tell(new Wire.Hello(ctx.getSelf()));
      for (long i = 0; i < Math.min(inFlight, pings); i++) {
        ping();
      }
    }

    private void ping() {
      sent += 1;
      echo.tell(new Wire.Ping(System.nanoTime()));
    }

    @Override
    public Receive<Wire.Pong> createReceive() {
      return newReceiveBuilder().onMessage(Wire.Pong.class, this::onPong).build();
    }

    private Behavior<Wire.Pong> onPong(Wire.Pong p) {
      if (latencies != null) {
        latencies[(int) received] = System.nanoTime() - p.sentNs();
      }
      received += 1;
      if (sent < pings) {
        ping();
      } else if (received == pings) {
        done.tell(new Done(received, latencies));
        return Behaviors.stopped();
      }
      return this;
    }
  }

  /** This JVM's guardian: runs rounds, one at a time. */
  static Behavior<Object> driver() {
    return Behaviors.receive(Object.class)
        .onMessage(Round.class, r -> Behaviors.setup(ctx -> {
          for (int i = 0; i < r.clients(); i++) {
            ActorRef<Wire.Msg> echo = r.echoes()[i];
            ctx.spawnAnonymous(Behaviors.<Wire.Pong>setup(c -> new Client(c, echo,
                ctx.getSelf().narrow(), r.pings(), r.inFlight(), r.latency())));
          }
          long[] state = {r.clients(), 0};
          List<long[]> lat = new ArrayList<>();
          return Behaviors.receive(Object.class)
              .onMessage(Done.class, d -> {
                state[1] += d.received();
                if (d.latencies() != null) {
                  lat.add(d.latencies());
                }
                if (--state[0] == 0) {
                  long end = System.nanoTime();
                  long[] all = lat.stream().flatMapToLong(Arrays::stream).toArray();
                  r.out().complete(new Result(end, state[1], all));
                  return driver();
                }
                return Behaviors.same();
              })
              .build();
        }))
        .build();
  }

  @SuppressWarnings("unchecked")
  static Result round(ActorSystem<Object> system, Child child, ActorRef<Wire.Msg>[] echoes,
      int clients, long pings, long inFlight, boolean latency, long[] t0) throws Exception {
    CompletableFuture<Result> out = new CompletableFuture<>();
    t0[0] = System.nanoTime();
    system.tell(new Round(echoes, clients, pings, inFlight, latency, out));
    long deadline = System.nanoTime() + Systems.LIMIT.toNanos();
    // Waits for the round, failing at once when the echo JVM dies mid-run.
    while (!out.isDone()) {
      if (!child.process.isAlive()) {
        throw new Main.WrongResult("the server JVM exited mid-run with status "
            + child.process.exitValue());
      }
      if (System.nanoTime() > deadline) {
        throw new Main.WrongResult("the remote ping-pong round of " + clients
            + " clients did not finish within " + Systems.LIMIT.toSeconds() + " s");
      }
      try {
        out.get(50, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        // Not done yet.
      }
    }
    Result r = out.get();
    Main.check("pongs received", r.received(), clients * pings);
    return r;
  }

  /** The client's main for {@code remote-ping-pong} and {@code remote-ping-pong-latency}. */
  @SuppressWarnings("unchecked")
  static Main.Outcome run(String scenario, Map<String, Long> z) throws Exception {
    boolean latency = scenario.equals("remote-ping-pong-latency");
    int clients = latency ? 1 : z.get("clients").intValue();
    long pings = latency ? z.get("round-trips") : Math.max(1, z.get("messages") / 2);
    long inFlight = latency ? 1 : z.get("in-flight");
    try (Child child = new Child(clients)) {
      ActorSystem<Object> system = ActorSystem.create(driver(), CLIENT, remote());
      try {
        ActorRefResolver resolver = ActorRefResolver.get(system);
        ActorRef<Wire.Msg>[] echoes = new ActorRef[clients];
        for (int i = 0; i < clients; i++) {
          echoes[i] = resolver.resolveActorRef(
              "pekko://" + SERVER + "@127.0.0.1:" + child.port + "/user/echo-" + i);
        }
        long[] t0 = {0};
        // JIT warm-up, and the connection's handshake: untimed rounds at a fifth of the size.
        for (long w = 0; w < z.get("warmups"); w++) {
          round(system, child, echoes, clients, Math.max(1, pings / 5), inFlight, latency, t0);
        }
        Result r = round(system, child, echoes, clients, pings, inFlight, latency, t0);
        if (latency) {
          long[] l = r.latencies();
          Main.check("round trips timed", l.length, pings);
          Arrays.sort(l);
          return new Main.Outcome((r.endNs() - t0[0]) / 1e9, 2 * r.received(), l[(l.length - 1) / 2]);
        }
        return new Main.Outcome((r.endNs() - t0[0]) / 1e9, 2 * r.received());
      } finally {
        Systems.terminate(system);
      }
    }
  }
}
