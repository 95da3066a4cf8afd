//! A queue run by a dedicated thread: its remote half (the blocks of `remote_blocks`, indexed
//! by the state) against the worker's sleep, and against the worker's retirement, through the
//! real worker loop.

use super::{LoomItem as Item, assert_fifo_per_producer, spawn_producers};
use crate::dispatcher::reuse::worker::run_with;
use crate::queue::{EventQueue, QueueItem};
use loom::sync::{Arc, Mutex};
use std::time::Duration;

/// Checks `f` in every interleaving, with room for the waits on a slot being written (each
/// yields to the model) and for paths longer than loom's default allows.
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(None, f);
}

/// As [`model`], with at most `preemptions` preemptions per interleaving where the models
/// with three threads and many steps would take minutes at CI's bound: each race they check
/// (a reservation against the worker's look before it sleeps, a block's link against its
/// reader) needs one preemption on each side.
fn model_bounded(preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.max_branches = 20_000;
    if preemptions.is_some() {
        model.preemption_bound = preemptions;
    }
    model.check(f);
}

/// `producers` threads push `per_producer` items each; nothing but their pushes wakes the
/// worker, which closes its own queue once it has run them all. A push slept through leaves
/// the worker parked for ever, which loom reports as a deadlock.
fn sleeps_through_no_push(producers: u8, per_producer: u8, preemptions: Option<usize>) {
    model_bounded(preemptions, move || {
        let q = EventQueue::<Item>::new();
        let total = usize::from(producers) * usize::from(per_producer);
        let worker = {
            let q = q.clone();
            loom::thread::spawn(move || {
                let mut ran = Vec::new();
                run_with(&q, Duration::ZERO, None, |it| {
                    ran.push(it);
                    if ran.len() == total {
                        q.close();
                    }
                });
                ran
            })
        };
        for s in spawn_producers(&q, producers, per_producer) {
            s.join().unwrap();
        }
        let ran = worker.join().unwrap();
        assert_fifo_per_producer(&ran, producers, per_producer);
    });
}

/// The worker sleeps between two pushes or not, in every order.
#[test]
fn dedicated_push_vs_sleep() {
    sleeps_through_no_push(1, 2, None);
}

/// Two senders reserving against each other, and the worker's sleep.
#[test]
fn dedicated_push_vs_sleep_two_producers() {
    sleeps_through_no_push(2, 1, Some(2));
}

/// Enough pushes to fill a block (three slots under loom) and link the next while the worker
/// reads and sleeps: the marker, the link, the spare block's reuse.
#[test]
fn dedicated_push_vs_sleep_across_blocks() {
    sleeps_through_no_push(1, 4, Some(2));
}

/// An item that records its rejection (a dead letter in the runtime).
struct Counted {
    item: Item,
    rejected: Arc<Mutex<Vec<Item>>>,
}

impl QueueItem for Counted {
    type Early = ();

    fn reject(self) {
        self.rejected.lock().unwrap().push(self.item);
    }
}

/// A producer pushes `items` while the queue is closed from another thread: the worker runs
/// some, exits and retires the queue. Every item is run (the first ones, in order) or
/// rejected, exactly once, and all of it before the queue is dropped: a push is never stranded
/// in a queue that nobody runs, and never both swept by the worker and rejected by its
/// sender.
fn retire_races_pushes(items: u8) {
    model(move || {
        let q = EventQueue::<Counted>::new();
        let rejected = Arc::new(Mutex::new(Vec::new()));
        let worker = {
            let q = q.clone();
            loom::thread::spawn(move || {
                let mut ran = Vec::new();
                run_with(&q, Duration::ZERO, None, |c: Counted| ran.push(c.item));
                ran
            })
        };
        let producer = {
            let (q, rejected) = (q.clone(), rejected.clone());
            loom::thread::spawn(move || {
                for i in 0..items {
                    q.push_remote(Counted {
                        item: Item(0, i),
                        rejected: rejected.clone(),
                    });
                }
            })
        };
        q.close();
        producer.join().unwrap();
        let ran = worker.join().unwrap();
        let swept: Vec<Item> = rejected.lock().unwrap().clone();
        // The run ones are the first, in order; the others rejected once each (the worker's
        // sweep and a sender's own rejection may count them in either order).
        let mut all: Vec<Item> = ran.iter().chain(&swept).copied().collect();
        assert!(
            all.iter()
                .take(ran.len())
                .enumerate()
                .all(|(k, it)| usize::from(it.1) == k),
            "run {ran:?}, rejected {swept:?}"
        );
        all.sort_by_key(|it| it.1);
        assert_eq!(
            all,
            (0..items).map(|i| Item(0, i)).collect::<Vec<_>>(),
            "run {ran:?}, rejected {swept:?}"
        );
        drop(q);
        assert_eq!(
            rejected.lock().unwrap().len(),
            swept.len(),
            "the queue's drop found a demand that nobody ran or rejected"
        );
    });
}

#[test]
fn dedicated_retire_races_one_push() {
    retire_races_pushes(1);
}

#[test]
fn dedicated_retire_races_two_pushes() {
    retire_races_pushes(2);
}
