//! Timers: delayed and periodic messages.
//!
//! [`Environment::send_delayed`] sends a message once after a delay,
//! [`Environment::send_periodic`] after a delay and then every period (the same on
//! [`Context`]). A delayed send is fire-and-forget: it returns a [`TimerId`] that may be
//! dropped (the timer still fires) or kept to cancel it. A periodic send returns a
//! [`TimerHandle`], a guard: the timer lives as long as the handle (dropping it cancels the
//! timer, [`TimerHandle::detach`] lets it run on its own). [`TimerId::cancel_on_drop`] makes
//! such a guard of a delayed timer.
//!
//! Each environment has one `cohort-timer` thread, started with its first timer. It keeps
//! the pending timers in a [`TimerQueue`] (a hierarchical timing wheel by default, or a binary
//! heap) and parks until the earliest deadline (no
//! polling: an idle environment with a 1 ms periodic timer wakes 1,000 times a second and
//! does nothing else). Firing a timer is an ordinary send from that thread: a receiver that is
//! gone makes it a counted dead letter, like any send.
//!
//! # Guarantees
//! - A delayed message is sent no earlier than its delay after the `send_delayed` call (and
//!   usually within about 0.1 ms after it on an idle machine; later when the timer thread is
//!   busy with many timers due at once).
//! - A delayed timer delivers at most once; a periodic timer at most once per period (a
//!   thread late by more than a period skips, it does not burst to catch up).
//! - After [`TimerId::cancel`] or [`TimerHandle::cancel`] (or the handle's drop) returns, the timer sends nothing
//!   more: a firing that raced with the cancel either lost (nothing sent) or finished
//!   queueing its message before `cancel` returned. As in SObjectizer, a message already
//!   queued at the receiver is not withdrawn: it may still be handled after the cancel.
//! - When the environment stops, every pending timer is cancelled (not counted as dead
//!   letters: those messages were never sent); timers scheduled after that are refused and
//!   their message counted as a dead letter.
//!
//! ```
//! use cohort::{Agent, Context, DefineError};
//! use std::time::Duration;
//!
//! #[derive(Clone)]
//! struct Tick;
//! struct Timeout;
//!
//! struct Ticker { ticks: u32, timer: Option<cohort::TimerHandle> }
//! impl Agent for Ticker {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         ctx.on(|me, _: &Tick, ctx| {
//!             me.ticks += 1;
//!             if me.ticks == 3 {
//!                 me.timer = None; // cancels the periodic timer
//!                 ctx.send_delayed(&ctx.self_mbox(), Duration::from_millis(1), Timeout);
//!             }
//!         })?;
//!         ctx.on(|_, _: &Timeout, ctx| ctx.stop_environment())?;
//!         Ok(())
//!     }
//!     fn start(&mut self, ctx: &mut Context<'_, Self>) {
//!         let me = ctx.self_mbox();
//!         self.timer = Some(ctx.send_periodic(&me, Duration::ZERO, Duration::from_millis(1), Tick));
//!     }
//! }
//!
//! cohort::launch(|env| {
//!     let mut coop = env.new_coop();
//!     coop.add(Ticker { ticks: 0, timer: None });
//!     env.register_coop(coop)?;
//!     Ok(())
//! })
//! .unwrap();
//! ```

mod heap;
mod queue;
mod service;
pub(crate) mod task;
mod wheel;

pub use queue::TimerQueue;

pub(crate) use service::TimerService;

use crate::agent::{Agent, Context};
use crate::error::SendError;
use crate::mailbox::Mbox;
use crate::mailbox::dead_letter::DeliveryFailure;
use crate::runtime::env::Environment;
use service::Refused;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use task::{Every, Immutable, MutableSend, Once, Task, Timer};

/// One pending timer in the queue: its deadline (nanoseconds since the service started), a
/// sequence number (timers due at the same instant fire in the order they were scheduled)
/// and the task. 32 bytes.
pub(crate) struct Entry {
    pub(crate) at: u64,
    pub(crate) seq: u64,
    pub(crate) task: Arc<dyn Task>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// The inner parts of a timer reference: the task and its service (`None` when the timer was
/// refused because the environment had stopped).
type TimerRef = Option<(Arc<dyn Task>, Arc<TimerService>)>;

/// Cancels `inner`'s task, counting it once as cancelled.
fn cancel_ref(inner: &TimerRef) {
    if let Some((task, service)) = inner
        && task.cancel()
    {
        service.cancelled_one();
    }
}

/// A delayed timer, by reference: the timer runs on its own (dropping a `TimerId` does not
/// cancel it), and [`cancel`](TimerId::cancel) stops it explicitly. Returned by
/// [`Environment::send_delayed`]; [`cancel_on_drop`](TimerId::cancel_on_drop) turns it into
/// a [`TimerHandle`] that cancels the timer when dropped.
///
/// ```
/// use std::time::Duration;
/// let env = cohort::Environment::builder().start().unwrap();
/// let mbox = env.anonymous_mbox();
/// env.send_delayed(&mbox, Duration::from_secs(3600), "later"); // fire and forget
/// let timer = env.send_delayed(&mbox, Duration::from_secs(3600), 42u32);
/// assert_eq!(env.stats().timers, 2);
/// timer.cancel();
/// assert!(!timer.is_active());
/// assert_eq!(env.stats().timers, 1);
/// ```
#[derive(Clone)]
pub struct TimerId {
    inner: TimerRef,
}

impl TimerId {
    /// Cancels the timer: once this returns, it sends nothing more (a message it already
    /// queued at the receiver may still be handled). Idempotent. Must not be called from a
    /// dead-letter hook for this same timer (the hook runs while the timer is firing).
    pub fn cancel(&self) {
        cancel_ref(&self.inner);
    }

    /// True until the timer has fired or was cancelled (or its environment stopped).
    pub fn is_active(&self) -> bool {
        self.inner.as_ref().is_some_and(|(t, _)| t.is_active())
    }

    /// A guard that cancels this timer when dropped (for a timer that must not outlive its
    /// owner, e.g. a timeout kept in an agent's field).
    ///
    /// ```
    /// use std::time::Duration;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let guard = env
    ///     .send_delayed(&env.anonymous_mbox(), Duration::from_secs(3600), 1u8)
    ///     .cancel_on_drop();
    /// assert_eq!(env.timer_count(), 1);
    /// drop(guard);
    /// assert_eq!(env.timer_count(), 0);
    /// ```
    pub fn cancel_on_drop(self) -> TimerHandle {
        TimerHandle { inner: self.inner }
    }
}

impl fmt::Debug for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_timer(f, "TimerId", &self.inner)
    }
}

fn debug_timer(f: &mut fmt::Formatter<'_>, name: &str, inner: &TimerRef) -> fmt::Result {
    let mut d = f.debug_struct(name);
    if let Some((t, _)) = inner {
        d.field("message_type", &t.message_type());
    }
    d.field(
        "active",
        &inner.as_ref().is_some_and(|(t, _)| t.is_active()),
    )
    .finish()
}

/// A pending timer that lives as long as this handle: dropping it cancels the timer.
/// [`Environment::send_periodic`] returns one; [`TimerId::cancel_on_drop`] makes one of a
/// delayed timer. [`detach`](TimerHandle::detach) lets the timer run without the handle (a
/// detached periodic timer runs until the environment stops).
///
/// ```
/// use std::time::Duration;
/// let env = cohort::Environment::builder().start().unwrap();
/// let mbox = env.anonymous_mbox();
/// let mut timer = env.send_periodic(&mbox, Duration::from_secs(3600), Duration::from_secs(1), 42u32);
/// assert!(timer.is_active());
/// assert_eq!(env.stats().timers, 1);
/// timer.cancel();
/// assert!(!timer.is_active());
/// assert_eq!(env.stats().timers, 0);
/// ```
#[must_use = "dropping a TimerHandle cancels the timer: keep it in a field, or call `.detach()`"]
pub struct TimerHandle {
    inner: TimerRef,
}

impl TimerHandle {
    /// Cancels the timer: once this returns, it sends nothing more (a message it already
    /// queued at the receiver may still be handled). Idempotent. Must not be called from a
    /// dead-letter hook for this same timer (the hook runs while the timer is firing).
    pub fn cancel(&mut self) {
        cancel_ref(&self.inner);
        self.inner = None;
    }

    /// True until the timer has fired for the last time or was cancelled (or its
    /// environment stopped).
    pub fn is_active(&self) -> bool {
        self.inner.as_ref().is_some_and(|(t, _)| t.is_active())
    }

    /// Lets the timer run on its own: a delayed timer fires once, a periodic one until the
    /// environment stops or the returned [`TimerId`] is cancelled.
    ///
    /// ```
    /// use std::time::Duration;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mbox = env.anonymous_mbox();
    /// let id = env.send_periodic(&mbox, Duration::from_secs(3600), Duration::from_secs(1), "tick").detach();
    /// assert_eq!(env.stats().timers, 1);
    /// id.cancel();
    /// assert_eq!(env.stats().timers, 0);
    /// ```
    pub fn detach(mut self) -> TimerId {
        TimerId {
            inner: self.inner.take(),
        }
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_timer(f, "TimerHandle", &self.inner)
    }
}

impl Environment {
    /// Schedules `task` to fire once `delay` from now.
    pub(crate) fn schedule(&self, delay: Duration, task: Arc<dyn Task>) -> TimerId {
        let service = &self.shared().timers;
        match service.schedule(delay, task.clone()) {
            Ok(()) => TimerId {
                inner: Some((task, service.clone())),
            },
            Err(refused) => {
                // Never silently lost: the message is counted, then dropped.
                let reason = match refused {
                    Refused::Stopped | Refused::NoThread => DeliveryFailure::ReceiverGone,
                };
                task.refuse(reason, &|letter| self.shared().dead_letter_with(letter));
                TimerId { inner: None }
            }
        }
    }

    /// Sends `msg` to `to` once, `delay` from now (see the [module docs](crate::timer) for
    /// the guarantees). The timer runs on its own: the returned [`TimerId`] may be ignored,
    /// kept to [`cancel`](TimerId::cancel) it, or made a guard that cancels it on drop
    /// ([`TimerId::cancel_on_drop`]).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Wake(Instant);
    /// struct Sleeper;
    /// impl Agent for Sleeper {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on(|_, w: &Wake, ctx| {
    ///             assert!(w.0.elapsed() >= Duration::from_millis(5));
    ///             ctx.stop_environment();
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// let sleeper = coop.add(Sleeper).mbox();
    /// env.register_coop(coop).unwrap();
    /// env.send_delayed(&sleeper, Duration::from_millis(5), Wake(Instant::now()));
    /// env.wait();
    /// ```
    pub fn send_delayed<M: Send + Sync + 'static>(
        &self,
        to: &Mbox,
        delay: Duration,
        msg: M,
    ) -> TimerId {
        self.schedule(
            delay,
            Arc::new(Timer::new(to.clone(), Once::<Immutable>::new(), msg)),
        )
    }

    /// Sends a mutable message (see [`Mbox::send_mut`]) to the direct mailbox `to` once,
    /// `delay` from now. A multi-consumer mailbox cannot carry one:
    /// [`SendError::MutableToMultiConsumer`], and nothing is scheduled.
    ///
    /// ```
    /// use std::time::Duration;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let named = env.named_mbox("jobs");
    /// assert!(env.send_delayed_mut(&named, Duration::from_millis(1), vec![1u8]).is_err());
    /// ```
    pub fn send_delayed_mut<M: Send + 'static>(
        &self,
        to: &Mbox,
        delay: Duration,
        msg: M,
    ) -> Result<TimerId, SendError> {
        if let Some(named) = to.as_named() {
            return Err(SendError::MutableToMultiConsumer {
                message_type: std::any::type_name::<M>(),
                mailbox: named.name().unwrap_or("<anonymous>").to_string(),
            });
        }
        Ok(self.schedule(
            delay,
            Arc::new(Timer::new(to.clone(), Once::<MutableSend>::new(), msg)),
        ))
    }

    /// Sends a clone of `msg` to `to` after `delay`, then every `period`, until the handle
    /// is cancelled or dropped or the environment stops (the timer lives as long as its
    /// handle, as in SObjectizer). A zero `period` makes it a delayed
    /// send (it fires once), as in SObjectizer.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// #[derive(Clone)]
    /// struct Tick;
    /// struct Counter(u32);
    /// impl Agent for Counter {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on(|me, _: &Tick, ctx| {
    ///             me.0 += 1;
    ///             if me.0 == 5 { ctx.stop_environment() }
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// let counter = coop.add(Counter(0)).mbox();
    /// env.register_coop(coop).unwrap();
    /// let timer = env.send_periodic(&counter, Duration::ZERO, Duration::from_millis(1), Tick);
    /// env.wait(); // five ticks later
    /// assert!(!timer.is_active()); // stopping the environment cancelled it
    /// ```
    pub fn send_periodic<M: Clone + Send + Sync + 'static>(
        &self,
        to: &Mbox,
        delay: Duration,
        period: Duration,
        msg: M,
    ) -> TimerHandle {
        if period.is_zero() {
            return self.send_delayed(to, delay, msg).cancel_on_drop();
        }
        let period = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        self.schedule(delay, Arc::new(Timer::new(to.clone(), Every(period), msg)))
            .cancel_on_drop()
    }

    /// Number of active timers (also in [`RuntimeStats::timers`](crate::RuntimeStats)).
    pub fn timer_count(&self) -> usize {
        self.shared().timers.active()
    }
}

impl<A: Agent> Context<'_, A> {
    /// [`Environment::send_delayed`] from a handler.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cohort::{Agent, Context, DefineError};
    /// struct Alarm;
    /// struct Sleeper;
    /// impl Agent for Sleeper {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on(|_, _: &Alarm, ctx| ctx.stop_environment())?;
    ///         Ok(())
    ///     }
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.send_delayed(&ctx.self_mbox(), Duration::from_millis(2), Alarm);
    ///     }
    /// }
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Sleeper);
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn send_delayed<M: Send + Sync + 'static>(
        &self,
        to: &Mbox,
        delay: Duration,
        msg: M,
    ) -> TimerId {
        self.environment().send_delayed(to, delay, msg)
    }

    /// [`Environment::send_delayed_mut`] from a handler.
    pub fn send_delayed_mut<M: Send + 'static>(
        &self,
        to: &Mbox,
        delay: Duration,
        msg: M,
    ) -> Result<TimerId, SendError> {
        self.environment().send_delayed_mut(to, delay, msg)
    }

    /// [`Environment::send_periodic`] from a handler (see the [module docs](crate::timer)
    /// for an example).
    pub fn send_periodic<M: Clone + Send + Sync + 'static>(
        &self,
        to: &Mbox,
        delay: Duration,
        period: Duration,
        msg: M,
    ) -> TimerHandle {
        self.environment().send_periodic(to, delay, period, msg)
    }
}
