//! Who runs a queue: the thread-local mark of the running queue and the [`RunningGuard`] a
//! worker holds for a turn, which gives the [`Local`] token of the queue.

use super::event_queue::{EventQueue, QueueItem};
use super::local::Local;
use super::sender_epoch;
use crate::agent::demand::Demand;
use std::cell::Cell;
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
        // SAFETY: the guard marks this thread as running the queue until it drops, and the
        // token borrows the guard.
        unsafe { Local::new(self.queue) }
    }

    /// The queue this guard runs.
    #[inline]
    pub(super) fn queue(&self) -> &'q EventQueue<T> {
        self.queue
    }
}

impl<T: QueueItem> Drop for RunningGuard<'_, T> {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(self.prev));
        sender_epoch::advance();
    }
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
        // SAFETY: this thread runs the queue (its mark says so) until the turn ends, and a
        // handler's token does not outlive the handler.
        self.is_running_here().then(|| unsafe { Local::new(self) })
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
