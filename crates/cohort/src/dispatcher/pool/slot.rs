//! A pool worker's LIFO slot: the queue this worker runs next.
//!
//! Only the slot's owner fills it, and it empties it at the next turn, so its hand-off is
//! plain stores and loads; another worker takes from it (steals) only when it sees a queue
//! stranded there, and then pays for both sides. The owner and a thief exclude each other as
//! in Dekker's algorithm, each saying it takes before it looks whether the other does, with
//! the [asymmetric fence pair](super::asymmetric_fence) between the two: the owner's side is
//! a compiler fence (once the process is registered for `membarrier`).
//!
//! ```text
//!   owner (take)                         thief (steal)
//!   taking = true                        stealing: false -> true   (one thief at a time)
//!   light fence                          heavy fence
//!   stealing? -> swap the slot           taking? -> give up, the owner has it
//!   else: q = slot; slot = null          else: slot: q -> null (the q it saw)
//!   taking = false                       stealing = false
//! ```

use super::QueueRef;
use super::asymmetric_fence::{OwnerFence, heavy_fence};
use crate::queue::{EventQueue, Scheduled};
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

/// A worker's LIFO slot: the queue a send from this worker just woke (or its own queue, when
/// nothing else waits), run next by this worker. Another worker takes it only if it stays
/// there through one long turn of its owner (longer than
/// [`defaults::SLOT_STEAL_AFTER`](crate::defaults::SLOT_STEAL_AFTER)): a handler that blocks
/// does not strand the agents it woke, while ordinary hand-offs keep their cache affinity.
pub(crate) struct Slot {
    /// A queue held by the slot (from `Scheduled::into_raw`), or null. Only the owner stores
    /// a queue here; a thief only swaps it out.
    queue: AtomicPtr<EventQueue>,
    /// The owner is taking the queue out (see the module's drawing).
    taking: AtomicBool,
    /// A thief is taking the queue out.
    stealing: AtomicBool,
    /// Turns started by the owner.
    turns: AtomicUsize,
    /// The owner's side of the fence pair.
    fence: OwnerFence,
}

/// The right to fill and empty slot `index` with plain stores: one per worker, made by the
/// worker's thread for itself and kept there (it is not `Send`).
pub(crate) struct SlotOwner {
    index: usize,
    _this_thread: PhantomData<*const ()>,
}

impl SlotOwner {
    /// The owner of slot `index`. Only worker `index`'s own loop makes one, once.
    pub(crate) fn new(index: usize) -> Self {
        Self {
            index,
            _this_thread: PhantomData,
        }
    }
}

/// A slot seen by its owner.
pub(crate) struct OwnSlot<'a>(&'a Slot);

impl<'a> OwnSlot<'a> {
    /// `owner`'s slot among `slots`.
    #[inline]
    pub(crate) fn of(slots: &'a [CachePadded<Slot>], owner: &SlotOwner) -> Self {
        Self(&slots[owner.index])
    }

    /// Puts `q` in the slot; returns the queue it displaced. Empty, it is filled with a store
    /// followed by the light fence: a worker that parks with no time limit announces it
    /// before a heavy fence and looks at the slots after (see `wake_forever_parked`).
    #[inline]
    pub(crate) fn put(&self, q: QueueRef) -> Option<QueueRef> {
        let slot = self.0;
        if slot.queue.load(Ordering::Relaxed).is_null() {
            // A thief only ever empties the slot: it stays empty until this store.
            slot.queue.store(q.into_raw(), Ordering::Release);
            slot.fence.owner_fence();
            return None;
        }
        // A thief may be taking the queue there: swap it out.
        let old = slot.queue.swap(q.into_raw(), Ordering::SeqCst);
        // SAFETY: a non-null slot pointer always comes from `Scheduled::into_raw` and is held
        // by the slot; the swap transferred it to us.
        (!old.is_null()).then(|| unsafe { Scheduled::from_raw(old) })
    }

    /// Takes the queue out of the slot.
    #[inline]
    pub(crate) fn take(&self) -> Option<QueueRef> {
        let slot = self.0;
        if slot.queue.load(Ordering::Relaxed).is_null() {
            return None;
        }
        slot.taking.store(true, Ordering::Relaxed);
        slot.fence.owner_fence();
        // Acquire: a thief that finished before this load emptied the slot; its swap is seen.
        let old = if slot.stealing.load(Ordering::Acquire) {
            slot.queue.swap(std::ptr::null_mut(), Ordering::AcqRel)
        } else {
            // No thief looks at the slot now, or one will see `taking` and give up.
            let old = slot.queue.load(Ordering::Relaxed);
            slot.queue.store(std::ptr::null_mut(), Ordering::Relaxed);
            old
        };
        // Release: a thief that sees this store sees the slot emptied.
        slot.taking.store(false, Ordering::Release);
        // SAFETY: as in `put`; the owner's plain path excludes thieves (the module's drawing).
        (!old.is_null()).then(|| unsafe { Scheduled::from_raw(old) })
    }

    /// The owner begins a turn. Only the owner writes the count: a plain store, no
    /// read-modify-write.
    #[inline]
    pub(crate) fn count_turn(&self) {
        let turns = &self.0.turns;
        turns.store(
            turns.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Release,
        );
    }
}

impl Slot {
    pub(crate) fn new() -> Self {
        Self {
            queue: AtomicPtr::new(std::ptr::null_mut()),
            taking: AtomicBool::new(false),
            stealing: AtomicBool::new(false),
            turns: AtomicUsize::new(0),
            fence: OwnerFence::new(),
        }
    }

    /// Takes the queue out of another worker's slot; `None` if it is empty, or if its owner or
    /// another thief is taking it or has just done so.
    pub(crate) fn steal(&self) -> Option<QueueRef> {
        let seen = self.queue.load(Ordering::Relaxed);
        if seen.is_null()
            || self
                .stealing
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        heavy_fence(|| self.fence.is_light());
        // Acquire: an owner that finished taking before this load emptied the slot. Only the
        // queue seen is taken: if the owner took it meanwhile the slot holds another or none
        // (the same queue again is held by the slot again, and as good to take).
        let took = !self.taking.load(Ordering::Acquire)
            && self
                .queue
                .compare_exchange(
                    seen,
                    std::ptr::null_mut(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok();
        self.stealing.store(false, Ordering::Release);
        // SAFETY: as in `OwnSlot::put`; the compare-and-swap transferred it to us.
        took.then(|| unsafe { Scheduled::from_raw(seen) })
    }

    /// Whether a queue is in the slot. `SeqCst`: with the fences, ordered against a filler's
    /// store and a parking worker's announcement (see `ForeverParked`).
    pub(crate) fn is_occupied(&self) -> bool {
        !self.queue.load(Ordering::SeqCst).is_null()
    }

    /// Turns the owner has begun.
    pub(crate) fn turns(&self) -> usize {
        self.turns.load(Ordering::Acquire)
    }

    /// Whether the owner's side of the fence pair may be a compiler fence alone.
    pub(crate) fn owner_fence_is_light(&self) -> bool {
        self.fence.is_light()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let old = self.queue.load(Ordering::Relaxed);
        // SAFETY: as in `OwnSlot::put`; `&mut self`: nobody else holds the slot.
        drop((!old.is_null()).then(|| unsafe { Scheduled::from_raw(old) }));
    }
}
