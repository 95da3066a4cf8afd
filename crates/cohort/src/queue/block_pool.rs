//! Blocks of the queues' remote halves kept for reuse by any queue of one item type: the
//! second level behind each queue's own spare ([`Head`](super::remote_blocks::Head)).
//!
//! ```text
//!  runner, block read to its end ──► queue's spare (empty?) ──► pool (room?) ──► allocator
//!  sender, block to link         ◄── queue's spare (full?)  ◄── pool (any?)  ◄── allocator
//! ```
//!
//! One spare per queue is enough while one side runs well ahead of the other, but when a
//! sender and a runner go at about the same pace, the runner often finishes a second block
//! before the sender has taken the first spare, and the sender often needs a second block
//! before the runner has finished one: one frees, the other allocates, every few blocks.
//! A block is over the allocator's per-thread cache limit (glibc's tcache: 1,032 bytes), so
//! both go through the shared arena's lock, and a sender that takes a page fault while it
//! holds it puts the runner to sleep on it. The pool, one bounded lock-free queue per item
//! type, takes those blocks instead (a push or a pop per block, not per message), and keeps
//! at most [`BLOCK_POOL`] of them for the whole process, only while messages flow: a worker
//! that parks or exits frees them (a block kept after a burst could sit at the top of the
//! heap and keep the allocator from giving back the memory below it), and a queue that is
//! dropped frees its own blocks rather than pooling them.
//!
//! A block that leaves its queue carries tags from that queue's laps, which a later lap of
//! another queue could match: its tags are cleared on the way in, so a block from the pool
//! reads as never written.

use super::remote_blocks::Block;
#[cfg(not(cohort_loom))]
use crate::defaults::BLOCK_POOL;
use crossbeam_queue::ArrayQueue;
use std::ptr::NonNull;

/// Blocks kept for reuse, shared by every queue of one item type.
pub(crate) struct BlockPool<T> {
    blocks: ArrayQueue<Owned<T>>,
}

/// A block that no queue uses: owned by whoever holds this.
struct Owned<T>(NonNull<Block<T>>);

// SAFETY: an `Owned` is the only handle to its block (see `BlockPool::give`), which holds no
// value while it is in the pool (and could only hold `Send` ones).
unsafe impl<T: Send> Send for Owned<T> {}

impl<T> BlockPool<T> {
    /// An empty pool (none under loom, whose models leave blocks to the allocator).
    #[cfg(not(cohort_loom))]
    pub(crate) fn new() -> Self {
        Self {
            blocks: ArrayQueue::new(BLOCK_POOL),
        }
    }

    /// A block whose slots read as never written, if the pool has one.
    #[inline]
    pub(crate) fn take(&self) -> Option<*mut Block<T>> {
        self.blocks.pop().map(|b| b.0.as_ptr())
    }

    /// Keeps `b` for another queue, or frees it if the pool is full.
    ///
    /// # Safety
    /// `b` came from [`Block::alloc`], holds no value, and no thread touches it after this
    /// call.
    pub(crate) unsafe fn give(&self, b: *mut Block<T>) {
        // SAFETY: the caller owns `b`, alive and no longer shared.
        unsafe { (*b).clear() };
        // SAFETY: `Block::alloc` never returns null.
        let owned = Owned(unsafe { NonNull::new_unchecked(b) });
        if let Err(Owned(full)) = self.blocks.push(owned) {
            // SAFETY: as above: nobody else holds it, and it did not go to the pool.
            unsafe { Block::free(full.as_ptr()) };
        }
    }

    /// Frees every block the pool keeps (a worker's, before it parks or as it exits: a block
    /// kept from a burst may sit at the top of the heap and keep the allocator from giving the
    /// memory below it back).
    pub(crate) fn release_all(&self) {
        while let Some(b) = self.blocks.pop() {
            // SAFETY: the pool owned it.
            unsafe { Block::free(b.0.as_ptr()) };
        }
    }

    /// How many blocks the pool keeps now.
    #[cfg(all(test, not(cohort_loom)))]
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }
}

impl<T> Drop for BlockPool<T> {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;
    use crate::dispatcher::reuse::worker::run_with;
    use crate::queue::{EventQueue, QueueItem};
    use std::sync::LazyLock;
    use std::time::Duration;

    /// Runs every item pushed to a queue from outside (a dedicated worker on this thread,
    /// which pops by the slots' tags, so a stale tag would read as a value), returning them.
    fn push_and_run<T: QueueItem>(items: Vec<T>) -> Vec<T> {
        let n = items.len();
        let q = EventQueue::<T>::new();
        for it in items {
            q.push_remote(it);
        }
        let mut ran = Vec::new();
        run_with(&q, Duration::ZERO.into(), None, |it| {
            ran.push(it);
            if ran.len() == n {
                q.close();
            }
        });
        ran
    }

    #[derive(Debug, PartialEq)]
    struct Item(u64);

    impl QueueItem for Item {
        type Early = ();

        fn reject(self) {
            panic!("{self:?} was never executed");
        }

        fn block_pool() -> Option<&'static BlockPool<Self>> {
            static BLOCKS: LazyLock<BlockPool<Item>> = LazyLock::new(BlockPool::new);
            Some(&BLOCKS)
        }
    }

    /// A queue that takes a block from the pool reads only what was written to it: a block
    /// left with the tags of lap 1 (every queue's first) becomes the next queue's first
    /// block, and its old tags were cleared on the way in. Blocks a queue reads to its end
    /// while its spare is taken go to the pool.
    #[test]
    fn a_block_from_another_queue_reads_as_never_written() {
        let pool = Item::block_pool().unwrap();
        for n in [3, 31 + 3, 31 * 7 + 5] {
            pool.release_all();
            let stale = Block::<Item>::alloc();
            // SAFETY: `stale` is this test's own, alive block.
            unsafe { (*stale).tag_all_for_test(1) };
            // SAFETY: `stale` came from `Block::alloc`, holds no value, and is not used again.
            unsafe { pool.give(stale) };
            assert_eq!(pool.len(), 1);
            let items: Vec<u64> = (1_000..1_000 + n).collect();
            let ran = push_and_run(items.iter().map(|&i| Item(i)).collect());
            assert_eq!(ran, items.iter().map(|&i| Item(i)).collect::<Vec<_>>());
            if n > 31 * 2 {
                assert!(pool.len() > 0, "blocks read to their end went to the pool");
            }
        }
    }

    #[derive(Debug)]
    struct Bare;

    impl QueueItem for Bare {
        type Early = ();

        fn reject(self) {}

        fn block_pool() -> Option<&'static BlockPool<Self>> {
            static BLOCKS: LazyLock<BlockPool<Bare>> = LazyLock::new(BlockPool::new);
            Some(&BLOCKS)
        }
    }

    /// The pool keeps at most `BLOCK_POOL` blocks, frees the rest, and hands out blocks
    /// with every tag cleared.
    #[test]
    fn the_pool_is_bounded_and_clears_tags() {
        let pool = Bare::block_pool().unwrap();
        for _ in 0..BLOCK_POOL + 5 {
            let b = Block::<Bare>::alloc();
            // SAFETY: `b` is this test's own, alive block.
            unsafe { (*b).tag_all_for_test(9) };
            // SAFETY: `b` came from `Block::alloc`, holds no value, and is not used again.
            unsafe { pool.give(b) };
        }
        assert_eq!(pool.len(), BLOCK_POOL);
        while let Some(b) = pool.take() {
            // SAFETY: taken from the pool: this test's own.
            let (tagged, next) = unsafe { ((*b).tagged_for_test(), (*b).next_for_test()) };
            assert_eq!(tagged, 0);
            assert!(next.is_null());
            // SAFETY: as above.
            unsafe { Block::free(b) };
        }
    }
}
