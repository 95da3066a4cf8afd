//! Whether the current sender's previous push of any kind was an append to a given
//! broadcast log (`log.rs`): such an append keeps its order without a marker of its own.
//! The queue's sender epoch tells whether any other push (or a turn) came in between.

use crate::queue::sender_epoch;
use std::cell::Cell;

#[cfg(not(cohort_loom))]
thread_local! {
    /// The broadcast log this thread appended to last, and the sender epoch of that append.
    static LAST_APPEND: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}
#[cfg(cohort_loom)]
loom::thread_local! {
    static LAST_APPEND: Cell<(usize, u64)> = Cell::new((0, 0));
}

/// True if the last push of this sender was an append to the log at `log`.
#[inline]
pub(crate) fn is(log: usize) -> bool {
    LAST_APPEND.with(|l| l.get() == (log, sender_epoch::current()))
}

/// Records an append to the log at `log` (after its markers were pushed).
#[inline]
pub(crate) fn set(log: usize) {
    LAST_APPEND.with(|l| l.set((log, sender_epoch::current())))
}
