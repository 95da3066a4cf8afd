//! The sender's epoch: a per-thread count that moves whenever this thread's next push could
//! be ordered differently from its previous one (every remote push, and every start and end
//! of a turn on a queue, which makes a new sender on this thread). A mailbox that keeps an
//! order of its own beside the queues (the broadcast log) compares epochs to know whether
//! anything came between two of its appends.

use std::cell::Cell;

#[cfg(not(cohort_loom))]
thread_local! {
    static EPOCH: Cell<u64> = const { Cell::new(0) };
}
#[cfg(cohort_loom)]
loom::thread_local! {
    static EPOCH: Cell<u64> = Cell::new(0);
}

/// This thread's current epoch.
#[inline]
pub(crate) fn current() -> u64 {
    EPOCH.with(|e| e.get())
}

/// Moves this thread's epoch on.
#[inline]
pub(crate) fn advance() {
    EPOCH.with(|e| e.set(e.get().wrapping_add(1)))
}
