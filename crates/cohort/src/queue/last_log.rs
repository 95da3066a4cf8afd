//! Whether the current sender's previous push of any kind was an append to a given
//! broadcast log (`named/log.rs`): such an append keeps its order without a marker of its
//! own. Every remote push, and every start and end of a turn (a new sender on this thread),
//! forgets it.

use std::cell::Cell;

#[cfg(not(loom))]
thread_local! {
    /// The broadcast log this thread appended to last, if it pushed nothing since (and
    /// started or ended no turn on a queue since).
    static LAST_LOG: Cell<usize> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static LAST_LOG: Cell<usize> = Cell::new(0);
}

/// True if the last push of this sender was an append to the log at `log`.
#[inline]
pub(crate) fn is(log: usize) -> bool {
    LAST_LOG.with(|l| l.get() == log)
}

/// Records an append to the log at `log` (after its markers were pushed).
#[inline]
pub(crate) fn set(log: usize) {
    LAST_LOG.with(|l| l.set(log))
}

/// Forgets the last append.
#[inline]
pub(crate) fn forget() {
    LAST_LOG.with(|l| l.set(0))
}
