//! Heap bytes allocated minus freed by the current thread, while counting is on: an exact
//! "bytes per item" where RSS would show the allocator's reuse of freed pages instead.
//!
//! The global allocator of `cohort-bench`: the system allocator plus, per allocation, one
//! relaxed load of a mode that is off except inside [`net_bytes_of`] or
//! [`process_live_of`] (so other scenarios pay nothing measurable).
//!
//! [`process_live_of`] counts every thread's allocations (the runtime allocates on its
//! worker threads too) and keeps the live blocks by size, which tells what each registered
//! agent or cooperation holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering::Relaxed};

/// 0: off; [`THREAD`]: the current thread's net bytes; [`PROCESS`]: every thread's, by size.
static ON: AtomicU8 = AtomicU8::new(0);
const THREAD: u8 = 1;
const PROCESS: u8 = 2;

/// Blocks up to this size are counted by exact size; larger ones in the last bucket.
const EXACT: usize = 4096;

/// Live blocks by size (index: bytes; the last: every larger block) in process mode.
static LIVE: [AtomicI64; EXACT + 2] = [const { AtomicI64::new(0) }; EXACT + 2];
/// Net bytes of every thread in process mode.
static PROCESS_NET: AtomicI64 = AtomicI64::new(0);
/// Net bytes of the blocks larger than [`EXACT`].
static LARGE_NET: AtomicI64 = AtomicI64::new(0);
/// Allocations (a `realloc` counts as one) of every thread in process mode.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static NET: Cell<i64> = const { Cell::new(0) };
}

/// The system allocator, counting while [`ON`] says so.
pub struct Counting;

/// A block of `removed` bytes going and one of `added` bytes appearing (0: none): one
/// relaxed load of the mode when counting is off.
fn count(removed: usize, added: usize) {
    match ON.load(Relaxed) {
        THREAD => {
            // `try_with`: a thread being torn down has no counter any more.
            let _ = NET.try_with(|n| n.set(n.get() + added as i64 - removed as i64));
        }
        PROCESS => {
            if added > 0 {
                ALLOCATIONS.fetch_add(1, Relaxed);
            }
            for (size, sign) in [(removed, -1), (added, 1)] {
                if size > 0 {
                    let bytes = sign * size as i64;
                    PROCESS_NET.fetch_add(bytes, Relaxed);
                    if size > EXACT {
                        LARGE_NET.fetch_add(bytes, Relaxed);
                    }
                    LIVE[size.min(EXACT + 1)].fetch_add(sign, Relaxed);
                }
            }
        }
        _ => {}
    }
}

// SAFETY: every call is passed unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counting touches only a thread-local `Cell` and static atomics (no
// allocation, no panic).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(0, layout.size());
        // SAFETY: the caller's guarantees for `alloc` are passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(layout.size(), 0);
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(0, layout.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(layout.size(), new_size);
        // SAFETY: as in `dealloc`, and `new_size` is the caller's valid size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// One measurement at a time, of either kind: both set the one process-wide mode (tests run
/// in parallel, and a thread measurement ending would switch a process one off).
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` and returns its result with the heap bytes this thread allocated and did not
/// free meanwhile. One measurement at a time (a second waits); not reentrant.
pub fn net_bytes_of<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = NET.with(Cell::get);
    ON.store(THREAD, Relaxed);
    let out = f();
    ON.store(0, Relaxed);
    (out, NET.with(Cell::get) - before)
}

/// What stayed allocated, on every thread, while [`process_live_of`] ran its function.
pub struct Live {
    /// Bytes allocated minus bytes freed.
    pub net_bytes: i64,
    /// (block size in bytes, blocks allocated minus blocks freed) for every size up to 4 KiB
    /// whose count changed.
    pub blocks: Vec<(usize, i64)>,
    /// Net blocks larger than 4 KiB, and their net bytes.
    pub large: (i64, i64),
    /// Allocations made meanwhile, freed or not (a `realloc` counts as one).
    pub allocations: u64,
}

/// Runs `f` and returns its result with what every thread allocated and did not free
/// meanwhile, by block size. One measurement at a time (a second waits); allocations the
/// runtime's threads make during `f` count, whoever asked for them.
pub fn process_live_of<T>(f: impl FnOnce() -> T) -> (T, Live) {
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for b in &LIVE {
        b.store(0, Relaxed);
    }
    PROCESS_NET.store(0, Relaxed);
    LARGE_NET.store(0, Relaxed);
    ALLOCATIONS.store(0, Relaxed);
    ON.store(PROCESS, Relaxed);
    let out = f();
    ON.store(0, Relaxed);
    let blocks = (0..=EXACT)
        .map(|size| (size, LIVE[size].load(Relaxed)))
        .filter(|&(_, n)| n != 0)
        .collect();
    let live = Live {
        net_bytes: PROCESS_NET.load(Relaxed),
        blocks,
        large: (LIVE[EXACT + 1].load(Relaxed), LARGE_NET.load(Relaxed)),
        allocations: ALLOCATIONS.load(Relaxed),
    };
    (out, live)
}

/// Bytes allocated minus bytes freed so far in the [`process_live_of`] measurement under way.
pub fn process_net_bytes_now() -> i64 {
    PROCESS_NET.load(Relaxed)
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

    #[test]
    fn counts_other_threads_by_block_size() {
        // Every thread counts, other tests' too (they run alongside and free what they
        // like): a block size no other test uses, and no claim on the net total.
        const ODD: usize = 3992;
        let (kept, live) = process_live_of(|| {
            std::thread::spawn(|| (0..3).map(|_| Box::new([0u8; ODD])).collect::<Vec<_>>())
                .join()
                .unwrap()
        });
        let odd = live
            .blocks
            .iter()
            .find(|&&(s, _)| s == ODD)
            .map(|&(_, n)| n);
        assert!(odd >= Some(3), "{:?}", live.blocks);
        assert!(live.allocations >= 3);
        drop(kept);
    }
}
