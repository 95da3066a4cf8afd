//! Heap bytes allocated minus freed by the current thread, while counting is on: an exact
//! "bytes per item" where RSS would show the allocator's reuse of freed pages instead.
//!
//! The global allocator of `cohort-bench`: the system allocator plus, per allocation, one
//! relaxed load of a flag that is off except inside [`net_bytes_of`] (so other scenarios
//! pay nothing measurable).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static ON: AtomicBool = AtomicBool::new(false);

thread_local! {
    static NET: Cell<i64> = const { Cell::new(0) };
}

/// The system allocator, counting while [`ON`].
pub struct Counting;

fn count(delta: i64) {
    if ON.load(Relaxed) {
        // `try_with`: a thread being torn down has no counter any more.
        let _ = NET.try_with(|n| n.set(n.get() + delta));
    }
}

// SAFETY: every call is passed unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counting touches only a thread-local `Cell` (no allocation, no panic).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: the caller's guarantees for `alloc` are passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        // SAFETY: as in `dealloc`, and `new_size` is the caller's valid size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns its result with the heap bytes this thread allocated and did not
/// free meanwhile. Not reentrant (one measurement at a time).
pub fn net_bytes_of<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let before = NET.with(Cell::get);
    ON.store(true, Relaxed);
    let out = f();
    ON.store(false, Relaxed);
    (out, NET.with(Cell::get) - before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_stays_allocated() {
        let (v, bytes) = net_bytes_of(|| {
            let keep = vec![0u8; 4096];
            drop(vec![0u8; 1 << 20]);
            keep
        });
        assert_eq!(bytes, 4096);
        drop(v);
    }
}
