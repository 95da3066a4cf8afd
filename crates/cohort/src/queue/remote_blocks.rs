//! The remote half of a queue (pool or dedicated): an unbounded multi-producer,
//! single-consumer list of blocks whose write index lives in the queue's state word.
//!
//! ```text
//!  senders' line:  state = [ write index | flags ]          Tail.block ──────────┐
//!                                                                                ▼
//!  runner line:    Head { index, block ──► [slot 0 .. slot BLOCK_CAP-1 | next] ──► [...] }
//!                       spare ──► [a block read to its end, kept for the next link]
//! ```
//!
//! A sender reserves index `i` in one compare-and-swap on the state (on a pool queue, the one
//! that flags the queue; so a send to a busy queue touches the state's line and one slot,
//! nothing else), writes slot `i % LAP` of the tail block and tags the slot with `i`'s lap. The runner knows from the
//! state how many indices are reserved, pops exactly those, and never reads a sender's line
//! to learn whether the queue is empty: no fence, no look at a tail, no compare-and-swap on a
//! head. A slot whose sender is between its reservation and its write stops the drain there
//! (the runner does not wait for it): a pool turn cannot end idle with the head behind the
//! index, so the queue runs again and finds it written; a dedicated worker does not sleep
//! with the head behind the index.
//! Offset `BLOCK_CAP` of each lap is a marker: the sender that took a block's last slot links
//! the next block in and steps the index over the marker; other senders wait meanwhile. A
//! block read to its end goes back to the queue as its `spare`, which the next link reuses,
//! or when the spare is taken to its item type's [`BlockPool`], where any queue's next link
//! finds it while messages flow: a queue that keeps receiving allocates nothing (a block
//! allocated by a sender and freed by the runner, as `crossbeam_queue::SegQueue` does, costs
//! a trip through the allocator's shared arena every block). The first block is linked by
//! the first remote push, so a queue that is only ever woken from idle (its demand in
//! `first`) never takes one.

use super::QueueItem;
use super::block_pool::BlockPool;
use crate::sync::{AtomicPtr, AtomicU64, HandOffCell, Ordering};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;

/// Slots per block.
#[cfg(not(cohort_loom))]
pub(crate) const BLOCK_CAP: u64 = 31;
/// Slots per block (small under loom, so that a model crosses blocks).
#[cfg(cohort_loom)]
pub(crate) const BLOCK_CAP: u64 = 3;
/// Indices per block: its slots and the marker.
pub(crate) const LAP: u64 = BLOCK_CAP + 1;

struct Slot<T> {
    value: HandOffCell<MaybeUninit<T>>,
    /// The lap (plus one) of the index whose value the slot holds, stored (release) once the
    /// value is written: a block reused for a later lap needs no reset.
    lap: AtomicU64,
}

/// A block of slots, linked to the next once its last slot is taken.
pub(crate) struct Block<T> {
    slots: [Slot<T>; BLOCK_CAP as usize],
    next: AtomicPtr<Block<T>>,
}

impl<T> Block<T> {
    pub(super) fn alloc() -> *mut Block<T> {
        Box::into_raw(Box::new(Block {
            slots: std::array::from_fn(|_| Slot {
                value: HandOffCell::new(MaybeUninit::uninit()),
                lap: AtomicU64::new(0),
            }),
            next: AtomicPtr::new(ptr::null_mut()),
        }))
    }

    /// # Safety
    /// `b` came from [`Block::alloc`], and no thread touches it after this call.
    pub(super) unsafe fn free(b: *mut Block<T>) {
        // SAFETY: caller.
        drop(unsafe { Box::from_raw(b) });
    }

    /// Tags every slot with `lap` (a test's stale block).
    #[cfg(all(test, not(cohort_loom)))]
    pub(super) fn tag_all_for_test(&self, lap: u64) {
        for s in &self.slots {
            s.lap.store(lap, Ordering::Relaxed);
        }
    }

    /// How many slots carry a tag.
    #[cfg(all(test, not(cohort_loom)))]
    pub(super) fn tagged_for_test(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.lap.load(Ordering::Relaxed) != 0)
            .count()
    }

    /// The link to the next block.
    #[cfg(all(test, not(cohort_loom)))]
    pub(super) fn next_for_test(&self) -> *mut Block<T> {
        self.next.load(Ordering::Relaxed)
    }

    /// Makes every slot read as never written and unlinks the block, for another queue
    /// (whose laps its old tags could match).
    pub(super) fn clear(&self) {
        for s in &self.slots {
            s.lap.store(0, Ordering::Relaxed);
        }
        self.next.store(ptr::null_mut(), Ordering::Relaxed);
    }
}

/// The tag of index `i`'s slot once written.
#[inline]
fn lap_tag(i: u64) -> u64 {
    i / LAP + 1
}

/// How many values the indices `from..to` hold (markers left out).
#[inline]
pub(crate) fn count(from: u64, to: u64) -> u64 {
    let values = |i: u64| i / LAP * BLOCK_CAP + (i % LAP).min(BLOCK_CAP);
    values(to) - values(from)
}

/// True when index `i` is a marker: another sender is linking the next block in, and a
/// sender must read the state again before it reserves.
#[inline]
pub(crate) fn is_marker(i: u64) -> bool {
    i % LAP == BLOCK_CAP
}

/// The marker of the lap that index `i` falls in.
#[inline]
pub(crate) fn marker_of(i: u64) -> u64 {
    i - i % LAP + BLOCK_CAP
}

/// True when index `i` is a block's last slot: its sender links the next block.
#[inline]
pub(crate) fn is_last_slot(i: u64) -> bool {
    i % LAP + 1 == BLOCK_CAP
}

/// The senders' end: the block that the state's write index falls in (null until the first
/// remote push).
pub(crate) struct Tail<T> {
    block: AtomicPtr<Block<T>>,
}

impl<T: QueueItem> Tail<T> {
    pub(crate) fn new() -> Self {
        Self {
            block: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The tail block, to be read after the state (acquire) and before the reservation;
    /// links the first block in if there is none yet.
    #[inline]
    pub(crate) fn block(&self, head: &Head<T>) -> *mut Block<T> {
        let b = self.block.load(Ordering::Acquire);
        if !b.is_null() {
            return b;
        }
        self.link_first(head)
    }

    /// The tail block as it is now (null before the first link, or while a first link is
    /// between the head's block and this one).
    #[inline]
    pub(crate) fn current(&self) -> *mut Block<T> {
        self.block.load(Ordering::Acquire)
    }

    /// Forgets the tail block, so that the next push links a first block again (see
    /// [`Head::retire`]).
    pub(crate) fn unlink(&self) {
        self.block.store(ptr::null_mut(), Ordering::Release);
    }

    #[cold]
    fn link_first(&self, head: &Head<T>) -> *mut Block<T> {
        let fresh = head.take_block();
        // The head's block goes from null to the first block once, and whoever sets it
        // publishes it as the tail block; the others use the block it set. The runner reads
        // the head's block only after an index reserved by a sender that read one of the two
        // (acquire-release all along).
        match head.block.compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                // Only from null: a sender that got the first block from the head may have
                // linked the next one already (then this one is not the tail any more).
                let _ = self.block.compare_exchange(
                    ptr::null_mut(),
                    fresh,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                fresh
            }
            Err(first) => {
                head.give_back(fresh);
                first
            }
        }
    }

    /// The sender's part of a push, after its reservation of index `i` in `block`: links
    /// `next` in if `i` is the block's last slot, then writes the value `make` builds (in
    /// place) and tags the slot.
    ///
    /// # Safety
    /// The caller reserved `i` (its compare-and-swap moved the state's index from `i`),
    /// `block` is what [`Tail::block`] returned before that reservation, and `next` is a block
    /// from [`Head::take_block`] when [`is_last_slot`]`(i)` (ignored otherwise).
    ///
    /// Always inlined: `make` arrives as a closure that the sender's reservation loop keeps
    /// in memory, and a call would copy it out with loads that span the stores that wrote
    /// its words (a stall of the sender per message); inlined, its words are read one by one.
    #[inline(always)]
    pub(crate) unsafe fn write(
        &self,
        block: *mut Block<T>,
        i: u64,
        next: *mut Block<T>,
        step_over_marker: impl FnOnce(),
        make: impl FnOnce() -> T,
    ) {
        if is_last_slot(i) {
            // The index now rests on the marker and every other sender waits for the new
            // block, installed before the index leaves the marker (release: a sender that
            // reads the index past it reads this block). `next` before this slot's value, so
            // the runner that has read the value finds the link.
            self.block.store(next, Ordering::Release);
            step_over_marker();
            // SAFETY: the caller reserved a slot of `block`, which lives until the runner has
            // read every one of its slots, this one included (written below).
            unsafe { (*block).next.store(next, Ordering::Release) };
        }
        // SAFETY: as above.
        let slot = unsafe { &(*block).slots[(i % LAP) as usize] };
        // SAFETY: this sender is the slot's only writer in this lap (one reservation per
        // index), and the runner reads it only after the tag (and is done with the previous
        // lap's value: the block came back through `spare`, release-acquire).
        unsafe { slot.value.with_mut(|v| *v = MaybeUninit::new(make())) };
        slot.lap.store(lap_tag(i), Ordering::Release);
    }
}

/// The runner's end: its read index, the block that holds it, and a block kept for reuse.
pub(crate) struct Head<T> {
    /// The next index to read; the runner's alone.
    index: UnsafeCell<u64>,
    /// The block that holds `index`: set once by the first remote push, then by the runner.
    block: AtomicPtr<Block<T>>,
    /// A block read to its end, for the next sender that links a block in.
    spare: AtomicPtr<Block<T>>,
}

impl<T: QueueItem> Head<T> {
    pub(crate) fn new() -> Self {
        Self {
            index: UnsafeCell::new(0),
            block: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// A block for a sender to link in: the spare if there is one, else one from the pool,
    /// else a new one.
    #[inline]
    pub(crate) fn take_block(&self) -> *mut Block<T> {
        // Acquire: the runner's release of the spare, after its last read of it.
        let b = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
        if !b.is_null() {
            return b;
        }
        T::block_pool()
            .and_then(BlockPool::take)
            .unwrap_or_else(Block::alloc)
    }

    /// A block nobody uses: kept as the spare if there is none, else given to the pool (which
    /// frees it when full).
    pub(crate) fn give_back(&self, b: *mut Block<T>) {
        if self
            .spare
            .compare_exchange(ptr::null_mut(), b, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: no thread holds `b` (caller), it holds no value (read to its end, or
            // never written), and it did not become the spare.
            unsafe { self.pool_or_free(b) };
        }
    }

    /// The next index to read.
    ///
    /// # Safety
    /// Only the queue's runner calls this.
    #[inline]
    pub(crate) unsafe fn index(&self) -> u64 {
        // SAFETY: caller.
        unsafe { *self.index.get() }
    }

    /// Whether the value at the head is written: what a reader waiting for its next value
    /// polls, the slot itself, on the line its sender writes, rather than the state (which
    /// its senders then keep on their own core for their reservations). `None` before the
    /// first block is linked (the caller looks at the state instead).
    ///
    /// # Safety
    /// Only the queue's runner calls this.
    #[inline]
    pub(crate) unsafe fn next_is_written(&self) -> Option<bool> {
        // SAFETY: caller: the index is the runner's alone.
        let mut index = unsafe { *self.index.get() };
        // Acquire: the first block was linked by a sender (`link_first`), and this reader may
        // not have read the state since.
        let mut block = self.block.load(Ordering::Acquire);
        if block.is_null() {
            return None;
        }
        if index % LAP == BLOCK_CAP {
            // At the marker: the next index is the next block's first, linked before the
            // last slot's value, which this runner has read.
            // SAFETY: the block is alive: the runner passes it only in `pop`.
            block = unsafe { (*block).next.load(Ordering::Acquire) };
            if block.is_null() {
                return Some(false);
            }
            index += 1;
        }
        // SAFETY: the block holds the index and is alive.
        let slot = unsafe { &(*block).slots[(index % LAP) as usize] };
        Some(slot.lap.load(Ordering::Acquire) == lap_tag(index))
    }

    /// Whether a block was linked in (by the first remote push).
    #[inline]
    pub(crate) fn has_block(&self) -> bool {
        !self.current().is_null()
    }

    /// Whether the head keeps a block, linked or spare (a sender that took a block for a
    /// link it did not make may leave it as the spare of a queue with none linked).
    #[inline]
    pub(crate) fn keeps_a_block(&self) -> bool {
        self.has_block() || !self.spare.load(Ordering::Acquire).is_null()
    }

    /// Whether the head keeps no block at all (the tests' view of an idle queue).
    #[cfg(test)]
    pub(crate) fn keeps_no_block(&self) -> bool {
        !self.keeps_a_block()
    }

    /// The block that holds the head (null before the first link).
    #[inline]
    pub(crate) fn current(&self) -> *mut Block<T> {
        self.block.load(Ordering::Acquire)
    }

    /// Gives the spare, if any, to the item type's pool (or frees it): the queue goes idle.
    pub(crate) fn release_spare(&self) {
        // Acquire: the release of whoever left it (a runner that read it to its end, or a
        // sender that took it for a link it did not make).
        let b = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
        if !b.is_null() {
            // SAFETY: taken out of the spare by this swap: this thread's alone, and it holds
            // no value (read to its end, or never written).
            unsafe { self.pool_or_free(b) };
        }
    }

    /// Gives the head's block, `block`, to the item type's pool (or frees it) and moves the
    /// head to the next lap's first index, where a push links a first block again.
    ///
    /// # Safety
    /// Only the queue's runner calls this, having read every reserved index, with the
    /// state's index resting on the head's lap marker (no sender can reserve, so none
    /// writes a slot), `block` the head's non-null block, which was the tail's too, and the
    /// tail unlinked since.
    pub(crate) unsafe fn retire(&self, block: *mut Block<T>) -> u64 {
        debug_assert!(!block.is_null());
        // The head's block goes from non-null to null only here: a sender's first link
        // (from null) cannot have replaced it.
        self.block.store(ptr::null_mut(), Ordering::Release);
        // SAFETY: every value of `block` was read and no sender can reserve a slot of it
        // (caller); a sender that read it before the marker fails its reservation.
        unsafe { self.pool_or_free(block) };
        // SAFETY: caller: the index is the runner's alone.
        let index = unsafe { &mut *self.index.get() };
        *index = marker_of(*index) + 1;
        *index
    }

    /// # Safety
    /// `b` came from [`Block::alloc`], holds no value, and no thread uses it after this call.
    unsafe fn pool_or_free(&self, b: *mut Block<T>) {
        match T::block_pool() {
            // SAFETY: caller.
            Some(pool) => unsafe { pool.give(b) },
            // SAFETY: caller.
            None => unsafe { Block::free(b) },
        }
    }

    /// Takes the value at the head if the head is before `tail` (the state's index, read
    /// with acquire) and its sender has written it, stepping over markers into the next
    /// blocks (the passed one becomes the spare).
    ///
    /// # Safety
    /// Only the queue's runner calls this (one consumer), with a `tail` read from the state.
    #[inline]
    pub(crate) unsafe fn pop(&self, tail: u64) -> Option<T> {
        // SAFETY: caller: the index is the runner's alone.
        let index = unsafe { &mut *self.index.get() };
        loop {
            if *index == tail {
                return None;
            }
            // Acquire: the first block was linked by a sender (a reader that pops by the
            // slots' tags, without a look at the state, learns of it only here).
            let block = self.block.load(Ordering::Acquire);
            let off = *index % LAP;
            if off == BLOCK_CAP {
                // Every slot of this block was read; the sender of its last slot linked the
                // next one before writing that slot, which this runner has read (acquire).
                // SAFETY: the block is alive: the runner passes it only here.
                let next = unsafe { (*block).next.load(Ordering::Acquire) };
                debug_assert!(!next.is_null());
                // SAFETY: no sender touches a block once its last slot is written (each
                // sender's last access is its slot's tag), and every slot was read.
                unsafe { (*block).next.store(ptr::null_mut(), Ordering::Relaxed) };
                self.block.store(next, Ordering::Relaxed);
                self.give_back(block);
                *index += 1;
                continue;
            }
            // SAFETY: the block holds this index and is alive (passed only at its marker).
            let slot = unsafe { &(*block).slots[off as usize] };
            if slot.lap.load(Ordering::Acquire) != lap_tag(*index) {
                // Reserved, not yet written: the turn ends with the head behind the index,
                // so not in idle, and the next one reads it.
                return None;
            }
            *index += 1;
            // SAFETY: the tag (acquire) says the value is written; this runner reads it once
            // (the index moved on) and no sender writes it again before the block is reused.
            return Some(unsafe { slot.value.with_mut(|v| v.assume_init_read()) });
        }
    }

    /// Rejects the values still queued (up to `tail`) and frees the blocks.
    ///
    /// # Safety
    /// No sender is left (the queue is being dropped: every reserved slot is written), and
    /// `tail` is the state's last index.
    pub(crate) unsafe fn free_all(&mut self, tail: u64, mut reject: impl FnMut(T)) {
        // SAFETY: caller: this thread is the only one left.
        while let Some(v) = unsafe { self.pop(tail) } {
            reject(v);
        }
        for b in [
            self.block.swap(ptr::null_mut(), Ordering::Relaxed),
            self.spare.swap(ptr::null_mut(), Ordering::Relaxed),
        ] {
            if !b.is_null() {
                // SAFETY: owned by this queue alone now; the head's block has no next (no
                // sender is left, and the last one stepped the index over any marker). Not to
                // the pool: a queue dropped after a burst would leave blocks from the heap's
                // top there.
                unsafe { Block::free(b) };
            }
        }
    }
}
