//! What the unit tests of the queues and their workers share: [`Item`], a queue item;
//! [`RunQueue`], a run queue that keeps what it is asked to schedule; and the turns they run.

use super::{EventQueue, QueueItem, RunningGuard, Schedule, Scheduled, TurnOutcome};
use std::fmt::Debug;
use std::sync::Mutex;

/// A queue item that carries `T` (a sequence number, say) and fails its test if a queue
/// drops it without executing it.
#[derive(Debug, PartialEq)]
pub(crate) struct Item<T>(pub(crate) T);

impl<T: Debug + Send + 'static> QueueItem for Item<T> {
    type Early = ();

    fn reject(self) {
        panic!("{self:?} was never executed");
    }
}

/// Keeps what it is asked to schedule.
pub(crate) struct RunQueue<T: QueueItem>(Mutex<Vec<Scheduled<T>>>);

impl<T: QueueItem> Default for RunQueue<T> {
    fn default() -> Self {
        Self(Mutex::new(Vec::new()))
    }
}

impl<T: QueueItem> Schedule<T> for RunQueue<T> {
    fn schedule(&self, q: Scheduled<T>) {
        self.0.lock().unwrap().push(q);
    }
}

impl<T: QueueItem> RunQueue<T> {
    pub(crate) fn take(&self) -> Scheduled<T> {
        self.0
            .lock()
            .unwrap()
            .pop()
            .expect("the push scheduled the queue")
    }
}

/// Drains and runs everything a scheduled queue holds, in one turn, checking the order;
/// returns how the turn ended.
pub(crate) fn run_all(s: &Scheduled<Item<u32>>, want: std::ops::Range<u32>) -> TurnOutcome {
    // SAFETY: the caller took `s` from its run queue and is the queue's one runner.
    let running = unsafe { RunningGuard::enter(&**s) };
    let local = running.local();
    let mut ran = Vec::new();
    ran.extend(local.take_first().map(|it| it.0));
    while local.drain_remote(usize::MAX) > 0 {
        while let Some(it) = local.pop() {
            ran.push(it.0);
        }
    }
    assert_eq!(ran, want.collect::<Vec<_>>(), "every item, in order");
    running.end_turn(true)
}

/// Leaves `q` idle holding the block that a burst of two items from `from` linked, as a
/// turn of a swept item type leaves it.
pub(crate) fn keep_a_burst(rq: &RunQueue<Item<u32>>, q: &EventQueue<Item<u32>>, from: u32) {
    q.push_remote(Item(from));
    q.push_remote(Item(from + 1));
    let s = rq.take();
    // SAFETY: this test took the queue from its run queue and is its one runner.
    let running = unsafe { RunningGuard::enter(&*s) };
    let local = running.local();
    assert_eq!(local.take_first(), Some(Item(from)));
    local.drain_remote(4);
    assert_eq!(local.pop(), Some(Item(from + 1)));
    drop(running);
    // SAFETY: the test still holds the scheduled queue and read it up to its index.
    unsafe { q.force_idle_for_test() };
    s.went_idle(false);
    assert!(q.run.remote_head.keeps_a_block(), "idle, holding its block");
}
