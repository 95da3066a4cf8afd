//! One scheduled timer: its message, its receiver, and the lock that orders firing against
//! cancellation.
//!
//! A task is one allocation (`Arc`) shared by the timer queue and the `TimerHandle`.
//! Its message sits in a `Mutex<Option<M>>`: `Some` while the timer is
//! active, `None` once it has fired for the last time or was cancelled. The timer thread
//! delivers while holding that lock, and `cancel` takes the same lock, so a cancel either
//! comes first (nothing is delivered) or waits until the delivery in progress is queued at
//! the receiver; after `cancel` returns nothing more is delivered.

use crate::mailbox::Mbox;
use crate::mailbox::dead_letter::{DeadLetter, DeliveryFailure};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the timer thread learnt from firing a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fired {
    /// It delivered its last message (a delayed timer): it is no longer active.
    Done,
    /// It delivered and stays active: schedule it again one period later.
    Again(u64),
    /// It had been cancelled before (nothing delivered).
    Cancelled,
}

/// A scheduled timer as the queue and the handle see it.
pub(crate) trait Task: Send + Sync {
    /// Delivers the message if still active. A timer that fires for the last time
    /// decrements `active` before delivering (so a receiver sees the count without it).
    fn fire(&self, active: &AtomicUsize) -> Fired;
    /// Deactivates; true if this call did it (it was active).
    fn cancel(&self) -> bool;
    /// True until it fired for the last time or was cancelled.
    fn is_active(&self) -> bool;
    /// True if surely inactive; never waits for the task's lock (false while it fires).
    fn surely_inactive(&self) -> bool;
    /// The message's type name (for dead letters and debugging).
    fn message_type(&self) -> &'static str;
    /// Deactivates, handing what it would have sent (its receiving mailbox, the agent if
    /// that is a direct mailbox, the message if still there) to `dead_letter` as a dead
    /// letter for `reason`, before the message is dropped.
    fn refuse(&self, reason: DeliveryFailure, dead_letter: &dyn Fn(&DeadLetter<'_>));
}

/// How a message is handed to its mailbox: monomorphised, no call through a pointer.
pub(crate) trait Deliver<M>: 'static {
    fn deliver(to: &Mbox, msg: M);
}

/// An immutable send ([`Mbox::send`]).
pub(crate) struct Immutable;

impl<M: Send + Sync + 'static> Deliver<M> for Immutable {
    #[inline]
    fn deliver(to: &Mbox, msg: M) {
        to.send(msg)
    }
}

/// A mutable send ([`Mbox::send_mut`]); the mailbox was checked to be a direct one when the
/// timer was scheduled, so it cannot fail.
pub(crate) struct MutableSend;

impl<M: Send + 'static> Deliver<M> for MutableSend {
    #[inline]
    fn deliver(to: &Mbox, msg: M) {
        let _ = to.send_mut(msg);
    }
}

/// One timer: its message (`None` once inactive), its receiver and its kind.
pub(crate) struct Timer<M, K> {
    msg: Mutex<Option<M>>,
    to: Mbox,
    kind: K,
}

impl<M, K> Timer<M, K> {
    pub(crate) fn new(to: Mbox, kind: K, msg: M) -> Self {
        Self {
            msg: Mutex::new(Some(msg)),
            to,
            kind,
        }
    }
}

/// What firing does with the message: send it once, or a clone of it every period.
pub(crate) trait Kind<M>: Send + Sync + 'static {
    /// Sends from the locked slot (still `Some`); decrements `active` if this was the last.
    fn fire(&self, slot: &mut Option<M>, to: &Mbox, active: &AtomicUsize) -> Fired;
}

/// Fires once, delivering with `D`.
pub(crate) struct Once<D>(PhantomData<fn() -> D>);

impl<D> Once<D> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<M: Send + 'static, D: Deliver<M>> Kind<M> for Once<D> {
    #[inline]
    fn fire(&self, slot: &mut Option<M>, to: &Mbox, active: &AtomicUsize) -> Fired {
        match slot.take() {
            Some(m) => {
                active.fetch_sub(1, Ordering::Relaxed);
                D::deliver(to, m);
                Fired::Done
            }
            None => Fired::Cancelled,
        }
    }
}

/// Fires every so many nanoseconds, sending a clone each time.
pub(crate) struct Every(pub(crate) u64);

impl<M: Clone + Send + Sync + 'static> Kind<M> for Every {
    #[inline]
    fn fire(&self, slot: &mut Option<M>, to: &Mbox, _: &AtomicUsize) -> Fired {
        match slot {
            Some(m) => {
                to.send(m.clone());
                Fired::Again(self.0)
            }
            None => Fired::Cancelled,
        }
    }
}

impl<M: Send + 'static, K: Kind<M>> Task for Timer<M, K> {
    fn fire(&self, active: &AtomicUsize) -> Fired {
        // Delivered under the lock: a concurrent `cancel` waits until it is queued.
        let mut slot = self.msg.lock().unwrap_or_else(|e| e.into_inner());
        self.kind.fire(&mut slot, &self.to, active)
    }

    fn cancel(&self) -> bool {
        // The message is dropped after the lock is released (its `Drop` may do anything).
        let old = self.msg.lock().unwrap_or_else(|e| e.into_inner()).take();
        old.is_some()
    }

    fn is_active(&self) -> bool {
        self.msg.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    fn surely_inactive(&self) -> bool {
        match self.msg.try_lock() {
            Ok(g) => g.is_none(),
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().is_none(),
            Err(std::sync::TryLockError::WouldBlock) => false,
        }
    }

    fn message_type(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn refuse(&self, reason: DeliveryFailure, dead_letter: &dyn Fn(&DeadLetter<'_>)) {
        // Out of the lock before the hook runs, as in `cancel`.
        let old = self.msg.lock().unwrap_or_else(|e| e.into_inner()).take();
        dead_letter(&DeadLetter {
            mbox: Some(self.to.id()),
            agent: self.to.agent_id(),
            message: old.as_ref().map(|m| m as &dyn Any),
            ..DeadLetter::bare(std::any::type_name::<M>(), reason)
        });
    }
}
