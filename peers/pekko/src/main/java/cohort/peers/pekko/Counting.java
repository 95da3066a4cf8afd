package cohort.peers.pekko;

import java.time.Duration;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * CountingActor: this (plain, non-actor) thread tells {@code count} numbers to one actor on the
 * default dispatcher with one thread, then asks it for its tally. The time runs from the first
 * tell to the counter's handling of the query.
 */
final class Counting {
  private Counting() {}

  interface Msg {}

  record Add(long value) implements Msg {}

  record Get(ActorRef<Tally> replyTo) implements Msg {}

  record Tally(long at, long count, long sum) {}

  static final class Counter extends AbstractBehavior<Msg> {
    private long count;
    private long sum;

    Counter(ActorContext<Msg> ctx) {
      super(ctx);
    }

    @Override
    public Receive<Msg> createReceive() {
      return newReceiveBuilder()
          .onMessage(Add.class, a -> {
            count += 1;
            sum += a.value();
            return this;
          })
          .onMessage(Get.class, g -> {
            g.replyTo().tell(new Tally(System.nanoTime(), count, sum));
            return Behaviors.stopped();
          })
          .build();
    }
  }

  /** 1 + 2 + ... + n, wrapping as an unsigned 64-bit number. */
  static long sum(long n) {
    return n % 2 == 0 ? (n / 2) * (n + 1) : n * ((n + 1) / 2);
  }

  static Main.Outcome run(long count) throws Exception {
    ActorSystem<Msg> system = Systems.start(Behaviors.setup(Counter::new), Systems.local(1));
    Tally t;
    long t0;
    try {
      t0 = System.nanoTime();
      for (long v = 1; v <= count; v++) {
        system.tell(new Add(v));
      }
      t = Systems.await(
          AskPattern.<Msg, Tally>ask(system, Get::new, Duration.ofSeconds(600),
                  system.scheduler())
              .toCompletableFuture(),
          "the counter");
    } finally {
      Systems.terminate(system);
    }
    Main.check("count", t.count(), count);
    Main.check("sum", t.sum(), sum(count));
    return new Main.Outcome((t.at() - t0) / 1e9, count);
  }
}
