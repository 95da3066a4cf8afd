//! [`Scheduled`]: the one hold on a pool queue from the claim that schedules it to the turn
//! that leaves it idle.
//!
//! A pool queue goes from idle to scheduled when a sender claims it, and back when a turn
//! reads it dry; in between exactly one party holds it (a run queue, a LIFO slot, a worker in
//! its turn), through a `Scheduled`. While the queue is bound, its pool keeps one strong count
//! of it ([`QueueArc::hold_for_pool`]), given back once the queue is unbound and idle; a
//! `Scheduled` made while the queue is bound borrows that count. So a hand-off to a pool
//! moves no reference count, whose line would otherwise go to the sender's core and back to
//! the runner's at every wake-up. A claim after the queue is unbound takes a count of its own.

use super::event_queue::{EventQueue, QueueItem};
use super::queue_arc::QueueArc;
use crate::agent::demand::Demand;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;

/// The tag of a `Scheduled` that owns a strong count: a queue is aligned to a cache line, so
/// the low bits of its address are free.
const OWNS: usize = 1;

/// The hold on a scheduled pool queue: single owner, moved from the claiming sender to a run
/// queue to the worker whose turn ends it. A turn that leaves the queue idle ends it with
/// [`went_idle`](Self::went_idle); dropped any other way (the pool's workers are gone), it
/// rejects what the queue holds and leaves it idle, so nothing is lost unseen.
pub(crate) struct Scheduled<T: QueueItem = Demand> {
    /// The queue's address, tagged with [`OWNS`].
    tagged: NonNull<EventQueue<T>>,
}

// SAFETY: a `Scheduled` stands for a shared reference to a `Sync + Send` queue, or a `QueueArc` of
// it, and is moved between the threads of a pool as either would be.
unsafe impl<T: QueueItem> Send for Scheduled<T> {}

impl<T: QueueItem> Scheduled<T> {
    /// The hold of the sender that just claimed `q`: while `q` is bound (`unbound` false) it
    /// borrows the pool's count, else it takes a count of its own.
    ///
    /// # Safety
    /// The caller's compare-and-swap set `SCHEDULED` on `q`'s state, which had `UNBOUND` as
    /// `unbound` says: the pool's count, if borrowed, is given back only by a turn that
    /// leaves `q` idle after it is unbound (see `release_pool_hold`), so it outlives this hold.
    #[inline]
    pub(super) unsafe fn claimed(q: &EventQueue<T>, unbound: bool) -> Self {
        if unbound {
            return Self::from_arc(QueueArc::from_ref(q));
        }
        Scheduled {
            tagged: NonNull::from(q),
        }
    }

    /// A hold that owns the count `q` is (`adv_thread_pool`'s last thread-safe demand
    /// schedules its queue again this way; tests).
    pub(crate) fn from_arc(q: QueueArc<T>) -> Self {
        let p = QueueArc::into_raw(q).cast_mut();
        Scheduled {
            // SAFETY: from `QueueArc::into_raw`, so not null; the tag keeps it not null.
            tagged: unsafe { NonNull::new_unchecked(p.map_addr(|a| a | OWNS)) },
        }
    }

    /// The queue's address.
    #[inline]
    fn ptr(&self) -> *const EventQueue<T> {
        self.tagged.as_ptr().map_addr(|a| a & !OWNS)
    }

    #[inline]
    fn owns(&self) -> bool {
        self.tagged.as_ptr().addr() & OWNS != 0
    }

    /// A new strong reference to the queue.
    pub(crate) fn arc(&self) -> QueueArc<T> {
        QueueArc::from_ref(self)
    }

    /// The hold as a tagged address, for a slot that keeps it in an `AtomicPtr`.
    pub(crate) fn into_raw(self) -> *mut EventQueue<T> {
        ManuallyDrop::new(self).tagged.as_ptr()
    }

    /// The hold [`into_raw`](Self::into_raw) made of `p`.
    ///
    /// # Safety
    /// `p` came from `into_raw`, and this is the one hold made of it.
    pub(crate) unsafe fn from_raw(p: *mut EventQueue<T>) -> Self {
        Scheduled {
            // SAFETY: `into_raw` gave a tagged, non-null address.
            tagged: unsafe { NonNull::new_unchecked(p) },
        }
    }

    /// The turn left the queue idle: the hold ends. `release`: the queue was unbound while
    /// scheduled, and its pool's count goes now (see [`TurnOutcome::Idle`]).
    ///
    /// [`TurnOutcome::Idle`]: super::TurnOutcome::Idle
    #[inline]
    pub(crate) fn went_idle(self, release: bool) {
        ManuallyDrop::new(self).end(release);
    }

    /// The queue stays scheduled, and whoever it went to will schedule it again
    /// (`adv_thread_pool`'s thread-safe demands): this hold ends, the schedule does not.
    pub(crate) fn hand_over(self) {
        ManuallyDrop::new(self).end(false);
    }

    /// Nobody will run the queue (its pool's workers are gone): rejects what it holds, as
    /// every turn from now on would, and leaves it idle.
    pub(crate) fn abandon(self) {
        drop(self);
    }

    /// Gives back the counts this hold ends with: the pool's when `release`, its own.
    #[inline]
    fn end(&self, release: bool) {
        let (p, owns) = (self.ptr(), self.owns());
        #[cfg(cohort_loom)]
        if release {
            self.note_pool_count_gone();
        }
        // SAFETY: the pool's count is given back once (the state's `RELEASE_AT_IDLE`, cleared
        // by the turn that read it); a hold that owns a count gives back that one, once (the
        // hold is consumed). With both, the first leaves one.
        unsafe {
            if release {
                drop(QueueArc::from_raw(p));
            }
            if owns {
                drop(QueueArc::from_raw(p));
            }
        }
    }
}

impl<T: QueueItem> Deref for Scheduled<T> {
    type Target = EventQueue<T>;

    #[inline]
    fn deref(&self) -> &EventQueue<T> {
        // SAFETY: the queue is alive while it is held (see `claimed`).
        let q = unsafe { &*self.ptr() };
        #[cfg(cohort_loom)]
        assert!(
            self.owns() || !q.pool_count_gone.load(std::sync::atomic::Ordering::SeqCst),
            "a hold borrows the pool's count after it was given back"
        );
        q
    }
}

impl<T: QueueItem> Drop for Scheduled<T> {
    /// See [`abandon`](Self::abandon).
    fn drop(&mut self) {
        let release = self.reject_until_idle();
        self.end(release);
    }
}
