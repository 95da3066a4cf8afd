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
 * Skynet: a tree of actors, branching {@code b}, {@code leaves} leaves; each leaf sends its
 * ordinal to its parent, each node the sum of its children, then stops. Every actor on the
 * default dispatcher with one thread. The time runs from the root's spawn until the actor system
 * has terminated (every actor stopped).
 */
final class Skynet {
  private Skynet() {}

  /** The actors of a tree: leaves + leaves / b + ... + 1. */
  static long actors(long leaves, long b) {
    long n = leaves;
    long total = 0;
    while (n >= 1) {
      total += n;
      if (n == 1) {
        break;
      }
      n /= b;
    }
    return total;
  }

  static Behavior<Long> node(ActorRef<Long> parent, long num, long size, long b) {
    return Behaviors.setup(ctx -> {
      if (size == 1) {
        parent.tell(num);
        return Behaviors.stopped();
      }
      return new Node(ctx, parent, num, size, b);
    });
  }

  static final class Node extends AbstractBehavior<Long> {
    private final ActorRef<Long> parent;
    private long left;
    private long sum;

    Node(ActorContext<Long> ctx, ActorRef<Long> parent, long num, long size, long b) {
      super(ctx);
      this.parent = parent;
      this.left = b;
      long step = size / b;
      for (long i = 0; i < b; i++) {
        ctx.spawnAnonymous(node(ctx.getSelf(), num + i * step, step, b));
      }
    }

    @Override
    public Receive<Long> createReceive() {
      return newReceiveBuilder().onMessage(Long.class, this::onSum).build();
    }

    private Behavior<Long> onSum(Long v) {
      sum += v;
      if (--left == 0) {
        parent.tell(sum);
        return Behaviors.stopped();
      }
      return this;
    }
  }

  static Main.Outcome run(long leaves, long b) throws Exception {
    CompletableFuture<Long> result = new CompletableFuture<>();
    Marks marks = new Marks();
    // The guardian spawns the root and stops once it has the sum: the system then terminates.
    Behavior<Long> guardian = Behaviors.setup(ctx -> {
      marks.start();
      ctx.spawn(node(ctx.getSelf(), 0, leaves, b), "root");
      return Behaviors.receive(Long.class)
          .onMessage(Long.class, sum -> {
            result.complete(sum);
            return Behaviors.stopped();
          })
          .build();
    });
    ActorSystem<Long> system = Systems.start(guardian, Systems.local(1));
    long sum;
    try {
      sum = Systems.await(result, "the skynet root");
      Systems.awaitTerminated(system);
      marks.end();
    } finally {
      Systems.terminate(system);
    }
    Main.check("sum", sum, leaves * (leaves - 1) / 2);
    return new Main.Outcome(marks.elapsedS(), actors(leaves, b));
  }
}
