//! The worker loop: runs one [`EventQueue`] on the current thread until it is closed.
//!
//! The loop executes from the queue's local half, moving the remote half to the local tail
//! every [`defaults::LOCAL_BATCH`] demands, so demands from other threads are never starved
//! by a busy local flow; when the local half is empty the next remote demand runs straight
//! from its slot before the rest of the batch moves (a hand-off between two threads is a
//! batch of one: it never goes through the ring, and the worker reads the next slot only
//! after the handler's sends are out). It moves no more than that batch at a time: a flood's
//! backlog waits in the remote half's blocks, which go back to senders as they are read,
//! instead of in the local ring, which would grow to the backlog's size and take the page
//! faults of its growth on this thread. A local ring that a burst of sends grew gives the
//! memory back when the worker finds its queue dry.
//! With nothing to do it spins as its [`Spinner`] says (a hand-off between two busy threads
//! costs far less than waking a parked one), then parks until a remote push wakes it.

use super::spin::{Spinner, WorkerSpin};
use crate::defaults;
use crate::queue::{DedicatedReader, EventQueue, QueueArc, QueueItem, RunningGuard};
use crate::stats::WorkerProbe;
use std::sync::Arc;
use std::thread::JoinHandle;

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
    queue: QueueArc,
    spin: WorkerSpin,
    probe: Arc<WorkerProbe>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run(&queue, spin, &probe))
}

/// Runs `queue` on this thread until it is closed and empty.
pub(crate) fn run(queue: &EventQueue, spin: WorkerSpin, probe: &WorkerProbe) {
    run_with(queue, spin, Some(probe), |d| {
        d.run(queue, 1);
    })
}

/// The worker loop over any queue item, executing each with `execute`.
pub(crate) fn run_with<T: QueueItem>(
    queue: &EventQueue<T>,
    spin: WorkerSpin,
    probe: Option<&WorkerProbe>,
    mut execute: impl FnMut(T),
) {
    queue.register_worker();
    // SAFETY: this thread is the only one that runs `queue` (one worker per queue), the one
    // reader of its remote half, and both tokens are dropped before `queue` is.
    let (running, reader) = unsafe { (RunningGuard::enter(queue), DedicatedReader::claim(queue)) };
    let local = running.local();
    let _turns = super::super::turn_end::TurnScope::enter();
    let spinner = Spinner::new(spin);
    loop {
        let t0 = probe.and_then(WorkerProbe::start);
        let mut ran = 0;
        if local.is_empty()
            && let Some(first) = reader.pop_written()
        {
            // Nothing local waits: the first demand runs straight from its slot, and the
            // worker looks for more only once its handler's sends are out (a hand-off between
            // two threads is a batch of one).
            execute(first);
            ran = 1;
        }
        reader.drain_written(&local, defaults::LOCAL_BATCH - ran);
        while ran < defaults::LOCAL_BATCH {
            match local.pop() {
                Some(d) => {
                    execute(d);
                    ran += 1;
                }
                None => break,
            }
        }
        if ran > 0 {
            super::super::turn_end::end_turn();
        }
        if let (Some(p), Some(t0)) = (probe, t0) {
            p.busy(t0, ran, local.len());
        }
        if ran > 0 || reader.has_written() {
            continue;
        }
        // Run dry: what a burst of sends grew the local ring to goes back.
        local.release_spare();
        if queue.is_closed() {
            // Closed and empty: but a remote push may race with the close; take it first.
            if !reader.has_remote() {
                break;
            }
            // A reservation whose demand is not written yet: let its sender run.
            crate::sync::yield_now();
            continue;
        }
        let t0 = probe.and_then(WorkerProbe::start);
        spinner.wait(
            || reader.has_written() || queue.is_closed(),
            || {
                super::release_thread_caches();
                reader.sleep();
            },
        );
        if let (Some(p), Some(t0)) = (probe, t0) {
            p.idle(t0);
        }
    }
    drop(running);
    reader.retire();
    super::release_thread_caches();
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::queue::test_item::Item;

    /// A queue run by a dedicated thread with `n` items pushed from outside, 0 to `n - 1`.
    fn pushed_from_outside(n: u32) -> QueueArc<Item<u32>> {
        let q = EventQueue::<Item<u32>>::new();
        for i in 0..n {
            q.push_remote(Item(i));
        }
        q
    }

    /// The worker takes its remote half by the slots' tags, not the state's index: every
    /// demand pushed from outside runs once, in order, across several blocks (31 slots each)
    /// and their markers, and the worker exits once closed and empty.
    #[test]
    fn a_worker_takes_its_remote_half_in_order_across_blocks() {
        const N: u32 = 200;
        let q = pushed_from_outside(N);
        let mut ran = Vec::new();
        run_with(&q, Duration::ZERO.into(), None, |it| {
            ran.push(it.0);
            if ran.len() == N as usize {
                q.close();
            }
        });
        assert_eq!(ran, (0..N).collect::<Vec<_>>());
    }

    /// A demand run straight from its remote slot, and a batch moved to the local ring, keep
    /// the queue's order: remote demands run in the order they were pushed, what a handler
    /// pushes locally runs after that handler and before the worker moves a further batch,
    /// and everything runs once.
    #[test]
    fn remote_demands_keep_their_order_around_local_pushes() {
        const BATCH: u32 = defaults::LOCAL_BATCH as u32;
        const N: u32 = 3 * BATCH;
        const LOCAL: u32 = 1_000;
        let q = pushed_from_outside(N);
        let mut ran = Vec::new();
        run_with(&q, Duration::ZERO.into(), None, |it| {
            if it.0 < LOCAL && it.0 % BATCH == 0 {
                let local = q.local().expect("a demand runs on its queue's thread");
                local.push(Item(LOCAL + it.0));
            }
            ran.push(it.0);
            if ran.len() == (N + N / BATCH) as usize {
                q.close();
            }
        });
        let remote: Vec<u32> = ran.iter().copied().filter(|&i| i < LOCAL).collect();
        assert_eq!(
            remote,
            (0..N).collect::<Vec<_>>(),
            "remote order in {ran:?}"
        );
        for cause in (0..N).step_by(BATCH as usize) {
            let at = |x: u32| ran.iter().position(|&i| i == x).expect("ran once");
            let (pushed, by) = (at(LOCAL + cause), at(cause));
            assert!(
                pushed > by,
                "{} ran before {cause} pushed it: {ran:?}",
                LOCAL + cause
            );
            // Behind at most what was local or moved when it was pushed: one batch.
            assert!(
                pushed - by <= defaults::LOCAL_BATCH,
                "{} waited {} demands after {cause}: {ran:?}",
                LOCAL + cause,
                pushed - by
            );
        }
    }

    /// A burst of a handler's own sends grows the local ring; once they have run and the
    /// worker finds its queue dry, the ring gives back what it grew beyond its kept capacity.
    #[test]
    fn a_burst_of_local_sends_gives_its_memory_back_once_run() {
        const BURST: u32 = 20_000;
        let mut q = pushed_from_outside(1);
        let mut ran = 0;
        run_with(&q, Duration::ZERO.into(), None, |it| {
            if it.0 == 0 {
                let local = q.local().expect("a demand runs on its queue's thread");
                for i in 1..=BURST {
                    local.push(Item(i));
                }
            }
            assert_eq!(it.0, ran, "the burst runs in order");
            ran += 1;
            if ran == BURST + 1 {
                q.close();
            }
        });
        assert_eq!(ran, BURST + 1);
        let q = QueueArc::get_mut(&mut q).expect("the worker has returned");
        assert_eq!(
            q.local_capacity_for_test(),
            crate::queue::KEPT_CAPACITY,
            "the local ring kept its burst's slots"
        );
    }

    /// A backlog in the remote half stays there, in its blocks, until the worker can run it:
    /// the worker moves no more than a batch to its local half at a time, so the local ring
    /// does not grow to the size of a flood (nor pays for its growth).
    #[test]
    fn a_flood_stays_in_the_remote_half_until_its_turn() {
        const N: u32 = 10_000;
        let mut q = pushed_from_outside(N);
        let mut ran = 0;
        run_with(&q, Duration::ZERO.into(), None, |it| {
            assert_eq!(it.0, ran);
            ran += 1;
            if ran == N {
                q.close();
            }
        });
        assert_eq!(ran, N);
        let q = QueueArc::get_mut(&mut q).expect("the worker has returned");
        assert!(
            q.local_capacity_for_test() <= defaults::LOCAL_BATCH,
            "the local ring grew to {} slots for a batch of {}",
            q.local_capacity_for_test(),
            defaults::LOCAL_BATCH
        );
    }
}
