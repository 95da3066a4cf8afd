package cohort.peers.pekko;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;

/** Actor systems as the scenarios configure them. */
final class Systems {
  /** How long a run may wait for its result before it is reported as failed. */
  static final Duration LIMIT = Duration.ofSeconds(600);

  private Systems() {}

  /**
   * The default dispatcher (fork-join, Pekko's default) with exactly {@code threads} threads,
   * and a dispatcher with a thread per actor for the scenarios that ask for one.
   */
  static Config local(int threads) {
    return ConfigFactory.parseString(
            "pekko.actor.default-dispatcher.fork-join-executor {\n"
                + "  parallelism-min = " + threads + "\n"
                + "  parallelism-max = " + threads + "\n"
                + "}\n"
                + "pinned-dispatcher {\n"
                + "  type = PinnedDispatcher\n"
                + "  executor = thread-pool-executor\n"
                + "}\n")
        .withFallback(quiet());
  }

  /** Pekko's defaults, logging warnings and errors only (to standard error, through SLF4J). */
  static Config quiet() {
    return ConfigFactory.parseString("pekko.loglevel = WARNING\n")
        .withFallback(ConfigFactory.load());
  }

  static <T> ActorSystem<T> start(Behavior<T> guardian, Config config) {
    return ActorSystem.create(guardian, "peer", config);
  }

  /** Waits for {@code f}, or fails the run after {@link #LIMIT}. */
  static <T> T await(CompletableFuture<T> f, String what) throws Exception {
    try {
      return f.get(LIMIT.toSeconds(), TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      throw new Main.WrongResult(what + " did not finish within " + LIMIT.toSeconds() + " s");
    }
  }

  /** Terminates {@code system} and waits until every actor has stopped. */
  static void terminate(ActorSystem<?> system) throws Exception {
    system.terminate();
    awaitTerminated(system);
  }

  static void awaitTerminated(ActorSystem<?> system) throws Exception {
    await(system.getWhenTerminated().toCompletableFuture(), "the actor system's termination");
  }
}
