//! Loom model of the dedicated worker loop: remote pushes run once, in order, and the worker
//! exits only once its queue is closed and empty.

use super::worker::run_with;
use crate::queue::EventQueue;
use crate::queue::loom_model::{LoomItem as Item, assert_fifo_per_producer, spawn_producers};
use std::time::Duration;

/// At most two preemptions per interleaving: each remote push is several steps of a
/// lock-free block list, and the orders checked here (FIFO per sender, the exit after the
/// close) need one preemption on each side.
fn check(producers: u8, per_producer: u8) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(move || {
        let q = EventQueue::<Item>::new();
        let worker = {
            let q = q.clone();
            loom::thread::spawn(move || {
                let mut got = Vec::new();
                run_with(&q, Duration::ZERO.into(), None, |it| got.push(it));
                got
            })
        };
        let senders = spawn_producers(&q, producers, per_producer);
        for s in senders {
            s.join().unwrap();
        }
        q.close();
        let got = worker.join().unwrap();
        assert_fifo_per_producer(&got, producers, per_producer);
    });
}

/// Every item pushed from another thread runs exactly once, in order, and the worker does
/// not exit before its queue is closed and empty. The close comes from the test thread
/// and wakes the worker, so this model does not catch a push slept through; the stricter
/// models of `queue/loom_model/dedicated_queue.rs` (the worker closes its own queue after the
/// last item, so a lost wake-up deadlocks) check that.
#[test]
fn remote_items_run_once_in_order() {
    check(1, 2);
}

#[test]
fn two_producers_fifo_each() {
    check(2, 1);
}
