//! Who runs a queue: the thread-local mark of the running queue, the [`RunningGuard`] a worker
//! holds for a turn, and the [`Local`] token through which only that thread touches the
//! queue's local half.

use super::event_queue::{EventQueue, QueueItem};
use super::sender_epoch;
use crate::agent::demand::Demand;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

#[cfg(not(cohort_loom))]
thread_local! {
    /// The queue the current thread is running, or null.
    static RUNNING: Cell<*const ()> = const { Cell::new(ptr::null()) };
}
#[cfg(cohort_loom)]
loom::thread_local! {
    static RUNNING: Cell<*const ()> = Cell::new(ptr::null());
}

/// The queue the current thread runs (its address), or null.
#[inline]
pub(crate) fn running_queue() -> *const () {
    RUNNING.with(|r| r.get())
}

/// True while the current thread runs some queue (a worker inside a handler or a demand).
#[inline]
pub(crate) fn runs_a_queue() -> bool {
    !running_queue().is_null()
}

/// Marks the current thread as running a queue until dropped (or until
/// [`end_turn`](Self::end_turn)); gives the [`Local`] token of that queue.
pub(crate) struct RunningGuard<'q, T: QueueItem = Demand> {
    queue: &'q EventQueue<T>,
    prev: *const (),
}

impl<'q, T: QueueItem> RunningGuard<'q, T> {
    /// # Safety
    /// No other thread runs `q` while the guard lives (the caller claimed it: one worker per
    /// queue, or a pool queue taken from a run queue).
    pub(crate) unsafe fn enter(q: &'q EventQueue<T>) -> Self {
        let prev = RUNNING.with(|r| r.replace((q as *const EventQueue<T>).cast::<()>()));
        sender_epoch::advance();
        Self { queue: q, prev }
    }

    /// The token of the queue this guard runs, for as long as the guard lives.
    #[inline]
    pub(crate) fn local(&self) -> Local<'_, T> {
        Local {
            queue: self.queue,
            _not_send: PhantomData,
        }
    }

    /// A pool worker ends its turn: returns true if the queue has more work and this caller
    /// must schedule it again (it won the race to do so).
    pub(crate) fn end_turn(self) -> bool {
        let q = self.queue;
        drop(self);
        // SAFETY: this thread ran `q` until just now and no longer runs it (guard dropped).
        unsafe { q.finish_turn() }
    }
}

impl<T: QueueItem> Drop for RunningGuard<'_, T> {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(self.prev));
        sender_epoch::advance();
    }
}

/// Proof that the current thread runs a queue: the safe face of the queue's single-owner
/// operations (its local half, the claiming sender's demand, the remote half's read end). Not
/// `Send`, and obtained only from the [`RunningGuard`] of the turn or, inside a handler, from
/// [`EventQueue::local`] (the thread-local mark), so it never outlives the turn that made it.
#[derive(Clone, Copy)]
pub(crate) struct Local<'q, T: QueueItem = Demand> {
    queue: &'q EventQueue<T>,
    _not_send: PhantomData<*const ()>,
}

impl<T: QueueItem> EventQueue<T> {
    /// True on the thread that currently runs this queue.
    #[inline]
    pub(crate) fn is_running_here(&self) -> bool {
        RUNNING.with(|r| ptr::eq(r.get(), (self as *const Self).cast::<()>()))
    }

    /// The token of this queue, if the current thread runs it (a handler of one of its agents).
    #[inline]
    pub(crate) fn local(&self) -> Option<Local<'_, T>> {
        self.is_running_here().then_some(Local {
            queue: self,
            _not_send: PhantomData,
        })
    }

    /// Pushes a demand that holds no borrowed agent reference, through the right half.
    #[inline]
    pub(crate) fn push(&self, d: T) {
        match self.local() {
            Some(local) => local.push(d),
            None => self.push_remote(d),
        }
    }
}

// Every method below: SAFETY: a `Local` exists only on the thread that runs its queue,
// during that turn (see the type's documentation).
impl<'q, T: QueueItem> Local<'q, T> {
    /// The token of `q`, for a worker that keeps the guard of `q` elsewhere.
    ///
    /// # Safety
    /// The current thread holds the [`RunningGuard`] of `q` for as long as the token is used.
    #[inline]
    pub(crate) unsafe fn assume(q: &'q EventQueue<T>) -> Self {
        debug_assert!(q.is_running_here());
        Local {
            queue: q,
            _not_send: PhantomData,
        }
    }

    /// The queue.
    #[inline]
    pub(crate) fn queue(&self) -> &'q EventQueue<T> {
        self.queue
    }

    /// Pushes to the local half.
    #[inline]
    pub(crate) fn push(&self, d: T) {
        // SAFETY: see above.
        unsafe { self.queue.push_local(d) }
    }

    /// Pushes the demand `make` builds to the local half, written in its slot.
    #[inline(always)]
    pub(crate) fn push_with(&self, make: impl FnOnce() -> T) {
        // SAFETY: see above.
        unsafe { self.queue.push_local_with(make) }
    }

    /// Pops the next demand to execute.
    #[inline]
    pub(crate) fn pop(&self) -> Option<T> {
        // SAFETY: see above.
        unsafe { self.queue.pop_local() }
    }

    /// Puts a popped demand back at the head of the local half.
    #[inline]
    pub(crate) fn unpop(&self, d: T) {
        // SAFETY: see above.
        unsafe { self.queue.unpop_local(d) }
    }

    /// Whether the local half is empty.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: see above.
        unsafe { self.queue.local_is_empty() }
    }

    /// Takes the demand of the sender that claimed this idle queue, if any: a turn's first
    /// demand, before the local half and the remote half.
    #[inline]
    pub(crate) fn take_first(&self) -> Option<T> {
        // SAFETY: see above.
        unsafe { self.queue.take_first() }
    }

    /// Moves up to `max` remote demands to the local tail; returns how many moved.
    #[inline]
    pub(crate) fn drain_remote(&self, max: usize) -> usize {
        // SAFETY: see above.
        unsafe { self.queue.drain_remote(max) }
    }

    /// Demands waiting in both halves (for statistics).
    pub(crate) fn len(&self) -> usize {
        // SAFETY: see above.
        unsafe { self.queue.len_here() }
    }

    /// The finish step of the queue's agents (see [`EventQueue::close_lending`]).
    pub(crate) fn close_lending(&self) {
        // SAFETY: see above.
        unsafe { self.queue.close_lending() }
    }
}

impl<'q, T: QueueItem> Local<'q, T> {
    /// Keeps an item aside for target `cell` (an agent that has not started yet).
    #[cold]
    pub(crate) fn stash_early(&self, cell: usize, early: T::Early) {
        // SAFETY: see above.
        unsafe { self.queue.stash_early(cell, early) }
    }

    /// Takes the items kept aside for target `cell`, in arrival order.
    #[inline]
    pub(crate) fn take_early(&self, cell: usize) -> Vec<T::Early> {
        // SAFETY: see above.
        unsafe { self.queue.take_early(cell) }
    }
}
