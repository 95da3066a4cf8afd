//! [`Local`]: the token of the thread that runs a queue, and the operations only that thread
//! may do: the local half, the claiming sender's demand, the remote half's read end and the
//! early-message stash.

use super::event_queue::{EventQueue, Notifier, QueueItem};
use super::pool_state::tail_index;
use super::remote_blocks;
use crate::agent::demand::Demand;
use std::marker::PhantomData;

/// Proof that the current thread runs a queue: the safe face of the queue's single-owner
/// operations. Not `Send`, and obtained only from the [`RunningGuard`](super::RunningGuard)
/// of the turn or, inside a handler, from [`EventQueue::local`] (the thread-local mark), so it
/// never outlives the turn that made it.
#[derive(Clone, Copy)]
pub(crate) struct Local<'q, T: QueueItem = Demand> {
    queue: &'q EventQueue<T>,
    _not_send: PhantomData<*const ()>,
}

// Every `unsafe` block below: SAFETY: a `Local` exists only on the thread that runs its queue,
// during that turn, and only that thread touches the local half, the `first` slot (once the
// claiming sender handed it over), the early stash and the remote half's read end; no
// reference into them is held across a call, so a handler's push never meets a borrow.
impl<'q, T: QueueItem> Local<'q, T> {
    /// The token of `q`.
    ///
    /// # Safety
    /// The current thread runs `q` (holds its guard) for as long as the token is used, or
    /// holds `q` exclusively (its drop).
    #[inline]
    pub(super) unsafe fn new(q: &'q EventQueue<T>) -> Self {
        Local {
            queue: q,
            _not_send: PhantomData,
        }
    }

    /// The token of `q`, for a worker that keeps the guard of `q` elsewhere.
    ///
    /// # Safety
    /// The current thread holds the [`RunningGuard`](super::RunningGuard) of `q` for as long
    /// as the token is used.
    #[inline]
    pub(crate) unsafe fn assume(q: &'q EventQueue<T>) -> Self {
        debug_assert!(q.is_running_here());
        // SAFETY: the caller holds the guard.
        unsafe { Self::new(q) }
    }

    /// The queue.
    #[inline]
    pub(crate) fn queue(&self) -> &'q EventQueue<T> {
        self.queue
    }

    /// Pushes to the local half.
    #[inline]
    pub(crate) fn push(&self, d: T) {
        debug_assert!(self.queue.is_running_here());
        // SAFETY: see above.
        unsafe { (*self.queue.run.local.get()).push_back(d) }
    }

    /// Pushes the demand `make` builds to the local half, making room first: the demand is
    /// then written straight into its slot, not built on the stack and copied (a copy that
    /// stalls on store forwarding, see [`LocalRing`](super::local_ring::LocalRing)); a demand
    /// built before the call, as [`push`](Self::push) takes it, lives across the ring's
    /// growth check and is copied.
    #[inline(always)]
    pub(crate) fn push_with(&self, make: impl FnOnce() -> T) {
        debug_assert!(self.queue.is_running_here());
        // SAFETY: see above.
        unsafe { (*self.queue.run.local.get()).push_back_with(make) }
    }

    /// Pops the next demand to execute.
    #[inline]
    pub(crate) fn pop(&self) -> Option<T> {
        // SAFETY: see above; the borrow ends before the demand is executed.
        unsafe { (*self.queue.run.local.get()).pop_front() }
    }

    /// Puts a popped demand back at the head of the local half.
    #[inline]
    pub(crate) fn unpop(&self, d: T) {
        // SAFETY: see above.
        unsafe { (*self.queue.run.local.get()).push_front(d) }
    }

    /// Whether the local half is empty.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: see above.
        unsafe { (*self.queue.run.local.get()).is_empty() }
    }

    /// Gives back the local half's slots beyond what steady flow needs if it is empty (see
    /// [`LocalRing::release_spare`](super::local_ring::LocalRing::release_spare)): called
    /// wherever the runner finds its queue run dry.
    #[inline]
    pub(crate) fn release_spare(&self) {
        // SAFETY: see above.
        unsafe { (*self.queue.run.local.get()).release_spare() }
    }

    /// Whether the local half holds slots (empty or not).
    #[inline]
    pub(crate) fn holds_slots(&self) -> bool {
        // SAFETY: see above.
        unsafe { (*self.queue.run.local.get()).holds_slots() }
    }

    /// Takes the demand of the sender that claimed this idle queue, if any: a turn's first
    /// demand, before the local half and the remote half.
    #[inline]
    pub(crate) fn take_first(&self) -> Option<T> {
        let q = self.queue;
        // SAFETY: see above: the slot is written only by the claiming sender, before the
        // queue was scheduled (the run queue's hand-off orders it before this turn).
        unsafe {
            if !q
                .senders
                .has_first
                .with_mut(|has| std::mem::replace(has, false))
            {
                return None;
            }
            Some(q.senders.first.with_mut(|first| first.assume_init_read()))
        }
    }

    /// Moves up to `max` remote demands to the local tail, up to the state's index; returns
    /// how many moved. (A worker that runs its queue alone takes what is written instead,
    /// without reading the state: [`DedicatedReader::drain_written`](super::DedicatedReader::drain_written).)
    #[inline]
    pub(crate) fn drain_remote(&self, max: usize) -> usize {
        // One load of the state, which a pool turn touches anyway, says how many were pushed
        // (acquire: with the blocks they went to). A push after it fails a pool turn's end
        // (`end_turn`), which runs the queue again, and is seen by a dedicated worker's look
        // before it sleeps (`has_remote`).
        let tail = self.queue.remote_tail();
        let head = &self.queue.run.remote_head;
        // SAFETY: see above: the head is this thread's alone.
        if unsafe { head.index() } == tail {
            // The common case on a hand-off: nothing pushed while the queue waited.
            return 0;
        }
        // SAFETY: as above.
        let moved = self.move_to_local(max, || unsafe { head.pop(tail) });
        if moved == 0 && matches!(self.queue.notifier, Notifier::Thread(_)) {
            return self.wait_for_slot(max, tail);
        }
        moved
    }

    /// A dedicated worker saw a reservation whose slot is still being written: its sender is
    /// most often in the middle of that store on another core, so look again a few times
    /// before yielding the core to a sender that may have been descheduled (the worker comes
    /// straight back for the slot: `has_remote`).
    #[cold]
    fn wait_for_slot(&self, max: usize, tail: u64) -> usize {
        let head = &self.queue.run.remote_head;
        for _ in 0..crate::defaults::SLOT_WRITE_SPINS {
            std::hint::spin_loop();
            // SAFETY: see above: the head is this thread's alone.
            let moved = self.move_to_local(max, || unsafe { head.pop(tail) });
            if moved > 0 {
                return moved;
            }
        }
        crate::sync::yield_now();
        0
    }

    /// Moves up to `max` demands that `pop` yields to the local tail; returns how many moved.
    #[inline]
    pub(super) fn move_to_local(&self, max: usize, mut pop: impl FnMut() -> Option<T>) -> usize {
        let mut n = 0;
        while n < max {
            let Some(d) = pop() else { break };
            self.push(d);
            n += 1;
        }
        n
    }

    /// True when the remote half of a queue run by a dedicated thread has demands (reserved
    /// beyond the index its runner has read up to; one may still be being written); false
    /// for a pool queue, whose turn learns it at its end instead.
    #[inline]
    pub(crate) fn has_remote(&self) -> bool {
        // SAFETY: see above: this thread reads the remote half.
        unsafe { self.queue.has_remote_for_reader() }
    }

    /// Demands waiting in both halves (for statistics).
    pub(crate) fn len(&self) -> usize {
        let q = self.queue;
        let tail = q.remote_tail();
        // SAFETY: see above: the head is this thread's alone.
        let head = unsafe { q.run.remote_head.index() };
        let remote = usize::try_from(remote_blocks::count(head, tail)).unwrap_or(usize::MAX);
        // SAFETY: see above.
        unsafe {
            usize::from(q.senders.has_first.with_mut(|has| *has))
                + (*q.run.local.get()).len()
                + remote
        }
    }

    /// Keeps an item aside for target `cell` (an agent that has not started yet).
    #[cold]
    pub(crate) fn stash_early(&self, cell: usize, early: T::Early) {
        // SAFETY: see above.
        unsafe { (*self.queue.early.get()).push((cell, early)) }
    }

    /// Takes the items kept aside for target `cell`, in arrival order.
    #[inline]
    pub(crate) fn take_early(&self, cell: usize) -> Vec<T::Early> {
        // SAFETY: see above.
        let early = unsafe { &mut *self.queue.early.get() };
        if early.is_empty() {
            return Vec::new();
        }
        // One pass, in place: the others' items stay where they are, in order.
        early
            .extract_if(.., |(c, _)| *c == cell)
            .map(|(_, item)| item)
            .collect()
    }
}

impl<T: QueueItem> EventQueue<T> {
    /// The tail index a dedicated queue's state shows now, against the reader's head.
    ///
    /// # Safety
    /// The caller is the remote half's one reader (the queue's runner or dedicated worker).
    #[inline]
    pub(super) unsafe fn has_remote_for_reader(&self) -> bool {
        match &self.notifier {
            Notifier::Thread(_) => {
                // SAFETY: the caller is the remote half's one reader.
                let head = unsafe { self.run.remote_head.index() };
                // (Under loom a read-modify-write, for the reason given at `Wakeup::notify`.)
                head != tail_index(crate::sync::load_latest(&self.senders.state))
            }
            Notifier::Pool { .. } => false,
        }
    }
}
