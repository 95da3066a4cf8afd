//! The state word of a queue and what moves it: the claim of an idle pool queue by a sender,
//! a remote push to a busy one (or to a queue run by a dedicated thread), the end of a turn,
//! the finish step's close of lending, a dedicated worker's retirement.

use super::event_queue::{EventQueue, Notifier, QueueItem, Schedule};
use super::local::Local;
use super::remote_blocks::{self, Block};
use super::running::RunningGuard;
use super::wakeup::QueueWakeup;
use crate::sync::{Backoff, arc_from_ref};
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Pool queue state flag: the queue is in a run queue, a LIFO slot or a worker's turn, and
/// exactly one party holds it. Without it the queue is idle: nobody holds it and its remote
/// half is empty (a turn ends in idle only when it has read up to the state's index).
pub(super) const SCHEDULED: u64 = 1;
/// Pool queue state flag: remote message demands hold their own reference to their agent.
/// Clear while the queue's agents live: a demand reserved then may borrow the agent, because
/// the queue's finish step moves every such demand ahead of `finish` (see
/// [`Local::close_lending`], and "Agent lifetime" in `docs/runtime-semantics.md`). Set
/// once, by the runner, at that step. A dedicated queue never sets it (its agents finish at
/// different times): its senders decide per agent, after their reservation (see
/// `push_remote_with`).
pub(super) const SENDERS_OWN: u64 = 2;
/// Dedicated queue state flag (the bit that a pool queue uses for [`SCHEDULED`]): the worker
/// has exited and swept the remote half; a push that finds it rejects its own demand.
pub(super) const RETIRED: u64 = SCHEDULED;
/// Dedicated queue state flag: the worker is about to park, or parked, with the remote half
/// read up to the state's index. The push whose reservation clears it wakes the worker: the
/// reservation reads the flag in the same read-modify-write, so a push to an awake worker
/// costs no fence and no look at another line (queues whose worker serves a group wake it
/// through [`SharedWakeup`](super::wakeup::SharedWakeup) instead, and never set it).
pub(super) const SLEEPING: u64 = 4;
/// Queue state: the remote half's write index sits above the flags; one remote push
/// adds this (see [`remote_blocks`]).
pub(super) const ONE_PUSH: u64 = 8;

/// The remote half's write index in a state word.
#[inline]
pub(super) fn tail_index(state: u64) -> u64 {
    state / ONE_PUSH
}

impl<T: QueueItem> EventQueue<T> {
    /// A pool queue's remote push: one compare-and-swap on the state either claims the idle
    /// queue or reserves an index of the remote half (see [`remote_blocks`]).
    #[inline(always)]
    pub(super) fn push_pooled(
        &self,
        mut make: impl FnOnce(bool) -> T,
        scheduler: &dyn Schedule<T>,
    ) {
        let state = &self.senders.state;
        // A block for the next link, taken before the reservation of a block's last slot (so
        // that the senders waiting on the marker wait for stores, not an allocation).
        let mut next: *mut Block<T> = ptr::null_mut();
        let backoff = Backoff::new();
        // Acquire: a state past a marker comes with the block linked before it.
        let mut s = state.load(Ordering::Acquire);
        loop {
            if s & SCHEDULED == 0 {
                if let Err(now) = state.compare_exchange_weak(
                    s,
                    s | SCHEDULED,
                    // Release too: every write of the state both acquires and releases, so a
                    // sender that reads an index also reads the blocks linked before it,
                    // whoever wrote the state last (not only through release sequences).
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    s = now;
                    continue;
                }
                // An idle pool queue that this sender just claimed: nobody runs it until it
                // is handed to a run queue below, so the sender may leave its demand in the
                // queue's `first` slot, on the line it has just written (acquire above: the
                // last runner's release of the idle state, after it took the slot's previous
                // demand), and save the remote push and pop. Its remote half is empty (a turn
                // ends in idle only when it has read up to the index), so this sender's
                // earlier demands ran before, and FIFO per sender holds. A push racing with
                // this claim reserves an index and runs after this demand.
                // SAFETY: the queue is SCHEDULED and in no run queue: this thread is its only
                // user, and the slot is empty (every turn takes it; nothing else fills it).
                unsafe {
                    self.senders.has_first.with_mut(|has| {
                        debug_assert!(!*has);
                        *has = true;
                    });
                    self.senders
                        .first
                        .with_mut(|first| *first = MaybeUninit::new(make(s & SENDERS_OWN == 0)));
                };
                if !next.is_null() {
                    self.run.remote_head.give_back(next);
                }
                scheduler.schedule(self.arc());
                return;
            }
            match self.try_reserve(s, &mut next, &backoff, make) {
                // The queue was scheduled (not idle: see above): its runner reads up to the
                // new index before its turn can end in idle.
                Ok(_) => return,
                Err((now, m)) => (s, make) = (now, m),
            }
        }
    }

    /// A remote push to a queue run by a dedicated thread: one compare-and-swap on the state
    /// reserves an index of the remote half (see [`remote_blocks`]), then the worker is woken
    /// if it sleeps; once the worker has retired, the demand is rejected here instead.
    #[inline(always)]
    pub(super) fn push_dedicated(&self, mut make: impl FnOnce(bool) -> T, wakeup: &QueueWakeup) {
        let state = &self.senders.state;
        // As in `push_pooled`.
        let mut next: *mut Block<T> = ptr::null_mut();
        let backoff = Backoff::new();
        let mut s = state.load(Ordering::Acquire);
        loop {
            if s & RETIRED != 0 {
                self.reject_retired(next, make(false));
                return;
            }
            match self.try_reserve(s, &mut next, &backoff, make) {
                Ok(reserved_at) => {
                    s = reserved_at;
                    break;
                }
                Err((now, m)) => (s, make) = (now, m),
            }
        }
        match wakeup {
            // The reservation cleared the flag it found: this sender is the one that wakes
            // the worker (see `SLEEPING`).
            QueueWakeup::Own(w) => {
                if s & SLEEPING != 0 {
                    w.unpark();
                }
            }
            // After the reservation (a read-modify-write of the state): `notify`'s fence
            // then pairs with the one of the worker's `sleep`, which reads the state after it.
            QueueWakeup::Shared { .. } => wakeup.notify(),
        }
    }

    /// A push that found its dedicated queue retired: the worker has swept the remote half
    /// and exited, so the demand is rejected (counted) by its sender.
    #[cold]
    fn reject_retired(&self, next: *mut Block<T>, d: T) {
        if !next.is_null() {
            self.run.remote_head.give_back(next);
        }
        d.reject();
    }

    /// A remote push's reservation at state `s` (whose flags the caller has checked): one
    /// compare-and-swap reserves the state's index, then the demand `make` builds is written
    /// in its slot. Gives `make` back with the state to retry from when the state moved or
    /// its index rests on a marker (another sender is linking the next block in). `next` is
    /// the block taken for a link, kept across retries; the caller gives it back if it leaves
    /// the loop another way.
    #[inline(always)]
    fn try_reserve<F: FnOnce(bool) -> T>(
        &self,
        s: u64,
        next: &mut *mut Block<T>,
        backoff: &Backoff,
        make: F,
    ) -> Result<u64, (u64, F)> {
        let state = &self.senders.state;
        let (tail, head) = (&self.senders.remote_tail, &self.run.remote_head);
        let index = tail_index(s);
        if remote_blocks::is_marker(index) {
            backoff.snooze();
            return Err((crate::sync::load_latest(state), make));
        }
        if remote_blocks::is_last_slot(index) && next.is_null() {
            *next = head.take_block();
        }
        let block = tail.block(head);
        // Release: the runner that reads this index (acquire) reads the blocks linked before
        // it; the value itself is published by its slot's tag.
        let reserved = (s + ONE_PUSH) & !SLEEPING;
        match state.compare_exchange_weak(s, reserved, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                let borrow = s & SENDERS_OWN == 0;
                let step = || {
                    state.fetch_add(ONE_PUSH, Ordering::AcqRel);
                };
                // SAFETY: this sender reserved `index` (the exchange above), `block` is the
                // tail block read after a state that had `index` (acquire), and `next` is set
                // when `index` is a block's last slot.
                unsafe { tail.write(block, index, *next, step, || make(borrow)) };
                if !remote_blocks::is_last_slot(index) && !next.is_null() {
                    // Taken for a last slot that another sender got.
                    head.give_back(*next);
                }
                Ok(s)
            }
            Err(now) => Err((now, make)),
        }
    }

    /// A new strong reference to this queue.
    #[inline]
    fn arc(&self) -> Arc<Self> {
        // SAFETY: queues are only created inside an `Arc` (every constructor returns one) and
        // `self` is alive.
        unsafe { arc_from_ref(self) }
    }

    /// Pops the remote half up to index `tail` (read from the state) into `f`, waiting for a
    /// sender between its reservation and its write (a few instructions, unless it was
    /// preempted there).
    ///
    /// # Safety
    /// The caller runs this queue (or is its dedicated worker): the head is its alone.
    pub(super) unsafe fn pop_remote_until(&self, tail: u64, mut f: impl FnMut(T)) {
        let head = &self.run.remote_head;
        let backoff = Backoff::new();
        loop {
            // SAFETY: caller.
            while let Some(d) = unsafe { head.pop(tail) } {
                f(d);
            }
            // SAFETY: as above.
            if unsafe { head.index() } == tail {
                return;
            }
            // A slot reserved and not written yet stopped the pops.
            backoff.snooze();
        }
    }

    /// A pool swept this scheduled queue (its workers are gone): reject what it holds and
    /// make it idle again, so that a later send finds it idle and is rejected in turn.
    #[cold]
    pub(crate) fn abandon(&self) {
        loop {
            // SAFETY: the queue came out of a run queue (or a slot) of a pool whose workers
            // are gone: nobody runs it, and a sender claims it only once it is idle again
            // (the turn's end below).
            let running = unsafe { RunningGuard::enter(self) };
            let local = running.local();
            if let Some(d) = local.take_first() {
                d.reject();
            }
            loop {
                while let Some(d) = local.pop() {
                    d.reject();
                }
                if local.drain_remote(usize::MAX) == 0 {
                    break;
                }
            }
            // Idle only once the remote half is read up to an index that no push passed (as
            // a turn ends).
            if !running.end_turn(false) {
                return;
            }
        }
    }

    /// A pool queue's remote write index, as the state shows it now (acquire: with the
    /// blocks linked before it).
    #[inline]
    pub(super) fn remote_tail(&self) -> u64 {
        tail_index(self.senders.state.load(Ordering::Acquire))
    }

    /// The remote write index, read with a read-modify-write of the state that changes
    /// nothing: ordered against every reservation (each one a read-modify-write of the same
    /// word), so a push reserved after this read acquires what the reader wrote before it.
    /// The finish step of a dedicated queue's agent reads its index this way
    /// (`close_lending`), and so does a `prio_one_thread` worker that has lowered a flag.
    #[inline]
    pub(super) fn remote_tail_ordered(&self) -> u64 {
        tail_index(self.senders.state.fetch_or(0, Ordering::AcqRel))
    }
}

impl<T: QueueItem> RunningGuard<'_, T> {
    /// A pool worker ends its turn: returns true if the queue has more work and this caller
    /// must schedule it again (it won the race to do so). `ran_local`: the turn ran demands
    /// from the local half, which a burst of sends may have grown: if it is now empty, it
    /// gives back what it grew (a turn that ran only its claiming sender's demand leaves the
    /// half alone, and so pays nothing for the look).
    pub(crate) fn end_turn(self, ran_local: bool) -> bool {
        let q = self.queue();
        // SAFETY (every block below): the guard makes this thread the queue's one runner until
        // the turn ends here, and the state, still SCHEDULED, lets no other runner start
        // (senders only claim or schedule an idle queue).
        let Notifier::Pool { .. } = &q.notifier else {
            return false;
        };
        let local = self.local();
        if !local.is_empty() {
            return true;
        }
        if ran_local {
            local.release_spare();
        }
        drop(self);
        let state = &q.senders.state;
        // Idle only if the runner has read the remote half up to the state's index (no push
        // since, none left by a drain that stopped at its limit); otherwise the queue stays
        // scheduled and runs again. Release: a sender that claims the idle queue then fills
        // its `first` slot.
        // SAFETY: see above; nobody else reads the head.
        let head = unsafe { q.run.remote_head.index() };
        let busy = (head * ONE_PUSH) | SCHEDULED;
        match state.compare_exchange(busy, busy & !SCHEDULED, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => false,
            // Once the agents have begun to finish (rare: a second try, not a load per turn).
            Err(now) if now == busy | SENDERS_OWN => state
                .compare_exchange(now, now & !SCHEDULED, Ordering::AcqRel, Ordering::Relaxed)
                .is_err(),
            Err(_) => true,
        }
    }
}

impl<T: QueueItem> Local<'_, T> {
    /// The finish step of the queue's agents: from now on a remote message demand owns its
    /// agent reference, and every remote demand reserved before, which may borrow it, moves to
    /// the local tail now, ahead of whatever the caller pushes next (the step that runs
    /// `finish`, after which the cooperation may drop the agents). Waits for a sender between
    /// its reservation and its write (a few instructions, unless it was preempted there). A
    /// queue run by a dedicated thread moves what its remote half holds.
    ///
    /// A pool queue serves one group of one cooperation (a queue per agent or per
    /// cooperation), so this runs once per queue, and no handler of its agents
    /// runs after the `finish` that follows it.
    pub(crate) fn close_lending(&self) {
        let q = self.queue();
        let Notifier::Pool { .. } = &q.notifier else {
            // The agents' status became `FINISHING` before this step was queued: a
            // reservation after this read acquires it, and its sender owns a reference; one
            // before it lies below the index read here. (A fence here and after each
            // reservation orders them too, but puts a locked instruction on every send.)
            let tail = q.remote_tail_ordered();
            // SAFETY: this thread runs the queue (the token): the head is its alone.
            unsafe { q.pop_remote_until(tail, |d| self.push(d)) };
            return;
        };
        // AcqRel, like every write of the state: with the blocks linked before the index.
        let tail = tail_index(q.senders.state.fetch_or(SENDERS_OWN, Ordering::AcqRel));
        // SAFETY: this thread runs the queue (the token): the head is its alone.
        unsafe { q.pop_remote_until(tail, |d| self.push(d)) };
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use crate::queue::{EventQueue, KEPT_CAPACITY, RunningGuard, Schedule};
    use std::sync::{Arc, Mutex};

    use crate::queue::test_item::Item;

    /// Keeps what it is asked to schedule.
    #[derive(Default)]
    struct RunQueue(Mutex<Vec<Arc<EventQueue<Item<u32>>>>>);

    impl Schedule<Item<u32>> for RunQueue {
        fn schedule(&self, q: Arc<EventQueue<Item<u32>>>) {
            self.0.lock().unwrap().push(q);
        }
    }

    /// A pool turn that runs a burst of its handler's own sends to the end gives back what
    /// they grew the local ring to as the turn ends, and the queue goes idle; a turn that
    /// ends with demands left keeps them, and its slots.
    #[test]
    fn a_turn_that_runs_its_queue_dry_gives_back_a_burst_s_slots() {
        const BURST: u32 = 5_000;
        let rq = Arc::new(RunQueue::default());
        let mut q = EventQueue::<Item<u32>>::pooled(rq.clone(), 4);
        q.push_remote(Item(0));
        let scheduled =
            rq.0.lock()
                .unwrap()
                .pop()
                .expect("the push scheduled the queue");
        assert!(Arc::ptr_eq(&scheduled, &q));
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
        assert!(
            running.end_turn(true),
            "one demand left: the queue runs again"
        );
        // SAFETY: as above (the turn that follows).
        let running = unsafe { RunningGuard::enter(&*scheduled) };
        assert_eq!(running.local().pop(), Some(Item(BURST)));
        assert!(!running.end_turn(true), "run dry: the queue goes idle");
        drop(scheduled);
        let q = Arc::get_mut(&mut q).expect("nothing else holds the queue");
        assert_eq!(q.local_capacity_for_test(), KEPT_CAPACITY);
    }
}
