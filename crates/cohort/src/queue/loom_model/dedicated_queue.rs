//! A queue run by a dedicated thread: its remote half (the blocks of `remote_blocks`, indexed
//! by the state) against the worker's sleep, and against the worker's retirement, through the
//! real worker loop.

use super::{LoomItem as Item, assert_fifo_per_producer, spawn_producers};
use crate::dispatcher::reuse::worker::run_with;
use crate::queue::{EventQueue, QueueItem, RunningGuard};
use loom::sync::atomic::AtomicU8;
use loom::sync::{Arc, Mutex};
use std::sync::atomic::Ordering::{Acquire, Release};
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
                run_with(&q, Duration::ZERO.into(), None, |it| {
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
                run_with(&q, Duration::ZERO.into(), None, |c: Counted| {
                    ran.push(c.item)
                });
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

/// The finish step's demand (pushed from outside, as deregistration does) and the demand it
/// leaves behind the ones it moved (the one that runs `finish`).
const FINISH: Item = Item(9, 0);
const FINISHED: Item = Item(9, 1);
/// How the lending model's producer marks an item made borrowing or owning.
const BORROWING: u8 = 0;
const OWNING: u8 = 1;
/// The agent's status as the lending model's producer reads it.
const AGENT_ACTIVE: u8 = 1;
const AGENT_FINISHING: u8 = 2;

/// An agent of a dedicated queue begins to finish while a sender pushes to it: the sender
/// decides after its reservation whether its demand borrows the agent, by the agent's
/// status; the finish step reads the index with a read-modify-write of the state and moves
/// what was reserved before it ahead of `finish`. Every borrowing demand runs before
/// `finish`, every item runs once, and loom reports a worker that waits for ever on a
/// reserved slot. `by_worker`: deregistration runs on the queue's own worker (a handler of
/// the queue ended the cooperation), which stores the status and pushes the finish step
/// locally: the case the finish step's read-modify-write is for (a deregistration from
/// another thread pushes the finish step through the same state word as the sender, which
/// orders the two already).
fn dedicated_lending(items: u8, by_worker: bool) {
    // Two preemptions: the race needs one on each side (the sender between its reservation
    // and its look at the status, the finish step between the status's store and its read
    // of the index).
    model_bounded(Some(2), move || {
        let q = EventQueue::<Item>::new();
        let status = Arc::new(AtomicU8::new(AGENT_ACTIVE));
        let producer = {
            let (q, status) = (q.clone(), status.clone());
            loom::thread::spawn(move || {
                for i in 0..items {
                    q.push_remote_with(|lend| {
                        let borrows = lend && status.load(Acquire) == AGENT_ACTIVE;
                        Item(if borrows { BORROWING } else { OWNING }, i)
                    });
                }
            })
        };
        // As deregistration: the status first, then the finish step's demand.
        let finish = {
            let status = status.clone();
            move |push: &dyn Fn(Item)| {
                status.store(AGENT_FINISHING, Release);
                push(FINISH);
            }
        };
        let finisher = (!by_worker).then(|| {
            let (q, finish) = (q.clone(), finish.clone());
            loom::thread::spawn(move || finish(&|it| q.push_remote(it)))
        });
        // The worker's own loop, one demand at a time: its sleep and wake-ups are the models
        // above; here only the finish step's order matters.
        let worker = {
            let q = q.clone();
            loom::thread::spawn(move || {
                let total = usize::from(items) + 2;
                let mut ran = Vec::new();
                // SAFETY: this thread is the queue's only runner, and the guard is dropped
                // before the queue.
                let running = unsafe { RunningGuard::enter(&*q) };
                let local = running.local();
                if by_worker {
                    finish(&|it| local.push(it));
                }
                while ran.len() < total {
                    local.drain_remote(1);
                    match local.pop() {
                        Some(it) => {
                            ran.push(it);
                            if it == FINISH {
                                local.close_lending();
                                local.push(FINISHED);
                            }
                        }
                        None => loom::thread::yield_now(),
                    }
                }
                ran
            })
        };
        producer.join().unwrap();
        if let Some(f) = finisher {
            f.join().unwrap();
        }
        let ran = worker.join().unwrap();
        assert_eq!(ran.len(), usize::from(items) + 2, "{ran:?}");
        let finished = ran.iter().position(|x| *x == FINISHED).unwrap();
        for (k, it) in ran.iter().enumerate() {
            if it.0 == BORROWING {
                assert!(k < finished, "a borrowing demand ran after finish: {ran:?}");
            }
        }
        let seq: Vec<u8> = ran.iter().filter(|it| it.0 != 9).map(|it| it.1).collect();
        assert_eq!(seq, (0..items).collect::<Vec<_>>(), "in order: {ran:?}");
    });
}

#[test]
fn dedicated_lending_finished_from_another_thread() {
    dedicated_lending(1, false);
}

#[test]
fn dedicated_lending_finished_by_its_worker() {
    dedicated_lending(2, true);
}
