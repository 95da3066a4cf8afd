package cohort.peers.pekko;

import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Two actors exchange {@code count} round trips. One thread: both on the default dispatcher
 * with one thread. Two threads: each on a PinnedDispatcher (a thread of its own). The ping
 * carries the pinger's reference and is allocated once, the pong is a singleton, as Pekko's own
 * ping-pong benchmark does (TypedBenchmarkActors).
 */
final class PingPong {
  private PingPong() {}

  record Ping(ActorRef<Pong> replyTo) {}

  enum Pong {
    PONG
  }

  static Behavior<Ping> ponger() {
    return Behaviors.receive(Ping.class)
        .onMessage(Ping.class, p -> {
          p.replyTo().tell(Pong.PONG);
          return Behaviors.same();
        })
        .build();
  }

  static final class Pinger extends AbstractBehavior<Pong> {
    private final ActorRef<Ping> ponger;
    private final Ping ping;
    private final Marks marks;
    private final CompletableFuture<Void> done;
    private long left;

    Pinger(ActorContext<Pong> ctx, ActorRef<Ping> ponger, long count, Marks marks,
        CompletableFuture<Void> done) {
      super(ctx);
      this.ponger = ponger;
      this.ping = new Ping(ctx.getSelf());
      this.marks = marks;
      this.done = done;
      this.left = count;
      marks.start();
      ponger.tell(ping);
    }

    @Override
    public Receive<Pong> createReceive() {
      return newReceiveBuilder().onMessage(Pong.class, this::onPong).build();
    }

    private Behavior<Pong> onPong(Pong p) {
      if (--left > 0) {
        ponger.tell(ping);
        return this;
      }
      marks.end();
      done.complete(null);
      return Behaviors.stopped();
    }
  }

  static Main.Outcome run(long count, boolean twoThreads) throws Exception {
    Marks marks = new Marks();
    CompletableFuture<Void> done = new CompletableFuture<>();
    Props props = twoThreads ? DispatcherSelector.fromConfig("pinned-dispatcher") : Props.empty();
    Behavior<Void> guardian = Behaviors.setup(ctx -> {
      ActorRef<Ping> pong = ctx.spawn(ponger(), "ponger", props);
      ctx.spawn(Behaviors.<Pong>setup(c -> new Pinger(c, pong, count, marks, done)), "pinger",
          props);
      return Behaviors.empty();
    });
    ActorSystem<Void> system = Systems.start(guardian, Systems.local(1));
    try {
      Systems.await(done, "the pinger");
    } finally {
      Systems.terminate(system);
    }
    return new Main.Outcome(marks.elapsedS(), 2 * count);
  }
}
