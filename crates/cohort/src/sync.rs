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
