//! Synchronisation primitives, switched to loom's under `--cfg loom` for the model tests.

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::thread::{Thread, current as current_thread, park};

#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::thread::{Thread, current as current_thread, park};

#[cfg(not(loom))]
pub(crate) use crossbeam_queue::SegQueue;

/// A stand-in for `crossbeam_queue::SegQueue` that loom can model (a locked deque: the
/// model checks the protocol around the queue, crossbeam checks its own queue).
#[cfg(loom)]
pub(crate) struct SegQueue<T>(loom::sync::Mutex<std::collections::VecDeque<T>>);

#[cfg(loom)]
impl<T> SegQueue<T> {
    pub(crate) fn new() -> Self {
        Self(loom::sync::Mutex::new(std::collections::VecDeque::new()))
    }
    pub(crate) fn push(&self, v: T) {
        self.0.lock().unwrap().push_back(v)
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.0.lock().unwrap().pop_front()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().unwrap().is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// A cell handed from thread to thread by a protocol of its owner (no lock of its own), whose
/// accesses loom checks for data races under `--cfg loom`; a plain `UnsafeCell` otherwise.
#[cfg(not(loom))]
pub(crate) struct HandOffCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> HandOffCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        Self(std::cell::UnsafeCell::new(v))
    }

    /// Runs `f` on the value.
    ///
    /// # Safety
    /// No other thread accesses the cell until `f` returns (the owner's protocol says so).
    #[inline(always)]
    pub(crate) unsafe fn with_mut<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: exclusive access (caller).
        f(unsafe { &mut *self.0.get() })
    }
}

/// A cell handed from thread to thread by a protocol of its owner: loom's checked cell.
#[cfg(loom)]
pub(crate) struct HandOffCell<T>(loom::cell::UnsafeCell<T>);

#[cfg(loom)]
impl<T> HandOffCell<T> {
    pub(crate) fn new(v: T) -> Self {
        Self(loom::cell::UnsafeCell::new(v))
    }

    /// Runs `f` on the value; loom reports an access that races with another.
    ///
    /// # Safety
    /// No other thread accesses the cell until `f` returns (the owner's protocol says so).
    pub(crate) unsafe fn with_mut<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: exclusive access (caller); loom checks it.
        self.0.with_mut(|p| f(unsafe { &mut *p }))
    }
}
