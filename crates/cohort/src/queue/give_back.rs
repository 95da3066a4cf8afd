//! How an idle pool queue gives back the memory it took for its demands (its local slots,
//! its remote blocks): the worker sweep's claim of a queue it saw idle
//! ([`EventQueue::give_back_idle`]), and the end of a turn that goes idle through its lap's
//! marker ([`EventQueue::idle_giving_back`]). docs/internals.md, "An idle pool queue gives
//! its memory back", draws the protocol; the loom models `a_sweep_races_*` check it.

use super::event_queue::{EventQueue, Notifier, QueueItem};
use super::pool_state::{ONE_PUSH, RELEASE_AT_IDLE, SCHEDULED, STICKY, TurnOutcome, UNBOUND};
use super::queue_arc::QueueArc;
use super::running::RunningGuard;
use super::scheduled::Scheduled;
use std::sync::atomic::Ordering;

impl<T: QueueItem> EventQueue<T> {
    /// Leaves a scheduled pool queue idle at its head's index, keeping what it holds.
    ///
    /// # Safety
    /// The caller holds the scheduled queue and has read its remote half up to the state's
    /// index.
    #[cfg(all(test, not(cohort_loom)))]
    pub(super) unsafe fn force_idle_for_test(&self) {
        // SAFETY: caller.
        let head = unsafe { self.run.remote_head.index() };
        let busy = (head * ONE_PUSH) | SCHEDULED;
        let s = self.senders.state.load(Ordering::Acquire);
        assert_eq!(s & !STICKY, busy, "read up to the index");
        self.senders.state.store(s & !SCHEDULED, Ordering::Release);
    }

    /// The queue's state when it is idle on a pool (`None` when scheduled, or not a pool
    /// queue): a sweep compares two of them to learn that no sender pushed in between.
    pub(crate) fn idle_state(&self) -> Option<u64> {
        let Notifier::Pool { .. } = &self.notifier else {
            return None;
        };
        let s = self.senders.state.load(Ordering::Acquire);
        (s & SCHEDULED == 0).then_some(s)
    }

    /// A worker's sweep gives back the memory of a queue it listed (see
    /// [`IdleMemory::List`](super::IdleMemory::List)) and found idle in state `idle` (see
    /// [`idle_state`](Self::idle_state)): it claims the queue from that state, as a sender
    /// would but with no demand, and ends that empty turn giving back the queue's slots and
    /// blocks. Returns whether it did; `false` when a sender claimed or pushed since `idle`
    /// was read (the queue stays listed). A push during the give-back leaves the queue
    /// scheduled on its pool, its memory given back all the same.
    pub(crate) fn give_back_idle(q: &QueueArc<T>, idle: u64) -> bool {
        let Notifier::Pool { scheduler } = &q.notifier else {
            return false;
        };
        // AcqRel as every write of the state: the last runner's release of the idle state.
        if idle & SCHEDULED != 0
            || q.senders
                .state
                .compare_exchange(idle, idle | SCHEDULED, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        // SAFETY: the exchange set SCHEDULED on a state with `UNBOUND` as read.
        let hold = unsafe { Scheduled::claimed(q, idle & UNBOUND != 0) };
        // SAFETY: this thread claimed the idle queue, which is in no run queue: its one
        // runner until the turn below ends.
        let running = unsafe { RunningGuard::enter(q) };
        q.listed.set(false);
        match running.end_turn_with(false, true) {
            TurnOutcome::Idle { release } => hold.went_idle(release),
            // An empty turn hands nothing over: only a push leaves it scheduled.
            TurnOutcome::Again | TurnOutcome::HandedOver => scheduler.schedule(hold),
        }
        true
    }

    /// The end of a turn that leaves its queue idle and gives back what the queue held for
    /// its demands, so that a queue that once took a burst does not keep it while it waits:
    /// its local slots, and its remote half's blocks (a kilobyte and a half, ten times an
    /// idle agent), for the next push that finds it scheduled to link one from the pool.
    ///
    /// The caller has moved the index onto its lap's marker (the queue still scheduled): a
    /// sender reads the tail block before it reserves, and every sender now waits there, as
    /// for a link, so no reservation is outstanding or can be made; the blocks go; the index
    /// moves to the next lap's first index as the queue goes idle. A sender between a first
    /// block's link into the head and into the tail leaves the two apart: then the blocks
    /// stay, and the queue goes idle at its index.
    ///
    /// # Safety
    /// The caller holds this scheduled queue (its turn), has read the remote half up to
    /// index `head`, and moved the state from that index onto the lap's marker: to
    /// `parked`.
    #[inline(never)]
    pub(super) unsafe fn idle_giving_back(&self, head: u64, parked: u64) -> TurnOutcome {
        // SAFETY: the caller's turn holds the queue: the local half is its alone, and empty.
        unsafe { (*self.run.local.get()).release_all() };
        let (tail, run) = (&self.senders.remote_tail, &self.run.remote_head);
        run.release_spare();
        // The head's block is the runner's to retire only when the tail's is the same: a
        // first link sets the head's, then the tail's, and the runner must not free a block
        // that a sender is about to publish as the tail.
        let block = run.current();
        let index = if !block.is_null() && tail.current() == block {
            tail.unlink();
            // SAFETY: this thread runs the queue, has read every reserved index, and holds
            // the index on the head's marker; the tail's block was the head's, now unlinked.
            unsafe { run.retire(block) }
        } else {
            head
        };
        // While the index rests on the marker only the flags can move (an unbind's).
        let state = &self.senders.state;
        let mut s = parked;
        loop {
            let idle = (index * ONE_PUSH) | (s & STICKY & !RELEASE_AT_IDLE);
            match state.compare_exchange_weak(s, idle, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    return TurnOutcome::Idle {
                        release: s & RELEASE_AT_IDLE != 0,
                    };
                }
                Err(now) => s = now,
            }
        }
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use crate::queue::test_item::{Item, RunQueue, keep_a_burst, run_all};
    use crate::queue::{EventQueue, KEPT_CAPACITY, QueueArc, RunningGuard, TurnOutcome};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    /// A pool turn that runs a burst of its handler's own sends to the end, and leaves its
    /// queue idle, gives back every slot they grew the local ring to; a turn that ends with
    /// demands left keeps them, and its slots.
    #[test]
    fn a_turn_that_runs_its_queue_dry_gives_back_a_burst_s_slots() {
        const BURST: u32 = 5_000;
        let rq = Arc::new(RunQueue::default());
        let mut q = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        q.push_remote(Item(0));
        let scheduled = rq.take();
        assert!(std::ptr::eq(&*scheduled, &*q));
        // SAFETY: this test took the queue from its run queue and is its one runner.
        let running = unsafe { RunningGuard::enter(&*scheduled) };
        let local = running.local();
        assert_eq!(local.take_first(), Some(Item(0)));
        for i in 1..=BURST {
            local.push(Item(i));
        }
        for i in 1..BURST {
            assert_eq!(local.pop(), Some(Item(i)));
        }
        assert_eq!(
            running.end_turn(true),
            TurnOutcome::Again,
            "one demand left: the queue runs again"
        );
        // SAFETY: as above (the turn that follows).
        let running = unsafe { RunningGuard::enter(&*scheduled) };
        assert_eq!(running.local().pop(), Some(Item(BURST)));
        let end = running.end_turn(true);
        assert_eq!(end, TurnOutcome::Idle { release: false }, "run dry: idle");
        scheduled.went_idle(false);
        let q = QueueArc::get_mut(&mut q).expect("nothing else holds the queue");
        assert_eq!(q.local_capacity_for_test(), 0, "idle: no slot kept");
    }

    /// A turn whose local ring runs dry while remote demands wait keeps the ring's first
    /// slots for them (steady flow), and gives back only what a burst grew beyond that.
    #[test]
    fn a_turn_that_ends_with_remote_demands_waiting_keeps_the_ring_s_first_slots() {
        let rq = Arc::new(RunQueue::default());
        let mut q = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        q.push_remote(Item(0));
        let scheduled = rq.take();
        // SAFETY: this test took the queue from its run queue and is its one runner.
        let running = unsafe { RunningGuard::enter(&*scheduled) };
        let local = running.local();
        assert_eq!(local.take_first(), Some(Item(0)));
        for i in 1..=5_000 {
            local.push(Item(i));
        }
        for i in 1..=5_000 {
            assert_eq!(local.pop(), Some(Item(i)));
        }
        q.push_remote(Item(5_001));
        assert_eq!(running.end_turn(true), TurnOutcome::Again, "a push waits");
        // SAFETY: as above (the turn that follows).
        let running = unsafe { RunningGuard::enter(&*scheduled) };
        let local = running.local();
        local.drain_remote(4);
        assert_eq!(local.pop(), Some(Item(5_001)));
        drop(running);
        // SAFETY: nothing runs the queue now; the test reads its ring's size.
        let kept = unsafe { (*q.run.local.get()).capacity() };
        assert_eq!(kept, KEPT_CAPACITY);
        // SAFETY: as above.
        let running = unsafe { RunningGuard::enter(&*scheduled) };
        assert_eq!(running.end_turn(true), TurnOutcome::Idle { release: false });
        scheduled.went_idle(false);
        let q = QueueArc::get_mut(&mut q).expect("nothing else holds the queue");
        assert_eq!(q.local_capacity_for_test(), 0);
    }

    /// A sweep claims an idle queue that kept a burst's block and slots and gives them back,
    /// leaving it idle and unlisted; a scheduled queue it leaves alone, for the next sweep;
    /// a queue run by a dedicated thread is never listed, and leaves the list.
    #[test]
    fn a_sweep_gives_back_what_an_idle_queue_kept() {
        let rq = Arc::new(RunQueue::default());
        let mut q = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        q.push_remote(Item(0));
        q.push_remote(Item(1));
        let s = rq.take();
        // A turn as a swept item type's would end it: idle, holding its block (this item
        // type gives back at the turn's end, so the test drains without ending the turn).
        // SAFETY: this test took the queue from its run queue and is its one runner.
        let running = unsafe { RunningGuard::enter(&*s) };
        let local = running.local();
        assert_eq!(local.take_first(), Some(Item(0)));
        local.drain_remote(4);
        assert_eq!(local.pop(), Some(Item(1)));
        assert!(q.run.remote_head.keeps_a_block());
        assert_eq!(q.idle_state(), None, "scheduled: left for the next sweep");
        let scheduled_state = q.senders.state.load(Ordering::Acquire);
        assert!(!EventQueue::give_back_idle(&q, scheduled_state));
        assert_eq!(running.end_turn(true), TurnOutcome::Idle { release: false });
        s.went_idle(false);
        assert!(
            q.run.remote_head.keeps_no_block(),
            "this item type gives back at idle"
        );
        // A queue left idle holding a block, as a swept type's turn leaves it.
        keep_a_burst(&rq, &q, 2);
        let idle = q.idle_state().expect("idle");
        q.push_remote(Item(99));
        assert!(
            !EventQueue::give_back_idle(&q, idle),
            "a push since the look: kept"
        );
        let s = rq.take();
        // SAFETY: as above.
        let running = unsafe { RunningGuard::enter(&*s) };
        assert_eq!(running.local().take_first(), Some(Item(99)));
        drop(running);
        // SAFETY: as above.
        unsafe { q.force_idle_for_test() };
        s.went_idle(false);
        let idle = q.idle_state().expect("idle");
        assert!(
            EventQueue::give_back_idle(&q, idle),
            "claimed and given back"
        );
        assert!(q.run.remote_head.keeps_no_block());
        assert!(!q.listed.get());
        // Idle again: the next burst runs in order.
        q.push_remote(Item(4));
        q.push_remote(Item(5));
        let s = rq.take();
        assert_eq!(run_all(&s, 4..6), TurnOutcome::Idle { release: false });
        s.went_idle(false);
        let q = QueueArc::get_mut(&mut q).expect("nothing else holds the queue");
        assert_eq!(q.local_capacity_for_test(), 0);
        let dedicated = EventQueue::<Item<u32>>::new();
        assert_eq!(dedicated.idle_state(), None, "not a pool queue");
        assert!(!EventQueue::give_back_idle(&dedicated, 0));
    }

    /// A queue that took a burst from other threads while scheduled (two remote blocks'
    /// worth) keeps neither block nor local slot once its turn leaves it idle, and the next
    /// burst links blocks anew, in order, from the next lap's first index.
    #[test]
    fn an_idle_queue_keeps_nothing_of_a_burst() {
        let rq = Arc::new(RunQueue::default());
        let mut q = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        for round in 0..3u32 {
            let from = round * 100;
            for i in from..from + 70 {
                q.push_remote(Item(i));
            }
            let s = rq.take();
            assert!(q.run.remote_head.has_block(), "the burst linked blocks");
            assert_eq!(
                run_all(&s, from..from + 70),
                TurnOutcome::Idle { release: false }
            );
            s.went_idle(false);
            assert!(
                q.run.remote_head.keeps_no_block(),
                "round {round}: no block kept"
            );
            let q = QueueArc::get_mut(&mut q).expect("nothing else holds the queue");
            assert_eq!(
                q.local_capacity_for_test(),
                0,
                "round {round}: no slot kept"
            );
        }
    }
}
