package cohort.peers.pekko;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * ThreadRing and ParallelThreadRing: tokens make their hops round a ring of actors, every
 * actor on the default dispatcher with one thread. Each link learns its successor from a first
 * message (a reference exists only once spawned). The time runs from the first token's first
 * hop to the last token's last.
 */
final class Ring {
  private Ring() {}

  interface Msg {}

  record Next(ActorRef<Msg> next) implements Msg {}

  /** Starts a token of {@code hops} hops. */
  record Start(long hops) implements Msg {}

  /** A token with {@code left} hops to go. */
  record Token(long left) implements Msg {}

  /** As cohort's: tokens - 1 tokens of ceil(hops / tokens), the last the rest. */
  static long[] splitHops(long hops, long tokens) {
    long each = (hops + tokens - 1) / tokens;
    long[] v = new long[(int) tokens];
    if (hops > each * (tokens - 1)) {
      java.util.Arrays.fill(v, each);
      v[v.length - 1] = hops - each * (tokens - 1);
    } else {
      for (int k = 0; k < tokens; k++) {
        v[k] = hops / tokens + (k < hops % tokens ? 1 : 0);
      }
    }
    return v;
  }

  static final class Link extends AbstractBehavior<Msg> {
    private final Marks marks;
    private final AtomicLong tokensLeft;
    private final CompletableFuture<Void> done;
    private ActorRef<Msg> next;

    Link(ActorContext<Msg> ctx, Marks marks, AtomicLong tokensLeft, CompletableFuture<Void> done) {
      super(ctx);
      this.marks = marks;
      this.tokensLeft = tokensLeft;
      this.done = done;
    }

    @Override
    public Receive<Msg> createReceive() {
      return newReceiveBuilder()
          .onMessage(Token.class, this::onToken)
          .onMessage(Next.class, n -> {
            next = n.next();
            return this;
          })
          .onMessage(Start.class, s -> {
            marks.start();
            next.tell(new Token(s.hops() - 1));
            return this;
          })
          .build();
    }

    private Behavior<Msg> onToken(Token t) {
      if (t.left() > 0) {
        next.tell(new Token(t.left() - 1));
      } else if (tokensLeft.decrementAndGet() == 0) {
        marks.end();
        done.complete(null);
      }
      return this;
    }
  }

  static Main.Outcome run(long agents, long[] tokens) throws Exception {
    long hops = 0;
    for (long t : tokens) {
      hops += t;
    }
    Marks marks = new Marks();
    AtomicLong tokensLeft = new AtomicLong(tokens.length);
    CompletableFuture<Void> done = new CompletableFuture<>();
    Behavior<Void> guardian = Behaviors.setup(ctx -> {
      @SuppressWarnings("unchecked")
      ActorRef<Msg>[] links = new ActorRef[(int) agents];
      for (int i = 0; i < agents; i++) {
        links[i] = ctx.spawn(
            Behaviors.<Msg>setup(c -> new Link(c, marks, tokensLeft, done)), "link-" + i);
      }
      // Every successor is enqueued before any token can reach its link.
      for (int k = 0; k < agents; k++) {
        links[k].tell(new Next(links[(int) ((k + 1) % agents)]));
      }
      for (int k = 0; k < tokens.length; k++) {
        links[k].tell(new Start(tokens[k]));
      }
      return Behaviors.empty();
    });
    ActorSystem<Void> system = Systems.start(guardian, Systems.local(1));
    try {
      Systems.await(done, "the ring");
    } finally {
      Systems.terminate(system);
    }
    Main.check("tokens left", tokensLeft.get(), 0);
    return new Main.Outcome(marks.elapsedS(), hops);
  }
}
