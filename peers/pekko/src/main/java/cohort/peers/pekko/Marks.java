package cohort.peers.pekko;

import java.util.concurrent.atomic.AtomicLong;

/** The start and end of a measured span, marked from any thread (the first mark wins). */
final class Marks {
  private static final long UNSET = Long.MIN_VALUE;
  private final AtomicLong start = new AtomicLong(UNSET);
  private final AtomicLong end = new AtomicLong(UNSET);

  void start() {
    start.compareAndSet(UNSET, System.nanoTime());
  }

  void end() {
    end.compareAndSet(UNSET, System.nanoTime());
  }

  double elapsedS() throws Main.WrongResult {
    if (start.get() == UNSET) {
      throw new Main.WrongResult("the run never marked its start");
    }
    if (end.get() == UNSET) {
      throw new Main.WrongResult("the run never finished");
    }
    return (end.get() - start.get()) / 1e9;
  }
}
