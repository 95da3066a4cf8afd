//! The pool hand-off: a queue scheduled by the sender that finds it idle, run by at most
//! one worker at a time, rescheduled by the worker that ends a turn with work left.

use super::{LoomItem as Item, assert_fifo_per_producer, spawn_producers};
use crate::queue::{EventQueue, QueueArc, RunningGuard, Schedule, Scheduled, TurnOutcome};
use loom::sync::Mutex;
use loom::sync::atomic::AtomicBool;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

/// A run queue of scheduled queues.
#[derive(Default)]
struct RunQueue(Mutex<VecDeque<Scheduled<Item>>>);
impl Schedule<Item> for RunQueue {
    fn schedule(&self, q: Scheduled<Item>) {
        self.0.lock().unwrap().push_back(q);
    }
}

/// The finish step's demand (pushed from outside, as deregistration does) and the demand
/// it leaves behind the ones it moved (the one that runs `finish`).
const FINISH: Item = Item(9, 0);
const FINISHED: Item = Item(9, 1);
/// How the lending model's producer marks an item made borrowing or owning.
const BORROWING: u8 = 0;
const OWNING: u8 = 1;

/// One worker's pass: runs scheduled queues until the run queue is empty.
fn work(rq: &RunQueue, log: &Mutex<Vec<Item>>, in_turn: &AtomicBool) {
    loop {
        let next = rq.0.lock().unwrap().pop_front();
        let Some(q) = next else { return };
        assert!(
            !in_turn.swap(true, SeqCst),
            "two workers ran one queue at once"
        );
        // SAFETY: this worker took the queue from the run queue.
        let running = unsafe { RunningGuard::enter(&*q) };
        let local = running.local();
        // One at a time: the claiming sender's item first, else the local half after a drain
        // of one (a turn that leaves some ends scheduled).
        let next = local.take_first().or_else(|| {
            local.drain_remote(1);
            local.pop()
        });
        match next {
            Some(it) => {
                log.lock().unwrap().push(it);
                if it == FINISH {
                    // As the finish step: close, then what runs `finish` behind.
                    local.close_lending();
                    local.push(FINISHED);
                }
            }
            // A sender between its reservation and its write: a real worker goes on to
            // other queues; the model lets the other threads run.
            None => loom::thread::yield_now(),
        }
        in_turn.store(false, SeqCst);
        match running.end_turn(true) {
            TurnOutcome::Again => rq.schedule(q),
            TurnOutcome::Idle { release } => q.went_idle(release),
            TurnOutcome::HandedOver => unreachable!("a plain turn hands nothing over"),
        }
    }
}

/// A pooled queue (one demand per turn), its run queue, and the log of what ran.
struct Pooled {
    rq: Arc<RunQueue>,
    q: QueueArc<Item>,
    log: Arc<Mutex<Vec<Item>>>,
    in_turn: Arc<AtomicBool>,
}

impl Pooled {
    fn new() -> Self {
        let rq = Arc::new(RunQueue::default());
        Self {
            q: EventQueue::<Item>::pooled(rq.clone(), 1),
            rq,
            log: Arc::new(Mutex::new(Vec::new())),
            in_turn: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A pooled queue that its pool holds (see `Scheduled`).
    fn bound() -> Self {
        let pooled = Self::new();
        pooled.q.hold_for_pool();
        pooled
    }

    /// A worker thread that runs turns until it finds nothing scheduled.
    fn spawn_worker(&self) -> loom::thread::JoinHandle<()> {
        let (rq, log, in_turn) = (self.rq.clone(), self.log.clone(), self.in_turn.clone());
        loom::thread::spawn(move || work(&rq, &log, &in_turn))
    }

    /// A last pass once every thread is joined: whatever was pushed must have left the
    /// queue scheduled (a lost schedule would strand items, caught by the caller's count).
    fn last_pass(&self) -> Vec<Item> {
        work(&self.rq, &self.log, &self.in_turn);
        self.log.lock().unwrap().clone()
    }
}

/// Checks `f` in every interleaving, with room for spins: a sender waiting on a marker or
/// a runner on a slot being written yields to the model, and paths are longer than
/// loom's default allows.
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(None, f);
}

/// As [`model`], with at most `preemptions` preemptions per interleaving, for a model of four
/// threads that would take minutes at CI's bound: each race it checks (a sender at a marker
/// against the give-back that moves it, a first link against another sender's) needs one
/// preemption on each side.
fn model_bounded(preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.max_branches = 20_000;
    if preemptions.is_some() {
        model.preemption_bound = preemptions;
    }
    model.check(f);
}

fn check(producers: u8, per_producer: u8, workers: usize) {
    model(move || {
        let pooled = Pooled::new();
        let q = &pooled.q;
        let senders = spawn_producers(q, producers, per_producer);
        // Workers race with the producers; each stops when it finds nothing scheduled.
        let worker_threads: Vec<_> = (0..workers).map(|_| pooled.spawn_worker()).collect();
        for t in senders.into_iter().chain(worker_threads) {
            t.join().unwrap();
        }
        let log = pooled.last_pass();
        assert_fifo_per_producer(&log, producers, per_producer);
    });
}

/// Every item runs exactly once, in order, with one turn at a time, and the queue is
/// never left idle with work in it (the workers would spin forever: loom reports it).
#[test]
fn pooled_queue_one_producer_two_workers() {
    check(1, 2, 2);
}

#[test]
fn pooled_queue_two_producers_one_worker() {
    check(2, 1, 1);
}

#[test]
fn pooled_queue_two_producers_two_items_one_worker() {
    check(2, 2, 1);
}

/// Enough remote pushes to fill a block (two slots under loom) and link the next, while
/// the worker reads: the marker, the link, the spare block's reuse.
#[test]
fn pooled_queue_crosses_remote_blocks() {
    check(1, 5, 1);
}

/// A worker's sweep claims the queue it saw idle (as a sender would, with no demand) and
/// gives back its blocks while senders push and a worker runs it: senders may be reading the
/// tail block for their next reservation, linking a first block again, or waiting at the
/// marker of the give-back. Every item runs once and in order whoever holds the queue, a
/// push during the sweep's empty turn leaves the queue scheduled (loom reports a lost
/// schedule as items never run), and a last sweep, once everyone is done, leaves the idle
/// queue with no block. `bound`: the queue's pool holds it (a bound queue's state has no
/// sticky flag; a new one's has `UNBOUND`, and its sweep's hold takes a count of its own).
fn sweep_races(producers: u8, per_producer: u8, bound: bool) {
    // Four threads with two senders: two preemptions.
    let preemptions = (producers > 1).then_some(2);
    model_bounded(preemptions, move || {
        let pooled = if bound {
            Pooled::bound()
        } else {
            Pooled::new()
        };
        let q = &pooled.q;
        let senders = spawn_producers(q, producers, per_producer);
        let sweeper = {
            let q = q.clone();
            loom::thread::spawn(move || {
                if let Some(idle) = q.idle_state() {
                    EventQueue::give_back_idle(&q, idle);
                }
            })
        };
        let worker = pooled.spawn_worker();
        for t in senders.into_iter().chain([sweeper, worker]) {
            t.join().unwrap();
        }
        let log = pooled.last_pass();
        assert_fifo_per_producer(&log, producers, per_producer);
        let idle = q.idle_state().expect("idle once every item ran");
        assert!(EventQueue::give_back_idle(q, idle), "nobody pushes now");
        assert!(
            q.run.remote_head.keeps_no_block(),
            "a swept queue keeps no block"
        );
    });
}

#[test]
fn a_sweep_races_with_one_push() {
    sweep_races(1, 1, true);
}

/// Enough pushes to link a block (two slots under loom) while the sweep races.
#[test]
fn a_sweep_races_with_three_pushes() {
    sweep_races(1, 3, true);
}

#[test]
fn a_sweep_of_a_new_queue_races_with_three_pushes() {
    sweep_races(1, 3, false);
}

/// Two senders: one may link the first block, or take one for a link, while the other
/// waits at the marker of the sweep's give-back.
#[test]
fn a_sweep_races_with_two_senders() {
    sweep_races(2, 1, true);
}

/// The finish step closes lending while a sender pushes: every demand made borrowing
/// (reserved before the close) runs before the demand that runs `finish`, every one run
/// before the close was made borrowing, and nothing is lost. Loom reports a runner that
/// waits for ever on a reserved slot, or a lost schedule.
fn lending_closes(items: u8) {
    model(move || {
        let pooled = Pooled::new();
        let q = &pooled.q;
        let producer = {
            let q = q.clone();
            loom::thread::spawn(move || {
                for i in 0..items {
                    q.push_remote_with(|borrow| Item(if borrow { BORROWING } else { OWNING }, i));
                }
            })
        };
        let finisher = {
            let q = q.clone();
            loom::thread::spawn(move || q.push_remote(FINISH))
        };
        let worker = pooled.spawn_worker();
        for t in [producer, finisher, worker] {
            t.join().unwrap();
        }
        let log = pooled.last_pass();
        assert_eq!(log.len(), usize::from(items) + 2, "{log:?}");
        let at = |it: Item| log.iter().position(|x| *x == it).unwrap();
        let (close, finished) = (at(FINISH), at(FINISHED));
        for (k, it) in log.iter().enumerate() {
            if it.0 == BORROWING {
                assert!(k < finished, "a borrowing demand ran after finish: {log:?}");
            }
            if k < close {
                assert_eq!(it.0, BORROWING, "reserved before the close: {log:?}");
            }
        }
    });
}

#[test]
fn close_lending_with_one_push() {
    lending_closes(1);
}

#[test]
fn close_lending_with_two_pushes() {
    lending_closes(2);
}

/// The pool's count of a bound queue goes once, whenever the unbind comes: at once if the
/// queue is idle, else with the hold of the turn that leaves it idle; no hold borrows it
/// afterwards (the queue asserts both under loom), and every item runs.
fn pool_count_goes_once(items: u8, workers: usize) {
    model(move || {
        let pooled = Pooled::bound();
        let q = &pooled.q;
        let senders = spawn_producers(q, 1, items);
        let unbinder = {
            let q = q.clone();
            loom::thread::spawn(move || q.release_pool_hold())
        };
        let worker_threads: Vec<_> = (0..workers).map(|_| pooled.spawn_worker()).collect();
        for t in senders.into_iter().chain([unbinder]).chain(worker_threads) {
            t.join().unwrap();
        }
        let log = pooled.last_pass();
        assert_fifo_per_producer(&log, 1, items);
        assert!(q.pool_count_gone.load(SeqCst), "the pool's count went");
        assert_eq!(QueueArc::strong_count(q), 1, "nothing else holds the queue");
    });
}

#[test]
fn pool_count_goes_once_with_one_push() {
    pool_count_goes_once(1, 1);
}

#[test]
fn pool_count_goes_once_with_two_pushes_and_two_workers() {
    pool_count_goes_once(2, 2);
}
