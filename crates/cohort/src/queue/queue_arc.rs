//! [`QueueArc`]: a strong reference to an [`EventQueue`], whose count lives in the queue's
//! first cache line.
//!
//! A queue is three cache lines and aligned to one. In a `std::sync::Arc` its two counts
//! would come first, padded to a line of their own: a fourth line per queue, and a queue per
//! agent on a pool with individual FIFO. The count lives instead beside what never changes
//! after creation (how to make the queue run, its limits), which senders read; it moves only
//! when a queue is bound, unbound or handed to a new owner, never at a send or a turn of a
//! bound queue (a pool's hand-offs borrow the pool's count, see [`Scheduled`]). There are no
//! weak references.
//!
//! A queue is only ever made inside a `QueueArc` (its constructors return one), so a plain
//! reference to a queue is enough to take a new strong reference ([`QueueArc::from_ref`]).
//!
//! [`Scheduled`]: super::Scheduled

use super::event_queue::{EventQueue, QueueItem};
use crate::agent::demand::Demand;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

/// Where a queue's strong count can go before it wraps: `Arc`'s own bound, so that a leak of
/// counts (`mem::forget` in a loop) aborts rather than frees a queue in use.
const MAX_REFS: usize = isize::MAX as usize;

/// A queue's strong count (a field of the queue, see the module doc).
pub(super) struct RefCount(AtomicUsize);

impl RefCount {
    /// The count of a queue just made: its first `QueueArc`.
    pub(super) fn one() -> Self {
        RefCount(AtomicUsize::new(1))
    }
}

/// A strong reference to an [`EventQueue`] (what `Arc<EventQueue<T>>` would be, in the
/// queue's own three lines).
pub(crate) struct QueueArc<T: QueueItem = Demand> {
    ptr: NonNull<EventQueue<T>>,
}

// SAFETY: a `QueueArc` is a shared reference to a `Send + Sync` queue, counted atomically,
// which the last holder drops: as `Arc<EventQueue<T>>` is.
unsafe impl<T: QueueItem> Send for QueueArc<T> {}
// SAFETY: as above.
unsafe impl<T: QueueItem> Sync for QueueArc<T> {}

impl<T: QueueItem> QueueArc<T> {
    /// Moves `queue` to the heap; its count (made by [`RefCount::one`]) is this reference.
    pub(super) fn new(queue: EventQueue<T>) -> Self {
        debug_assert_eq!(queue.refs.0.load(Ordering::Relaxed), 1);
        QueueArc {
            ptr: NonNull::from(Box::leak(Box::new(queue))),
        }
    }

    /// A new strong reference to `queue` (every queue lives in a `QueueArc`'s allocation,
    /// and `queue` borrows one of its references).
    #[inline]
    pub(crate) fn from_ref(queue: &EventQueue<T>) -> Self {
        // Relaxed, as `Arc::clone`: the caller's reference keeps the queue alive, and a new
        // reference orders nothing.
        if queue.refs.0.fetch_add(1, Ordering::Relaxed) >= MAX_REFS {
            std::process::abort();
        }
        QueueArc {
            ptr: NonNull::from(queue),
        }
    }

    /// The queue's address (for identity; the reference keeps it alive).
    #[inline]
    pub(crate) fn as_ptr(this: &Self) -> *const EventQueue<T> {
        this.ptr.as_ptr()
    }

    /// Whether `a` and `b` are the same queue.
    #[inline]
    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    /// The reference as an address, for a holder that keeps it tagged or in an atomic; the
    /// count stays taken until [`from_raw`](Self::from_raw) gives it back.
    #[inline]
    pub(crate) fn into_raw(this: Self) -> *const EventQueue<T> {
        std::mem::ManuallyDrop::new(this).ptr.as_ptr()
    }

    /// The reference [`into_raw`](Self::into_raw) made of `p`, or a count taken with
    /// [`forget_one`](Self::forget_one) on the queue at `p`.
    ///
    /// # Safety
    /// `p` is a queue's address whose count includes one that no other reference stands for,
    /// and that this call takes over.
    #[inline]
    pub(crate) unsafe fn from_raw(p: *const EventQueue<T>) -> Self {
        QueueArc {
            // SAFETY: a queue's address (caller), so not null.
            ptr: unsafe { NonNull::new_unchecked(p.cast_mut()) },
        }
    }

    /// How many references the queue has (the tests' check of who holds it; a sweep list's
    /// look for queues only it still holds, which nothing can give a new reference).
    pub(crate) fn strong_count(this: &Self) -> usize {
        this.refs.0.load(Ordering::Acquire)
    }

    /// The queue, if this is its only reference (the tests' look inside after a worker is
    /// gone).
    #[cfg(all(test, not(cohort_loom)))]
    pub(crate) fn get_mut(this: &mut Self) -> Option<&mut EventQueue<T>> {
        // Acquire, as `Arc::get_mut`: the other holders' uses happen before this one.
        if this.refs.0.load(Ordering::Acquire) != 1 {
            return None;
        }
        // SAFETY: the only reference, borrowed mutably: nothing else reaches the queue.
        Some(unsafe { this.ptr.as_mut() })
    }

    /// Takes one more count of the queue that no `QueueArc` stands for (a pool's count of
    /// its queue; given back with [`from_raw`](Self::from_raw) and a drop).
    #[inline]
    pub(crate) fn forget_one(this: &Self) {
        std::mem::forget(Self::from_ref(this));
    }
}

impl<T: QueueItem> Clone for QueueArc<T> {
    #[inline]
    fn clone(&self) -> Self {
        Self::from_ref(self)
    }
}

impl<T: QueueItem> Deref for QueueArc<T> {
    type Target = EventQueue<T>;

    #[inline]
    fn deref(&self) -> &EventQueue<T> {
        // SAFETY: the count this reference stands for keeps the queue alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: QueueItem> Drop for QueueArc<T> {
    #[inline]
    fn drop(&mut self) {
        // Release, then an acquire fence by the last holder, as `Arc`'s drop: every use of the
        // queue through another reference happens before the queue is dropped.
        if self.refs.0.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: the last count is gone, so this is the last reference, and the queue was
        // made by `Box::new` in `new`.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;
    use crate::queue::test_item::Item;

    /// A scheduler that is never called: the queue's hold of it shows whether the queue
    /// was dropped.
    struct NeverScheduled;
    impl crate::queue::Schedule<Item<u32>> for NeverScheduled {
        fn schedule(&self, _: crate::queue::Scheduled<Item<u32>>) {
            unreachable!("nothing is pushed");
        }
    }

    #[test]
    fn the_last_reference_drops_the_queue() {
        let scheduler = std::sync::Arc::new(NeverScheduled);
        let q: QueueArc<Item<u32>> = EventQueue::pooled(scheduler.clone(), 4);
        assert_eq!(std::sync::Arc::strong_count(&scheduler), 2);
        let (a, b) = (q.clone(), QueueArc::from_ref(&q));
        assert!(QueueArc::ptr_eq(&a, &b));
        assert_eq!(QueueArc::strong_count(&q), 3);
        drop((a, b));
        let raw = QueueArc::into_raw(q);
        // SAFETY: `raw` came from `into_raw`, which kept the one count left.
        let q = unsafe { QueueArc::from_raw(raw) };
        assert_eq!(QueueArc::strong_count(&q), 1);
        drop(q);
        assert_eq!(std::sync::Arc::strong_count(&scheduler), 1);
    }

    #[test]
    fn a_queue_in_its_arc_takes_three_lines() {
        assert_eq!(std::mem::size_of::<EventQueue>(), 192);
        assert_eq!(std::mem::align_of::<EventQueue>(), 64);
    }
}
