//! Loom model of the `prio_one_thread` loop: pushes from outside to two priorities run once,
//! in order per queue, with no wake-up lost.

use super::worker::{PRIORITIES, PrioMode, run_prio};
use crate::queue::loom_model::{LoomItem as Item, assert_fifo_per_producer};
use crate::queue::wakeup::SharedWakeup;
use crate::queue::{EventQueue, QueueArc};
use loom::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::Duration;

/// A producer thread pushes `per_queue` items to each of `n_queues` queues in turn, from
/// outside; the worker runs them by `mode`. Every item runs once, in order per queue, and
/// the worker neither sleeps through a push (whose flag may come after the worker's look:
/// the items must all run before the queues are closed, whose close would wake it) nor
/// exits before the queues are closed and empty. One producer for both queues: the protocol
/// is per push (push, then flag and notify unless the flag is up), so a second producer adds
/// checking time and few interleavings. The model fails when `notify` only sets the flag.
///
/// At most two preemptions per interleaving: the queues' remote halves are lock-free block
/// lists, so each push is several steps, and a lost wake-up needs one preemption on each side
/// (the push's flag against the worker's look before it sleeps).
fn check(mode: PrioMode, n_queues: u8, per_queue: u8) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(move || {
        let group = Arc::new(SharedWakeup::new());
        let queues: Arc<Vec<QueueArc<Item>>> = Arc::new(
            (0..n_queues)
                .map(|p| EventQueue::in_group(group.clone(), 1 << p))
                .collect(),
        );
        let ran = Arc::new(AtomicUsize::new(0));
        let worker = {
            let (queues, group, ran) = (queues.clone(), group.clone(), ran.clone());
            loom::thread::spawn(move || {
                let mut got = Vec::new();
                run_prio(
                    &queues[..],
                    &group,
                    mode,
                    Duration::ZERO.into(),
                    None,
                    |_, it, _| {
                        got.push(it);
                        ran.fetch_add(1, Release);
                        1
                    },
                );
                got
            })
        };
        let producer = {
            let queues = queues.clone();
            loom::thread::spawn(move || {
                for i in 0..per_queue {
                    for (p, q) in queues.iter().enumerate() {
                        q.push_remote(Item(p as u8, i));
                    }
                }
            })
        };
        producer.join().unwrap();
        // Closing wakes the worker: a push it slept through would go unseen until then.
        while ran.load(Acquire) < usize::from(n_queues) * usize::from(per_queue) {
            loom::thread::yield_now();
        }
        for q in queues.iter() {
            q.close();
        }
        let got = worker.join().unwrap();
        // Each queue's items in the order pushed (the queue index stands for the producer).
        assert_fifo_per_producer(&got, n_queues, per_queue);
    });
}

#[test]
fn strict_runs_every_push_once_without_lost_wakeups() {
    check(PrioMode::Strict, 2, 1);
}

/// Two pushes to one queue: the second may find the queue's flag still up and skip both the
/// flag and the wake-up, racing with the worker lowering that flag and reading the queue's
/// index again. (Under loom every look at a dedicated queue's state is a read-modify-write,
/// `load_latest`, so the model cannot tell that read from a plain one: its order rests on
/// the argument at `SharedWakeup`.)
#[test]
fn strict_a_push_that_finds_its_flag_up_is_run() {
    check(PrioMode::Strict, 1, 2);
}

#[test]
fn quoted_runs_every_push_once_without_lost_wakeups() {
    check(PrioMode::Quoted([1; PRIORITIES]), 2, 1);
}
