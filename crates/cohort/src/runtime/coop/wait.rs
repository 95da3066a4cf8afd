//! Waiting for a cooperation to be gone: [`CoopHandle::wait_gone`] blocks with a timeout,
//! [`CoopHandle::gone`] is a future. Both rest on the wakers a cooperation keeps in its state
//! and wakes when it is gone.

use super::registered::{CoopHandle, CoopInner};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Waiting for a cooperation to be gone failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CoopWaitError {
    /// The cooperation was not gone within the timeout (it may still be deregistering, or
    /// nobody deregistered it).
    #[error(
        "the cooperation was not gone within {0:?}: deregister it first, or wait longer (an agent's `finish` or a child may be slow)"
    )]
    Timeout(Duration),
    /// Called on a thread that runs an agent of this cooperation (or of one of its children):
    /// the cooperation can only finish once this thread returns, so the wait would never end.
    #[error(
        "waiting for a cooperation from a thread that runs one of its agents would never end: \
         await `CoopHandle::gone()` or subscribe to `CoopDeregistered` (`Coop::notify_deregistered`) instead"
    )]
    WouldDeadlock,
}

/// Wakes a thread parked in [`CoopHandle::wait_gone`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

impl CoopInner {
    /// Registers `waker` to be woken once gone; false (nothing registered) if gone already.
    fn add_gone_waiter(&self, waker: &Waker) -> bool {
        let mut st = self.lock_state();
        if st.status == super::registered::CoopStatus::Gone {
            return false;
        }
        if !st.gone_waiters.iter().any(|w| w.will_wake(waker)) {
            st.gone_waiters.push(waker.clone());
        }
        true
    }

    fn remove_gone_waiter(&self, waker: &Waker) {
        self.lock_state()
            .gone_waiters
            .retain(|w| !w.will_wake(waker));
    }

    /// True if the current thread runs a queue this cooperation or one of its live children
    /// needs to finish.
    fn needs_this_thread(&self) -> bool {
        if self.groups.iter().any(|g| g.queue.is_running_here()) {
            return true;
        }
        let children = {
            let st = self.lock_state();
            // SAFETY: the lock is held.
            unsafe { self.children(&st) }
        };
        children.iter().any(|c| c.needs_this_thread())
    }
}

impl CoopHandle {
    /// Blocks until the cooperation is gone (every agent has run `finish`), at most `timeout`.
    /// Returns `Ok(())` at once if it is gone already. It does not deregister: call
    /// [`deregister`](Self::deregister) first (or wait for the agents to do it).
    ///
    /// Errors: [`CoopWaitError::Timeout`]; [`CoopWaitError::WouldDeadlock`] when called
    /// from a handler on a thread that the cooperation needs to finish (one of its agents, or
    /// of its children, runs there).
    ///
    /// ```
    /// use cohort::{Agent, DeregReason};
    /// use std::time::Duration;
    /// struct Idle;
    /// impl Agent for Idle {}
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// coop.add(Idle);
    /// let handle = env.register_coop(coop).unwrap();
    /// handle.deregister(DeregReason::Normal);
    /// handle.wait_gone(Duration::from_secs(10)).unwrap();
    /// assert!(handle.is_gone());
    /// ```
    pub fn wait_gone(&self, timeout: Duration) -> Result<(), CoopWaitError> {
        let inner = &self.inner;
        if inner.is_gone() {
            return Ok(());
        }
        if inner.needs_this_thread() {
            return Err(CoopWaitError::WouldDeadlock);
        }
        let deadline = Instant::now().checked_add(timeout);
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        if !inner.add_gone_waiter(&waker) {
            return Ok(());
        }
        // `park_timeout` may return spuriously: the state decides.
        loop {
            if inner.is_gone() {
                return Ok(());
            }
            match deadline.map(|d| d.saturating_duration_since(Instant::now())) {
                Some(left) if left.is_zero() => {
                    inner.remove_gone_waiter(&waker);
                    return if inner.is_gone() {
                        Ok(())
                    } else {
                        Err(CoopWaitError::Timeout(timeout))
                    };
                }
                Some(left) => thread::park_timeout(left),
                None => thread::park(),
            }
        }
    }

    /// A future that completes once the cooperation is gone (at once if it is gone already).
    /// It needs no particular executor (it keeps the task's waker and wakes it when the
    /// cooperation is gone); polling it never blocks.
    ///
    /// ```
    /// use cohort::{Agent, DeregReason};
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// struct Idle;
    /// impl Agent for Idle {}
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// coop.add(Idle);
    /// let handle = env.register_coop(coop).unwrap();
    /// let mut gone = pin!(handle.gone());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(gone.as_mut().poll(&mut cx).is_pending());
    /// handle.deregister(DeregReason::Normal);
    /// handle.wait_gone(std::time::Duration::from_secs(10)).unwrap();
    /// assert!(gone.as_mut().poll(&mut cx).is_ready());
    /// ```
    pub fn gone(&self) -> CoopGone {
        CoopGone {
            inner: self.inner.clone(),
            waker: None,
        }
    }
}

/// The future [`CoopHandle::gone`] returns: ready once the cooperation is gone.
#[must_use = "a future does nothing unless awaited or polled"]
pub struct CoopGone {
    inner: Arc<CoopInner>,
    /// The waker last registered with the cooperation (removed on drop).
    waker: Option<Waker>,
}

impl Future for CoopGone {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if let Some(old) = self.waker.take()
            && !old.will_wake(cx.waker())
        {
            self.inner.remove_gone_waiter(&old);
        }
        if self.inner.add_gone_waiter(cx.waker()) {
            self.waker = Some(cx.waker().clone());
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

impl Drop for CoopGone {
    fn drop(&mut self) {
        if let Some(w) = self.waker.take() {
            self.inner.remove_gone_waiter(&w);
        }
    }
}

impl std::fmt::Debug for CoopGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoopGone")
            .field("id", &self.inner.id())
            .finish()
    }
}
