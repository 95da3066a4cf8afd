//! The queues a pool worker left idle holding memory for their demands (a remote block,
//! local slots), which it gives back once they have stayed idle for
//! [`GIVE_BACK_AFTER`](crate::defaults::GIVE_BACK_AFTER) while it is out of work (see
//! [`EventQueue::give_back_idle`]).
//!
//! A queue is listed once, by the turn that leaves it idle holding memory while it is on no
//! list (its `listed` flag), so a queue that goes idle thousands of times a second costs one
//! entry, not one give-back per idle. A worker sweeps its list only once it has been out of
//! work for a while (as it parks), and gives back only what a queue kept through a whole
//! period with no push: a queue that wakes again soon keeps its memory, an agent that took a
//! burst and fell quiet gives it back.

use super::{EventQueue, QueueArc, QueueItem};
use crate::agent::demand::Demand;
use crate::defaults::GIVE_BACK_AFTER;
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// The list's length at which it first drops the queues that only it still holds.
const FIRST_COMPACTION: usize = 32;

/// A state no idle queue has (it carries `SCHEDULED`): a listed queue not seen idle yet.
const NOT_SEEN: u64 = u64::MAX;

/// A listed queue, and the idle state a sweep last saw it in, since when.
struct Entry<T: QueueItem> {
    queue: QueueArc<T>,
    seen: u64,
    since: Option<Instant>,
}

/// One worker's listed queues, and the length at which it next drops the dead ones.
pub(crate) struct SweepList<T: QueueItem> {
    entries: Vec<Entry<T>>,
    compact_at: usize,
}

impl<T: QueueItem> SweepList<T> {
    pub(crate) const fn new() -> Self {
        Self {
            entries: Vec::new(),
            compact_at: FIRST_COMPACTION,
        }
    }

    /// Lists `q`. A listed queue whose cooperation is gone would live on in the list until a
    /// sweep (a tree of agents released as they answer, on workers that never run out of
    /// work, would keep every queue): once the list reaches twice what its last compaction
    /// left, the queues that nothing else holds (no agent, no pool, no run queue: nothing can
    /// send to them) are dropped.
    pub(crate) fn push(&mut self, q: QueueArc<T>) {
        self.entries.push(Entry {
            queue: q,
            seen: NOT_SEEN,
            since: None,
        });
        if self.entries.len() >= self.compact_at {
            self.entries
                .retain(|e| QueueArc::strong_count(&e.queue) > 1);
            self.compact_at = (2 * self.entries.len()).max(FIRST_COMPACTION);
        }
    }

    /// Takes the entries out, for a sweep that may list queues meanwhile.
    fn take(&mut self) -> Self {
        std::mem::replace(self, Self::new())
    }

    /// Puts a sweep's entries back, with any listed meanwhile.
    fn put_back(&mut self, mut swept: Self) {
        swept.entries.append(&mut self.entries);
        swept.compact_at = (2 * swept.entries.len()).max(FIRST_COMPACTION);
        *self = swept;
    }

    /// Drops the queues only the list still holds, gives back the memory of every queue idle
    /// in the same state (no push) for at least `GIVE_BACK_AFTER` by `now`, and notes the
    /// state of the others. Returns how long until a queue still listed may be given back,
    /// or `None` for an empty list.
    pub(crate) fn sweep(&mut self, now: Instant) -> Option<Duration> {
        let mut next = GIVE_BACK_AFTER;
        self.entries.retain_mut(|e| {
            if QueueArc::strong_count(&e.queue) == 1 {
                return false;
            }
            let Some(idle) = e.queue.idle_state() else {
                // In a turn, on this worker or another: looked at again at the next sweep.
                e.seen = NOT_SEEN;
                return true;
            };
            match e.since {
                Some(since) if e.seen == idle => {
                    let waited = now.saturating_duration_since(since);
                    if waited >= GIVE_BACK_AFTER {
                        // Kept when a push claimed the queue meanwhile.
                        return !EventQueue::give_back_idle(&e.queue, idle);
                    }
                    next = next.min(GIVE_BACK_AFTER - waited);
                }
                _ => {
                    e.seen = idle;
                    e.since = Some(now);
                }
            }
            true
        });
        if self.entries.len() < self.entries.capacity() / 4 {
            // The list of a burst's queues, given back with them.
            self.entries.shrink_to(2 * self.entries.len());
        }
        (!self.entries.is_empty()).then_some(next)
    }

    /// How many queues the list holds.
    #[cfg(all(test, not(cohort_loom)))]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

thread_local! {
    static LISTED: RefCell<SweepList<Demand>> = const { RefCell::new(SweepList::new()) };
}

/// Lists `q` for this thread's sweeps. A thread whose list is gone (it is exiting) or in use
/// drops `q` instead, rather than panic: the queue keeps its memory until it is dropped, as
/// an unlisted one does.
pub(crate) fn list(q: QueueArc<Demand>) {
    let mut q = Some(q);
    let _gone = LISTED.try_with(|l| {
        if let (Ok(mut l), Some(q)) = (l.try_borrow_mut(), q.take()) {
            l.push(q);
        }
    });
}

/// This thread's sweep (see [`SweepList::sweep`]), as its worker is out of work.
pub(crate) fn sweep() -> Option<Duration> {
    let mut swept = LISTED.with(|l| l.borrow_mut().take());
    if swept.entries.is_empty() {
        return None;
    }
    let next = swept.sweep(Instant::now());
    LISTED.with(|l| l.borrow_mut().put_back(swept));
    next
}

/// Forgets every listed queue (a worker that exits: its queues keep what they hold until
/// they are dropped).
pub(crate) fn forget() {
    drop(LISTED.with(|l| l.borrow_mut().take()));
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::SweepList;
    use crate::defaults::GIVE_BACK_AFTER as AFTER;
    use crate::queue::EventQueue;
    use crate::queue::TurnOutcome;
    use crate::queue::test_item::{Item, RunQueue, keep_a_burst, run_all};
    use std::sync::Arc;
    use std::time::Instant;

    /// A sweep list gives back a queue's memory only once the queue has stayed idle with no
    /// push for `GIVE_BACK_AFTER`: a push meanwhile starts the period again; a queue that
    /// only the list still holds leaves it; the queue runs in order after the give-back.
    #[test]
    fn a_sweep_list_gives_back_only_what_stayed_idle_a_whole_period() {
        let rq = Arc::new(RunQueue::default());
        let q = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        keep_a_burst(&rq, &q, 0);
        let mut list = SweepList::new();
        list.push(q.clone());
        let t0 = Instant::now();
        assert_eq!(list.sweep(t0), Some(AFTER), "first seen");
        assert_eq!(list.sweep(t0 + AFTER / 2), Some(AFTER - AFTER / 2));
        keep_a_burst(&rq, &q, 2);
        assert_eq!(
            list.sweep(t0 + AFTER),
            Some(AFTER),
            "pushed to: the period restarts"
        );
        assert!(q.run.remote_head.keeps_a_block());
        q.push_remote(Item(4));
        assert_eq!(list.sweep(t0 + 3 * AFTER), Some(AFTER), "scheduled: kept");
        let s = rq.take();
        assert_eq!(run_all(&s, 4..5), TurnOutcome::Idle { release: false });
        s.went_idle(false);
        keep_a_burst(&rq, &q, 5);
        assert_eq!(list.sweep(t0 + 4 * AFTER), Some(AFTER));
        assert_eq!(list.sweep(t0 + 5 * AFTER), None, "idle a whole period");
        assert!(q.run.remote_head.keeps_no_block(), "given back");
        assert_eq!(list.len(), 0);
        q.push_remote(Item(7));
        q.push_remote(Item(8));
        let s = rq.take();
        assert_eq!(run_all(&s, 7..9), TurnOutcome::Idle { release: false });
        s.went_idle(false);
        // A queue nothing else holds: nothing can send to it.
        let gone = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        keep_a_burst(&rq, &gone, 0);
        list.push(gone);
        assert_eq!(list.sweep(t0), None, "dropped");
        assert_eq!(list.len(), 0);
    }
}
