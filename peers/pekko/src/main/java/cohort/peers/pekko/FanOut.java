package cohort.peers.pekko;

import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * 1:N fan-out through a pub-sub {@link Topic} (typed Pekko's 1:N: the producer publishes each
 * number once, the topic actor tells every subscriber). Producer, topic and workers on the
 * default dispatcher with two threads. The time runs from the producer's start until the actor
 * system has terminated.
 */
final class FanOut {
  private FanOut() {}

  record Done(long received) {}

  static final class Worker extends AbstractBehavior<Long> {
    private final ActorRef<Done> producer;
    private long left;
    private long received;

    Worker(ActorContext<Long> ctx, ActorRef<Done> producer, long messages) {
      super(ctx);
      this.producer = producer;
      this.left = messages;
    }

    @Override
    public Receive<Long> createReceive() {
      return newReceiveBuilder().onMessage(Long.class, this::onNumber).build();
    }

    private Behavior<Long> onNumber(Long v) {
      received += 1;
      if (--left == 0) {
        producer.tell(new Done(received));
        return Behaviors.stopped();
      }
      return this;
    }
  }

  /** The producer is the guardian: it stops once every worker reported, ending the system. */
  static Behavior<Done> producer(long workers, long messages, Marks marks,
      CompletableFuture<Long> out) {
    return Behaviors.setup(ctx -> {
      marks.start();
      ActorRef<Topic.Command<Long>> topic =
          ctx.spawn(Topic.create(Long.class, "input"), "topic");
      for (long i = 0; i < workers; i++) {
        ActorRef<Long> w = ctx.spawnAnonymous(
            Behaviors.<Long>setup(c -> new Worker(c, ctx.getSelf(), messages)));
        topic.tell(Topic.subscribe(w));
      }
      for (long i = 0; i < messages; i++) {
        topic.tell(Topic.publish(i));
      }
      long[] state = {workers, 0};
      return Behaviors.receive(Done.class)
          .onMessage(Done.class, d -> {
            state[1] += d.received();
            if (--state[0] == 0) {
              out.complete(state[1]);
              return Behaviors.stopped();
            }
            return Behaviors.same();
          })
          .build();
    });
  }

  static Main.Outcome run(long workers, long messages) throws Exception {
    Marks marks = new Marks();
    CompletableFuture<Long> out = new CompletableFuture<>();
    ActorSystem<Done> system =
        Systems.start(producer(workers, messages, marks, out), Systems.local(2));
    long got;
    try {
      got = Systems.await(out, "the producer");
      Systems.awaitTerminated(system);
      marks.end();
    } finally {
      Systems.terminate(system);
    }
    Main.check("deliveries", got, workers * messages);
    return new Main.Outcome(marks.elapsedS(), got);
  }
}
