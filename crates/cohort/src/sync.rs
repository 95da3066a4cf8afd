//! Synchronisation primitives, switched to loom's under `--cfg loom` for the model tests.

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, fence};
#[cfg(loom)]
pub(crate) use loom::thread::{Thread, current as current_thread, park};

#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, fence};
#[cfg(not(loom))]
pub(crate) use std::thread::{Thread, current as current_thread, park};
