//! [`EventQueue`]: the demand queue of one or more agents, run by one worker at a time.
//!
//! A queue has two halves:
//! - **local**: a plain `VecDeque`, touched only by the thread that currently runs the queue.
//!   A send from a handler running on this queue to an agent bound to this queue (the whole
//!   single-thread path) pushes here: no lock, no atomic read-modify-write, no refcount.
//! - **remote**: a lock-free MPMC segment queue (`crossbeam_queue::SegQueue`) for every other
//!   sender, followed by a [`Wakeup::notify`].
//!
//! The worker only ever executes from the local half; it moves the remote half to the local
//! tail in batches ([`EventQueue::drain_remote`]). So the local half is the queue's one
//! total order, and FIFO holds per sender: a given sender thread always uses the same half.

use super::wakeup::Wakeup;
use crate::demand::Demand;
use crate::mbox::MboxId;
use crate::message::Envelope;
use crate::sync::{AtomicBool, SegQueue};
use std::cell::{Cell, UnsafeCell};
use std::collections::VecDeque;
use std::ptr;
use std::sync::atomic::Ordering;

#[cfg(not(loom))]
thread_local! {
    /// The queue the current thread is running, or null.
    static RUNNING: Cell<*const ()> = const { Cell::new(ptr::null()) };
}
#[cfg(loom)]
loom::thread_local! {
    static RUNNING: Cell<*const ()> = Cell::new(ptr::null());
}

/// What a queue holds: demands (the loom model uses plain values).
pub(crate) trait QueueItem: Send {
    /// Accounts for an item that will never run (its queue is dropped).
    fn reject(self);
}

impl QueueItem for Demand {
    fn reject(self) {
        Demand::reject(self)
    }
}

/// The demand queue of one or more agents.
pub(crate) struct EventQueue<T: QueueItem = Demand> {
    local: UnsafeCell<VecDeque<T>>,
    remote: SegQueue<T>,
    /// Messages that reached an agent before its `start` ran, by cell address, replayed right
    /// after `start` (rare: kept here rather than in every agent).
    early: UnsafeCell<Vec<(usize, MboxId, Envelope)>>,
    wakeup: Wakeup,
    closed: AtomicBool,
    /// Set by the worker when it has exited: nothing will run this queue again.
    retired: AtomicBool,
}

// SAFETY: `local` is only accessed by the thread that runs the queue (guarded by `RUNNING`,
// see `is_running_here`), and only one thread runs a queue at a time (`RunningGuard` is held by
// exactly one worker). Everything else is thread-safe by itself.
unsafe impl<T: QueueItem> Sync for EventQueue<T> {}
// SAFETY: items are `Send`; see above for `local`.
unsafe impl<T: QueueItem> Send for EventQueue<T> {}

impl<T: QueueItem> EventQueue<T> {
    pub(crate) fn new() -> Self {
        Self {
            local: UnsafeCell::new(VecDeque::new()),
            remote: SegQueue::new(),
            early: UnsafeCell::new(Vec::new()),
            wakeup: Wakeup::new(),
            closed: AtomicBool::new(false),
            retired: AtomicBool::new(false),
        }
    }

    /// True on the thread that currently runs this queue.
    #[inline]
    pub(crate) fn is_running_here(&self) -> bool {
        RUNNING.with(|r| ptr::eq(r.get(), (self as *const Self).cast::<()>()))
    }

    /// Pushes to the local half.
    ///
    /// # Safety
    /// The caller runs this queue (`is_running_here()` is true).
    #[inline]
    pub(crate) unsafe fn push_local(&self, d: T) {
        debug_assert!(self.is_running_here());
        // SAFETY: only the running thread touches `local` (caller), and no reference to it is
        // held across this call: pushes happen from handlers, never while the worker borrows it.
        unsafe { (*self.local.get()).push_back(d) }
    }

    /// Pushes from any thread to the remote half and wakes the worker if it sleeps.
    #[inline]
    pub(crate) fn push_remote(&self, d: T) {
        self.remote.push(d);
        self.wakeup.notify();
        // `notify` ends with a SeqCst fence: either the exiting worker sees this push in its
        // last sweep, or we see `retired` here and sweep ourselves.
        if self.retired.load(Ordering::Relaxed) {
            self.reject_remote();
        }
    }

    /// Called by the worker once it has left its loop: whatever arrives from now on (a sender
    /// that saw its receiver alive just before it finished) is rejected at once, counted as a
    /// dead letter, instead of waiting in a queue nobody runs.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        crate::sync::fence(Ordering::SeqCst);
        self.reject_remote();
    }

    #[cold]
    fn reject_remote(&self) {
        while let Some(d) = self.remote.pop() {
            d.reject();
        }
    }

    /// Pushes a demand that holds no borrowed agent reference, through the right half.
    #[inline]
    pub(crate) fn push(&self, d: T) {
        if self.is_running_here() {
            // SAFETY: checked just above.
            unsafe { self.push_local(d) }
        } else {
            self.push_remote(d)
        }
    }

    /// Pops the next demand to execute.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn pop_local(&self) -> Option<T> {
        // SAFETY: as in `push_local`; the borrow ends before the demand is executed.
        unsafe { (*self.local.get()).pop_front() }
    }

    /// Moves up to `max` remote demands to the local tail; returns how many moved.
    ///
    /// # Safety
    /// The caller runs this queue.
    pub(crate) unsafe fn drain_remote(&self, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(d) = self.remote.pop() else { break };
            // SAFETY: the caller runs this queue.
            unsafe { self.push_local(d) };
            n += 1;
        }
        n
    }

    /// Keeps a message that reached agent `cell` before its `start` ran.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[cold]
    pub(crate) unsafe fn stash_early(&self, cell: usize, mbox: MboxId, msg: Envelope) {
        // SAFETY: only the running thread touches `early` (caller); no borrow is held across.
        unsafe { (*self.early.get()).push((cell, mbox, msg)) }
    }

    /// Takes the messages stashed for agent `cell`, in arrival order.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn take_early(&self, cell: usize) -> Vec<(MboxId, Envelope)> {
        // SAFETY: as in `stash_early`.
        let early = unsafe { &mut *self.early.get() };
        if early.is_empty() {
            return Vec::new();
        }
        let mut mine = Vec::new();
        let mut rest = Vec::with_capacity(early.len());
        for (c, m, e) in early.drain(..) {
            if c == cell {
                mine.push((m, e))
            } else {
                rest.push((c, m, e))
            }
        }
        *early = rest;
        mine
    }

    /// True when the remote half has demands.
    #[inline]
    pub(crate) fn has_remote(&self) -> bool {
        !self.remote.is_empty()
    }

    /// Sleeps until a remote push or a close (the caller spins first).
    pub(crate) fn sleep(&self) {
        self.wakeup.sleep(|| self.has_remote() || self.is_closed());
    }

    /// Registers the calling thread as this queue's worker for wake-ups.
    pub(crate) fn register_worker(&self) {
        self.wakeup.register_current();
    }

    /// Asks the worker to exit once the queue is empty.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wakeup.force();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

impl<T: QueueItem> Drop for EventQueue<T> {
    fn drop(&mut self) {
        // Whatever is left was never executed: count it, never lose it silently.
        for d in self.local.get_mut().drain(..) {
            d.reject();
        }
        while let Some(d) = self.remote.pop() {
            d.reject();
        }
    }
}

/// Marks the current thread as running a queue until dropped.
pub(crate) struct RunningGuard {
    prev: *const (),
}

impl RunningGuard {
    /// # Safety
    /// No other thread runs `q` while the guard lives, and `q` outlives the guard.
    pub(crate) unsafe fn enter<T: QueueItem>(q: &EventQueue<T>) -> Self {
        let prev = RUNNING.with(|r| r.replace((q as *const EventQueue<T>).cast::<()>()));
        Self { prev }
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(self.prev));
    }
}
