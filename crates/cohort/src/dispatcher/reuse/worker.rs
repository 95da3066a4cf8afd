//! The worker loop: runs one [`EventQueue`] on the current thread until it is closed.
//!
//! The loop executes from the queue's local half only, moving the remote half to the local
//! tail every [`defaults::LOCAL_BATCH`] demands (and whenever the local half is empty), so
//! demands from other threads are never starved by a busy local flow. With nothing to do it
//! spins for the configured time (a hand-off between two busy threads costs far less than
//! waking a parked one), yielding the CPU once its [`Patience`] is spent, then parks until a
//! remote push wakes it.

use crate::defaults;
use crate::queue::{EventQueue, QueueItem, RunningGuard};
use crate::stats::WorkerProbe;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Joins a dispatcher's worker threads (skipping the calling thread, which cannot join
/// itself), logging any that panicked.
pub(crate) fn join_all(dispatcher: &str, threads: impl IntoIterator<Item = JoinHandle<()>>) {
    let me = std::thread::current().id();
    for t in threads {
        if t.thread().id() != me && t.join().is_err() {
            tracing::error!(dispatcher, "worker thread panicked");
        }
    }
}

/// Spawns a named thread that runs `queue` until it is closed and empty.
pub(crate) fn spawn(
    name: String,
    queue: Arc<EventQueue>,
    spin: Duration,
    probe: Arc<WorkerProbe>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run(&queue, spin, &probe))
}

/// Runs `queue` on this thread until it is closed and empty.
pub(crate) fn run(queue: &EventQueue, spin: Duration, probe: &WorkerProbe) {
    run_with(queue, spin, Some(probe), |d| {
        d.run(queue, 1);
    })
}

/// The worker loop over any queue item, executing each with `execute`.
pub(crate) fn run_with<T: QueueItem>(
    queue: &EventQueue<T>,
    spin: Duration,
    probe: Option<&WorkerProbe>,
    mut execute: impl FnMut(T),
) {
    queue.register_worker();
    // SAFETY: this thread is the only one that runs `queue` (one worker per queue), and the
    // guard is dropped before `queue` is.
    let running = unsafe { RunningGuard::enter(queue) };
    let local = running.local();
    let mut patience = Patience::new();
    loop {
        let t0 = probe.and_then(WorkerProbe::start);
        local.drain_remote(defaults::REMOTE_BATCH);
        let mut ran = 0;
        while ran < defaults::LOCAL_BATCH {
            match local.pop() {
                Some(d) => {
                    execute(d);
                    ran += 1;
                }
                None => break,
            }
        }
        if let (Some(p), Some(t0)) = (probe, t0) {
            p.busy(t0, ran, local.len());
        }
        if ran > 0 || queue.has_remote() {
            continue;
        }
        if queue.is_closed() {
            // Closed and empty: but a remote push may race with the close; take it first.
            if !queue.has_remote() {
                break;
            }
            continue;
        }
        let t0 = probe.and_then(WorkerProbe::start);
        if !spin_for_work(queue, spin, &mut patience) {
            super::release_thread_caches();
            queue.sleep();
        }
        if let (Some(p), Some(t0)) = (probe, t0) {
            p.idle(t0);
        }
    }
    drop(running);
    queue.retire();
}

/// Spins until the queue has remote work or is closed, for at most `spin`.
fn spin_for_work<T: QueueItem>(
    queue: &EventQueue<T>,
    spin: Duration,
    patience: &mut Patience,
) -> bool {
    spin_learning(|| queue.has_remote() || queue.is_closed(), spin, patience)
}

/// How many rounds of 64 polls a spinning worker makes before it first yields the CPU,
/// learnt from its own waits: work found in the round right after the first yield doubles
/// it (the answer of a thread it hands work to came just too late, and the yield may have
/// cost a context switch), work found only after several yields halves it, and a wait that
/// ends in parking starts it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Patience(u32);

impl Patience {
    /// Where it starts: yield after the first round.
    const FIRST: u32 = 1;
    /// At most this many rounds before the first yield, so a worker that waits for a thread
    /// needing its CPU (an I/O thread) holds that CPU only briefly.
    const MOST: u32 = 8;

    /// A worker's patience before it has waited.
    pub(crate) const fn new() -> Self {
        Self(Self::FIRST)
    }

    /// Work was found in round `round` (0: before any yield could happen).
    fn found_in(&mut self, round: u32) {
        if round == self.0 {
            self.0 = (self.0 * 2).min(Self::MOST);
        } else if round > self.0 + 1 {
            self.0 = (self.0 / 2).max(Self::FIRST);
        }
    }
}

/// Spins until `ready()` holds, for at most `spin`; returns whether it did. Yields the CPU
/// between rounds of 64 polls after the first (see [`WORKER_SPIN`](crate::defaults::WORKER_SPIN)).
pub(crate) fn spin_until(ready: impl Fn() -> bool, spin: Duration) -> bool {
    spin_learning(ready, spin, &mut Patience::new())
}

/// Spins until `ready()` holds, for at most `spin`; returns whether it did. Yields the CPU
/// between rounds of 64 polls once `patience` rounds are spent, and learns from the wait.
fn spin_learning(ready: impl Fn() -> bool, spin: Duration, patience: &mut Patience) -> bool {
    if spin.is_zero() {
        return ready();
    }
    let deadline = Instant::now() + spin;
    let mut round = 0;
    loop {
        for _ in 0..64 {
            if ready() {
                patience.found_in(round);
                return true;
            }
            std::hint::spin_loop();
        }
        if Instant::now() >= deadline {
            *patience = Patience::new();
            return false;
        }
        round += 1;
        if round >= patience.0 {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_grows_when_work_follows_the_first_yield_and_shrinks_after_long_waits() {
        let mut p = Patience::new();
        p.found_in(0);
        assert_eq!(p, Patience(1));
        for expected in [2, 4, 8, 8] {
            p.found_in(p.0);
            assert_eq!(p, Patience(expected));
        }
        // Found before its first yield, or one yield late: unchanged.
        p.found_in(3);
        p.found_in(9);
        assert_eq!(p, Patience(8));
        p.found_in(10);
        assert_eq!(p, Patience(4));
        // Nothing found within the spin: it starts over.
        let mut q = Patience(8);
        assert!(!spin_learning(|| false, Duration::from_micros(1), &mut q));
        assert_eq!(q, Patience::new());
        assert!(spin_learning(|| true, Duration::from_micros(1), &mut q));
        assert_eq!(q, Patience::new());
    }
}
