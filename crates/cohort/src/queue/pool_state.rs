//! The state word of a queue and what moves it: the claim of an idle pool queue by a sender,
//! a remote push to a busy one (or to a queue run by a dedicated thread), the end of a turn,
//! the finish step's close of lending, a dedicated worker's retirement, and the pool's count of
//! a bound queue, which the [`Scheduled`] holds borrow, and its release once the queue is
//! unbound and idle.

use super::event_queue::{EventQueue, IdleMemory, Notifier, QueueItem, Schedule};
use super::local::Local;
use super::queue_arc::QueueArc;
use super::remote_blocks::{self, Block};
use super::running::RunningGuard;
use super::scheduled::Scheduled;
use super::wakeup::QueueWakeup;
use crate::sync::Backoff;
use std::mem::MaybeUninit;
use std::ptr;
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
/// Pool queue state flag: the queue's pool holds no strong count of it (a new queue until
/// its pool takes one, [`QueueArc::hold_for_pool`]; an unbound one, whose pool gave it back
/// or will at the end of the turn under way), so the sender that claims it takes a count of
/// its own for its [`Scheduled`] hold instead of borrowing the pool's.
pub(super) const UNBOUND: u64 = 8;
/// Pool queue state flag: the queue was unbound while scheduled; the turn that leaves it idle
/// clears the flag and gives back the pool's count (see [`TurnOutcome::Idle`]).
pub(super) const RELEASE_AT_IDLE: u64 = 16;
/// The flags that stay once set, whatever the turns do.
pub(super) const STICKY: u64 = SENDERS_OWN | UNBOUND | RELEASE_AT_IDLE;
/// Queue state: the remote half's write index sits above the flags; one remote push
/// adds this (see [`remote_blocks`]).
pub(super) const ONE_PUSH: u64 = 32;

/// How a pool queue's turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnOutcome {
    /// The queue has more work, and this runner won the race to schedule it again.
    Again,
    /// The queue is idle. `release`: it was unbound during the scheduled time, and the
    /// runner's [`Scheduled`] hold gives back the pool's count as it ends.
    Idle {
        /// Whether the pool's count goes with this turn's hold.
        release: bool,
    },
    /// The queue stays scheduled, held by whoever the turn gave it to (`adv_thread_pool`'s
    /// last thread-safe demand schedules it again).
    HandedOver,
}

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
                // SAFETY: the exchange above set SCHEDULED on a state with `UNBOUND` as read.
                scheduler.schedule(unsafe { Scheduled::claimed(self, s & UNBOUND != 0) });
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

    /// The loom models' check that the pool's count goes once.
    #[cfg(cohort_loom)]
    pub(super) fn note_pool_count_gone(&self) {
        let gone = self.pool_count_gone.swap(true, Ordering::SeqCst);
        assert!(!gone, "the pool's count of a queue was given back twice");
    }

    /// A pool swept this scheduled queue (its workers are gone; see [`Scheduled::abandon`]):
    /// rejects what it holds and makes it idle again, so that a later send finds it idle and
    /// is rejected in turn. Returns whether the pool's count goes with the caller's hold.
    #[cold]
    pub(super) fn reject_until_idle(&self) -> bool {
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
            // It gives back its memory as it goes idle: no worker will sweep it.
            match running.end_turn_with(false, true) {
                TurnOutcome::Idle { release } => return release,
                TurnOutcome::Again | TurnOutcome::HandedOver => {}
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

impl<T: QueueItem> QueueArc<T> {
    /// The pool takes its strong count of a new queue, which the [`Scheduled`] holds of the
    /// queue then borrow, before any send can reach it; given back by
    /// [`release_pool_hold`](QueueArc::release_pool_hold).
    pub(crate) fn hold_for_pool(&self) {
        QueueArc::forget_one(self);
        self.senders.state.fetch_and(!UNBOUND, Ordering::AcqRel);
    }

    /// The queue's last agent is unbound: its pool's count goes now if the queue is idle, else
    /// with the hold of the turn that leaves it idle (a hold made after this owns a count).
    /// Each queue's pool count goes once: a second call does nothing.
    pub(crate) fn release_pool_hold(&self) {
        let state = &self.senders.state;
        let mut s = state.load(Ordering::Acquire);
        loop {
            if s & UNBOUND != 0 {
                return;
            }
            let scheduled = s & SCHEDULED != 0;
            let next = if scheduled {
                s | UNBOUND | RELEASE_AT_IDLE
            } else {
                s | UNBOUND
            };
            match state.compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        if s & SCHEDULED == 0 {
            #[cfg(cohort_loom)]
            self.note_pool_count_gone();
            // SAFETY: the count `hold_for_pool` took, given back once (UNBOUND was clear and
            // is set now); idle, so no hold borrows it, and a claim from now on owns a count.
            // This reference outlives the call.
            drop(unsafe { QueueArc::from_raw(QueueArc::as_ptr(self)) });
        }
    }
}

impl<T: QueueItem> RunningGuard<'_, T> {
    /// A pool worker ends its turn: [`TurnOutcome::Again`] if the queue has more work and
    /// this caller must schedule it again (it won the race to do so), else
    /// [`TurnOutcome::Idle`]. `ran_local`: the turn ran demands
    /// from the local half, which a burst of sends may have grown: if it is now empty, it
    /// gives back what it grew (a turn that ran only its claiming sender's demand leaves the
    /// half alone, and so pays nothing for the look).
    pub(crate) fn end_turn(self, ran_local: bool) -> TurnOutcome {
        self.end_turn_with(ran_local, false)
    }

    /// [`end_turn`](Self::end_turn); `give_back`: the queue gives back what it holds as it
    /// goes idle whatever its item type (a sweep's empty turn, see
    /// [`EventQueue::give_back_idle`]; a queue whose workers are gone).
    pub(super) fn end_turn_with(self, ran_local: bool, give_back: bool) -> TurnOutcome {
        let q = self.queue();
        // SAFETY (every block below): the guard makes this thread the queue's one runner until
        // the turn ends here, and the state, still SCHEDULED, lets no other runner start
        // (senders only claim or schedule an idle queue).
        let Notifier::Pool { .. } = &q.notifier else {
            return TurnOutcome::Idle { release: false };
        };
        let local = self.local();
        if !local.is_empty() {
            return TurnOutcome::Again;
        }
        if ran_local {
            local.release_spare();
        }
        // Looked at only where the memory may go back now: demands keep their slots at idle.
        let give_back = give_back || T::idle_memory() == IdleMemory::GiveBack;
        let holds_slots = give_back && local.holds_slots();
        drop(self);
        // Idle only if the runner has read the remote half up to the state's index (no push
        // since, none left by a drain that stopped at its limit); otherwise the queue stays
        // scheduled and runs again. Release: a sender that claims the idle queue then fills
        // its `first` slot.
        // SAFETY: see above; nobody else reads the head.
        let head = unsafe { q.run.remote_head.index() };
        let busy = (head * ONE_PUSH) | SCHEDULED;
        // A queue that holds memory for its demands (local slots, remote blocks) gives it back
        // as it goes idle, through its lap's marker (see `idle_giving_back`), or, when its
        // item type lists, is listed for its worker's sweep if it keeps a block: a
        // give-back at every idle would cost a queue that goes idle thousands of times a
        // second a block through the allocator each time. The first local slots alone (a
        // few hundred bytes, which most queues take for their first demands) are kept: the
        // list would hold nearly every queue, and its references would put off each dead
        // queue's free to a compaction. Any other queue goes idle in one step.
        let gives_back = give_back && (holds_slots || q.run.remote_head.keeps_a_block());
        // The list's reference is taken, and the flag set, before the exchange: once idle,
        // the queue may be unbound and dropped by others (a hold that borrows the pool's
        // count keeps nothing alive after it), and the next runner reads the flag. A listed
        // queue's turns look no further than the flag.
        let listing = (T::idle_memory() == IdleMemory::List
            && !give_back
            && !q.listed.get()
            && q.run.remote_head.has_block())
        .then(|| {
            q.listed.set(true);
            QueueArc::from_ref(q)
        });
        let outcome = Self::idle_exchange(q, head, busy, gives_back);
        if let Some(listed) = listing {
            match outcome {
                TurnOutcome::Idle { .. } => T::list_for_sweep(listed),
                // Still this turn's: it stays scheduled.
                _ => {
                    q.listed.set(false);
                    drop(listed);
                }
            }
        }
        outcome
    }

    /// The exchange that ends a pool turn (see [`end_turn`](Self::end_turn)), the turn's
    /// guard already dropped.
    #[inline(always)]
    fn idle_exchange(q: &EventQueue<T>, head: u64, busy: u64, gives_back: bool) -> TurnOutcome {
        let state = &q.senders.state;
        let first = if gives_back {
            (remote_blocks::marker_of(head) * ONE_PUSH) | SCHEDULED
        } else {
            busy & !SCHEDULED
        };
        match state.compare_exchange(busy, first, Ordering::AcqRel, Ordering::Relaxed) {
            // SAFETY: this turn holds the scheduled queue, has read its remote half up to
            // the head, and has just put the index on the head's marker.
            Ok(_) if gives_back => unsafe { q.idle_giving_back(head, first) },
            Ok(_) => TurnOutcome::Idle { release: false },
            // Once the agents have begun to finish or the queue is unbound (rare: a second
            // try, not a load per turn). The turn that clears RELEASE_AT_IDLE is the one
            // whose hold gives back the pool's count.
            Err(now) if now & !STICKY == busy => {
                if gives_back {
                    let parked = first | (now & STICKY);
                    return match state.compare_exchange(
                        now,
                        parked,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    ) {
                        // SAFETY: as above.
                        Ok(_) => unsafe { q.idle_giving_back(head, parked) },
                        Err(_) => TurnOutcome::Again,
                    };
                }
                let idle = now & !(SCHEDULED | RELEASE_AT_IDLE);
                match state.compare_exchange(now, idle, Ordering::AcqRel, Ordering::Relaxed) {
                    Ok(_) => TurnOutcome::Idle {
                        release: now & RELEASE_AT_IDLE != 0,
                    },
                    Err(_) => TurnOutcome::Again,
                }
            }
            Err(now) => {
                // Only a holder of the scheduled queue ends its turns.
                debug_assert!(now & SCHEDULED != 0, "a turn of an idle pool queue");
                if now & SCHEDULED == 0 {
                    return TurnOutcome::Idle { release: false };
                }
                TurnOutcome::Again
            }
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
    use super::TurnOutcome;
    use crate::queue::test_item::{Item, RunQueue};
    use crate::queue::{EventQueue, QueueArc, QueueItem, RunningGuard, Scheduled};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Runs the one demand of a scheduled queue; returns how its turn ended.
    fn run_one(s: &Scheduled<Item<u32>>, want: u32) -> TurnOutcome {
        // SAFETY: the caller took `s` from its run queue and is the queue's one runner.
        let running = unsafe { RunningGuard::enter(&**s) };
        assert_eq!(running.local().take_first(), Some(Item(want)));
        running.end_turn(false)
    }

    /// A pooled queue that its pool holds, with the run queue its claims go to.
    fn bound<T: QueueItem>() -> (Arc<RunQueue<T>>, QueueArc<T>) {
        let rq = Arc::new(RunQueue::default());
        let q = EventQueue::<T>::pooled(rq.clone(), 4);
        q.hold_for_pool();
        (rq, q)
    }

    /// A push to the idle `q`, the turn that runs it and leaves `q` idle; returns the strong
    /// count of `q` while it was scheduled.
    fn one_cycle(q: &QueueArc<Item<u32>>, rq: &RunQueue<Item<u32>>, i: u32) -> usize {
        q.push_remote(Item(i));
        let s = rq.take();
        let held = QueueArc::strong_count(q);
        assert_eq!(run_one(&s, i), TurnOutcome::Idle { release: false });
        s.went_idle(false);
        held
    }

    /// While its pool holds it, a queue is scheduled and run without a count of its own; once
    /// unbound, the pool's count goes (the queue is idle), and a claim takes a count that its
    /// turn gives back.
    #[test]
    fn a_bound_queue_s_hand_off_moves_no_count() {
        let (rq, q) = bound::<Item<u32>>();
        assert_eq!(QueueArc::strong_count(&q), 2, "the test's and the pool's");
        assert_eq!(
            one_cycle(&q, &rq, 0),
            2,
            "the hold borrows the pool's count"
        );
        assert_eq!(QueueArc::strong_count(&q), 2);
        q.release_pool_hold();
        assert_eq!(
            QueueArc::strong_count(&q),
            1,
            "idle: the pool's count goes at once"
        );
        q.release_pool_hold();
        assert_eq!(QueueArc::strong_count(&q), 1, "once");
        assert_eq!(
            one_cycle(&q, &rq, 1),
            2,
            "a claim after the unbind owns a count"
        );
        assert_eq!(QueueArc::strong_count(&q), 1);
    }

    /// Unbound while scheduled: the pool's count stays until the turn that leaves the queue
    /// idle, whose hold gives it back; a turn that ends with work left keeps it.
    #[test]
    fn unbound_while_scheduled_the_turn_that_idles_gives_back_the_pool_s_count() {
        let (rq, q) = bound::<Item<u32>>();
        q.push_remote(Item(0));
        q.push_remote(Item(1));
        let s = rq.take();
        q.release_pool_hold();
        assert_eq!(
            QueueArc::strong_count(&q),
            2,
            "scheduled: the hold still borrows it"
        );
        assert_eq!(run_one(&s, 0), TurnOutcome::Again);
        // SAFETY: as in `run_one` (the turn that follows).
        let running = unsafe { RunningGuard::enter(&*s) };
        let local = running.local();
        local.drain_remote(4);
        assert_eq!(local.pop(), Some(Item(1)));
        let end = running.end_turn(true);
        assert_eq!(end, TurnOutcome::Idle { release: true });
        s.went_idle(true);
        assert_eq!(QueueArc::strong_count(&q), 1);
    }

    /// An item that counts its rejection instead of failing the test.
    #[derive(Debug)]
    struct Rejectable(Arc<AtomicUsize>);

    impl QueueItem for Rejectable {
        type Early = ();

        fn reject(self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A hold that no worker will run (its pool's workers are gone) rejects what the queue
    /// holds, leaves it idle, and gives back the pool's count if the queue was unbound.
    #[test]
    fn an_abandoned_hold_rejects_everything_and_gives_back_the_pool_s_count() {
        let rejected = Arc::new(AtomicUsize::new(0));
        let (rq, q) = bound::<Rejectable>();
        for _ in 0..3 {
            q.push_remote(Rejectable(rejected.clone()));
        }
        let s = rq.take();
        q.release_pool_hold();
        s.abandon();
        assert_eq!(rejected.load(Ordering::SeqCst), 3, "counted, not lost");
        assert_eq!(
            QueueArc::strong_count(&q),
            1,
            "the pool's count went with the hold"
        );
        // Idle again: a later send claims it.
        q.push_remote(Rejectable(rejected.clone()));
        rq.take().abandon();
        assert_eq!(rejected.load(Ordering::SeqCst), 4);
        assert_eq!(QueueArc::strong_count(&q), 1);
    }
}
