package cohort.peers.pekko;

import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Self-send bulk: {@code workers} actors each tell themselves {@code messageCount} signals,
 * {@code startBatch} in flight, on the default dispatcher with two threads. The master is the
 * guardian; the time runs from its start until the actor system has terminated.
 */
final class SelfSend {
  private SelfSend() {}

  enum Signal {
    SIGNAL
  }

  record Done(long handled) {}

  static final class Worker extends AbstractBehavior<Signal> {
    private final ActorRef<Done> master;
    private final long count;
    private long sent;
    private long handled;

    Worker(ActorContext<Signal> ctx, ActorRef<Done> master, long count, long batch) {
      super(ctx);
      this.master = master;
      this.count = count;
      for (long i = 0; i < batch; i++) {
        ctx.getSelf().tell(Signal.SIGNAL);
      }
      this.sent = batch;
    }

    @Override
    public Receive<Signal> createReceive() {
      return newReceiveBuilder().onMessage(Signal.class, this::onSignal).build();
    }

    private Behavior<Signal> onSignal(Signal s) {
      handled += 1;
      if (sent < count) {
        sent += 1;
        getContext().getSelf().tell(Signal.SIGNAL);
      } else if (handled == count) {
        master.tell(new Done(handled));
        return Behaviors.stopped();
      }
      return this;
    }
  }

  static Main.Outcome run(long workers, long count, long batch) throws Exception {
    Marks marks = new Marks();
    CompletableFuture<Long> out = new CompletableFuture<>();
    Behavior<Done> master = Behaviors.setup(ctx -> {
      marks.start();
      for (long i = 0; i < workers; i++) {
        ctx.spawnAnonymous(
            Behaviors.<Signal>setup(c -> new Worker(c, ctx.getSelf(), count, batch)));
      }
      long[] state = {workers, 0};
      return Behaviors.receive(Done.class)
          .onMessage(Done.class, d -> {
            state[1] += d.handled();
            if (--state[0] == 0) {
              out.complete(state[1]);
              return Behaviors.stopped();
            }
            return Behaviors.same();
          })
          .build();
    });
    ActorSystem<Done> system = Systems.start(master, Systems.local(2));
    long got;
    try {
      got = Systems.await(out, "the master");
      Systems.awaitTerminated(system);
      marks.end();
    } finally {
      Systems.terminate(system);
    }
    Main.check("signals handled", got, workers * count);
    return new Main.Outcome(marks.elapsedS(), got);
  }
}
