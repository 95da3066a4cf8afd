//! Synchronisation primitives, switched to loom's under `--cfg cohort_loom` for the model tests.

#[cfg(cohort_loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(cohort_loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(cohort_loom)]
pub(crate) use loom::thread::{Thread, current as current_thread, park};

#[cfg(not(cohort_loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(cohort_loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(cohort_loom))]
pub(crate) use std::thread::{Thread, current as current_thread, park};

#[cfg(cohort_loom)]
pub(crate) use loom::thread::yield_now;
/// Gives up the core to another runnable thread (under loom: to the model's scheduler, which a
/// wait loop needs to make progress).
#[cfg(not(cohort_loom))]
pub(crate) use std::thread::yield_now;

/// A cell handed from thread to thread by a protocol of its owner (no lock of its own), whose
/// accesses loom checks for data races under `--cfg cohort_loom`; a plain `UnsafeCell` otherwise.
#[cfg(not(cohort_loom))]
pub(crate) struct HandOffCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(cohort_loom))]
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
#[cfg(cohort_loom)]
pub(crate) struct HandOffCell<T>(loom::cell::UnsafeCell<T>);

#[cfg(cohort_loom)]
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

/// A short wait for another thread that is in the middle of a few stores (a sender linking
/// the next block of a remote half, see `queue/remote_blocks.rs`): `snooze` spins, then
/// yields its core (that thread may have been descheduled on a machine with few cores).
#[cfg(not(cohort_loom))]
pub(crate) use crossbeam_utils::Backoff;

/// A wait for another thread: under loom, each `snooze` yields to the model's scheduler.
#[cfg(cohort_loom)]
pub(crate) struct Backoff;

#[cfg(cohort_loom)]
impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff
    }

    pub(crate) fn snooze(&self) {
        loom::thread::yield_now();
    }
}

/// Reads `a` for a wait loop. Under loom a plain load may return an old value again and
/// again (the model explores each), so a waiting loop there reads with a read-modify-write,
/// which always sees the latest value.
#[cfg(not(cohort_loom))]
#[inline]
pub(crate) fn load_latest(a: &AtomicU64) -> u64 {
    a.load(Ordering::Acquire)
}

/// Reads `a` for a wait loop (loom: a read-modify-write, see the other build's doc).
#[cfg(cohort_loom)]
pub(crate) fn load_latest(a: &AtomicU64) -> u64 {
    a.fetch_add(0, Ordering::Acquire)
}

/// A new strong reference to a value that lives in an `Arc`, from a plain reference to it
/// (what `Arc::clone` does, for code that holds `&T` or a pointer instead of the `Arc`).
///
/// # Safety
/// `value` is the data of a live `Arc<T>` (obtained through `Arc::as_ptr`, `Arc::into_raw`
/// or a deref of the `Arc`), which stays alive for the call.
#[inline]
pub(crate) unsafe fn arc_from_ref<T: ?Sized>(value: *const T) -> std::sync::Arc<T> {
    // SAFETY: `value` points into a live `Arc` (caller): one more strong count, then wrap it.
    unsafe {
        std::sync::Arc::increment_strong_count(value);
        std::sync::Arc::from_raw(value)
    }
}
