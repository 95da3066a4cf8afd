//! A pool worker's LIFO slot: the queue this worker runs next.

use super::QueueRef;
use crate::queue::{EventQueue, Scheduled};
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};

/// A worker's LIFO slot: the queue a send from this worker just woke (or its own queue, when
/// nothing else waits), run next by this worker. Another worker takes it only if it stays
/// there through one long turn of its owner (longer than
/// [`defaults::SLOT_STEAL_AFTER`](crate::defaults::SLOT_STEAL_AFTER)): a handler that blocks
/// does not strand the agents it woke, while ordinary hand-offs keep their cache affinity.
pub(crate) struct Slot {
    /// A queue held by the slot (from `Scheduled::into_raw`), or null.
    queue: AtomicPtr<EventQueue>,
    /// Turns started by the owner.
    turns: AtomicUsize,
}

impl Slot {
    pub(crate) fn new() -> Self {
        Self {
            queue: AtomicPtr::new(std::ptr::null_mut()),
            turns: AtomicUsize::new(0),
        }
    }

    /// Puts `q` in the slot; returns the queue it displaced.
    pub(crate) fn put(&self, q: QueueRef) -> Option<QueueRef> {
        let old = self
            .queue
            // SeqCst: ordered with a worker announcing it parks (see `wake_forever_parked`).
            .swap(q.into_raw(), Ordering::SeqCst);
        // SAFETY: a non-null slot pointer always comes from `Scheduled::into_raw` above and is
        // held by the slot; the swap transferred it to us.
        (!old.is_null()).then(|| unsafe { Scheduled::from_raw(old) })
    }

    /// Takes the queue out of the slot.
    pub(crate) fn take(&self) -> Option<QueueRef> {
        if self.queue.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let old = self.queue.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: as in `put`.
        (!old.is_null()).then(|| unsafe { Scheduled::from_raw(old) })
    }

    pub(crate) fn is_occupied(&self) -> bool {
        !self.queue.load(Ordering::SeqCst).is_null()
    }

    /// The owner begins a turn. Only the owner writes the count: a plain store, no
    /// read-modify-write.
    #[inline]
    pub(crate) fn count_turn(&self) {
        let turns = &self.turns;
        turns.store(
            turns.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Release,
        );
    }

    /// Turns the owner has begun.
    pub(crate) fn turns(&self) -> usize {
        self.turns.load(Ordering::Acquire)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.take());
    }
}
