//! [`Environment`], the clonable handle users hold, and [`WrappedEnv`], one running in the
//! background.

use super::shared::MboxNames;
use super::{EnvShared, EnvironmentBuilder};
use crate::dispatcher::{Binder, DispatcherHandle, OneThreadBuilder};
use crate::error::{DispatcherError, RegisterError};
use crate::mailbox::IndirectMbox;
use crate::mailbox::Mbox;
use crate::mailbox::dead_letter::DeliveryFailure;
use crate::mailbox::multi_consumer::NamedMbox;
use crate::runtime::coop::{Coop, CoopHandle};
use crate::stats::{RuntimeStats, StatsConfig};
use crate::trace::MessageTracing;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// A handle to an environment; clone it freely.
#[derive(Clone)]
pub struct Environment(pub(super) Arc<EnvShared>);

impl Environment {
    /// A builder for a new environment.
    pub fn builder() -> EnvironmentBuilder {
        EnvironmentBuilder::default()
    }

    pub(crate) fn from_shared(shared: Arc<EnvShared>) -> Self {
        Self(shared)
    }

    pub(crate) fn shared(&self) -> &Arc<EnvShared> {
        &self.0
    }

    /// A new top-level cooperation builder.
    pub fn new_coop(&self) -> Coop {
        Coop::new(self.clone(), None)
    }

    /// Registers a cooperation (see [`Coop`]): all or nothing.
    pub fn register_coop(&self, coop: Coop) -> Result<CoopHandle, RegisterError> {
        coop.register()
    }

    /// Stops the environment: every cooperation deregisters (reason `Shutdown`), children
    /// first. Callable from any thread or handler; idempotent. Returns at once; see
    /// [`Environment::wait`].
    pub fn stop(&self) {
        self.0.stop()
    }

    /// True once [`stop`](Environment::stop) was called (or autoshutdown fired).
    pub fn is_stopping(&self) -> bool {
        self.0.is_stopping()
    }

    /// Blocks until the environment has stopped: every cooperation gone, every worker thread
    /// joined. Must not be called from a handler (it would wait for itself).
    pub fn wait(&self) {
        self.0.wait()
    }

    /// The binder of the default dispatcher (a `one_thread` dispatcher named `default`).
    pub fn default_binder(&self) -> Binder {
        self.0.default_binder()
    }

    /// Number of registered cooperations (the root excluded).
    pub fn coop_count(&self) -> usize {
        self.0.coops.load(Ordering::Relaxed)
    }

    /// Number of messages that could not be delivered so far.
    pub fn dead_letters(&self) -> u64 {
        self.0.dead_letters.load(Ordering::Acquire)
    }

    /// Counts a message that a mailbox implemented outside the runtime (a
    /// [`CustomMbox`](crate::CustomMbox): a remote proxy, a bridge) could not deliver, and
    /// hands it to the dead-letter hook, exactly as the runtime does for its own mailboxes.
    ///
    /// ```
    /// use cohort::{DeliveryFailure, Environment};
    ///
    /// let env = Environment::builder().start().unwrap();
    /// env.environment().report_dead_letter("Ping", DeliveryFailure::NodeDown);
    /// assert_eq!(env.environment().dead_letters(), 1);
    /// env.stop_and_wait();
    /// ```
    pub fn report_dead_letter(&self, message_type: &'static str, reason: DeliveryFailure) {
        self.0.dead_letter(message_type, reason)
    }

    /// As [`Environment::report_dead_letter`], for a message that came from elsewhere (a
    /// remote node) under a type name this environment does not know: the hook sees
    /// `message_type` as [`DeadLetter::UNKNOWN_TYPE`](crate::DeadLetter::UNKNOWN_TYPE) and
    /// the name in [`DeadLetter::declared_type`](crate::DeadLetter::declared_type).
    ///
    /// ```
    /// use cohort::{DeadLetter, DeliveryFailure, Environment};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let seen = Arc::new(Mutex::new(None));
    /// let s = seen.clone();
    /// let env = Environment::builder()
    ///     .dead_letter_hook(move |d: &DeadLetter| {
    ///         *s.lock().unwrap() = d.declared_type.map(str::to_string);
    ///     })
    ///     .start()
    ///     .unwrap();
    /// env.environment()
    ///     .report_declared_dead_letter("shop.Order", DeliveryFailure::NotRegisteredForRemote);
    /// assert_eq!(seen.lock().unwrap().as_deref(), Some("shop.Order"));
    /// env.stop_and_wait();
    /// ```
    pub fn report_declared_dead_letter(&self, declared_type: &str, reason: DeliveryFailure) {
        self.0.dead_letter_with(&crate::DeadLetter {
            declared_type: Some(declared_type),
            ..crate::DeadLetter::bare(crate::DeadLetter::UNKNOWN_TYPE, reason)
        })
    }

    /// Number of panics caught in handlers and hooks so far.
    pub fn panics(&self) -> u64 {
        self.0.panics.load(Ordering::Relaxed)
    }

    /// The multi-consumer mailbox named `name`: the same name gives the same mailbox (while
    /// anyone holds it). One send reaches every agent subscribed to the message's type
    /// ([`Context::subscribe`](crate::Context::subscribe)).
    pub fn named_mbox(&self, name: &str) -> Mbox {
        self.by_name(&self.0.named, name, NamedMbox::new)
    }

    /// The mailbox called `name` in the registry `names`, made by `make` if there is none
    /// alive.
    fn by_name(
        &self,
        names: &Mutex<MboxNames>,
        name: &str,
        make: fn(Option<Arc<str>>, std::sync::Weak<EnvShared>) -> NamedMbox,
    ) -> Mbox {
        let mut names = names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = names.get(name).and_then(std::sync::Weak::upgrade) {
            return Mbox::indirect(m);
        }
        names.retain(|_, w| w.strong_count() > 0);
        let name: Arc<str> = Arc::from(name);
        let m = Arc::new(IndirectMbox::Named(make(
            Some(name.clone()),
            Arc::downgrade(&self.0),
        )));
        names.insert(name, Arc::downgrade(&m));
        Mbox::indirect(m)
    }

    /// A new anonymous multi-consumer mailbox.
    pub fn anonymous_mbox(&self) -> Mbox {
        Mbox::indirect(Arc::new(IndirectMbox::Named(NamedMbox::new(
            None,
            Arc::downgrade(&self.0),
        ))))
    }

    /// A new anonymous unique-subscribers mailbox: multi-producer, single-consumer per
    /// message type. Each message type has at most one subscriber (a second one is
    /// [`SubscribeError::UniqueSubscriberTaken`](crate::SubscribeError::UniqueSubscriberTaken)),
    /// so it carries mutable messages ([`Mbox::send_mut`], [`Context::subscribe_mut`](crate::Context::subscribe_mut))
    /// as well as immutable ones, and the subscriber of a type can change while senders keep
    /// the mailbox.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, Mbox};
    ///
    /// struct Job(Vec<u8>);
    /// struct Sink { jobs: Mbox }
    /// impl Agent for Sink {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.subscribe_mut(&self.jobs.clone(), |_: &mut Self, mut j: Job, ctx: &mut Context<'_, Self>| {
    ///             j.0.push(4); // owned: no copy, no lock
    ///             assert_eq!(j.0, [1, 2, 3, 4]);
    ///             ctx.stop_environment();
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let jobs = env.unique_subscribers_mbox();
    /// let mut coop = env.new_coop();
    /// coop.add(Sink { jobs: jobs.clone() });
    /// env.register_coop(coop).unwrap();
    /// jobs.send_mut(Job(vec![1, 2, 3])).unwrap();
    /// env.wait();
    /// ```
    pub fn unique_subscribers_mbox(&self) -> Mbox {
        Mbox::indirect(Arc::new(IndirectMbox::Named(
            NamedMbox::new_single_consumer(None, Arc::downgrade(&self.0)),
        )))
    }

    /// The unique-subscribers mailbox (see [`Environment::unique_subscribers_mbox`]) named
    /// `name`: the same name gives the same mailbox while anyone holds it. These names are
    /// their own namespace: `named_mbox("jobs")` is another (multi-consumer) mailbox.
    ///
    /// ```
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let a = env.named_unique_subscribers_mbox("jobs");
    /// assert_eq!(a, env.named_unique_subscribers_mbox("jobs"));
    /// assert_ne!(a, env.named_mbox("jobs"));
    /// ```
    pub fn named_unique_subscribers_mbox(&self, name: &str) -> Mbox {
        self.by_name(&self.0.unique_named, name, NamedMbox::new_single_consumer)
    }

    /// Turns message delivery tracing on (`Some`) or off (`None`) at run time, replacing the
    /// tracer set by [`EnvironmentBuilder::message_tracing`]. Steps already under way may
    /// still reach the previous tracer.
    ///
    /// ```
    /// use cohort::{Environment, MessageTracing};
    ///
    /// let env = Environment::builder().start().unwrap();
    /// let prices = env.named_mbox("prices");
    /// env.set_message_tracing(Some(MessageTracing::to_stderr().mbox(&prices)));
    /// prices.send(1u64); // stderr: "cohort trace: sent msg=`u64` mbox=0x..."
    /// env.set_message_tracing(None);
    /// prices.send(2u64); // not traced
    /// assert_eq!(env.dead_letters(), 2); // nobody subscribed
    /// ```
    pub fn set_message_tracing(&self, tracing: Option<MessageTracing>) {
        self.0.set_tracer(tracing)
    }

    /// Number of named mailboxes alive.
    pub fn named_mbox_count(&self) -> usize {
        self.0.named_count()
    }

    /// A snapshot of the run-time statistics (worker counters advance only while statistics
    /// are on, see [`Environment::start_stats`]).
    pub fn stats(&self) -> RuntimeStats {
        self.0.stats()
    }

    /// Turns run-time statistics on: workers start counting, and a `cohort-stats` thread
    /// takes a [`RuntimeStats`] snapshot every period, sends it to the configured mailboxes and
    /// exports it through the `metrics` facade. Restarting replaces the previous
    /// configuration.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, RuntimeStats, StatsConfig};
    /// use std::time::Duration;
    ///
    /// struct Monitor;
    /// impl Agent for Monitor {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on(|_, s: &RuntimeStats, ctx| {
    ///             assert!(s.coops >= 1);
    ///             ctx.stop_environment();
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// let monitor = coop.add(Monitor).mbox();
    /// env.register_coop(coop).unwrap();
    /// env.start_stats(StatsConfig::new().period(Duration::from_millis(10)).deliver_to(monitor)).unwrap();
    /// env.wait();
    /// ```
    pub fn start_stats(&self, config: StatsConfig) -> Result<(), DispatcherError> {
        self.0.start_stats(config)
    }

    /// Turns run-time statistics off (workers stop counting; the thread ends).
    pub fn stop_stats(&self) {
        self.0.stop_stats()
    }

    /// Creates a message chain (see [`crate::mchain`]). Sends through its mailbox that it
    /// refuses (closed, or full with `Overflow::Error`) count as this environment's dead
    /// letters.
    ///
    /// Errors: [`MchainError::ZeroCapacity`](crate::mchain::MchainError::ZeroCapacity) for
    /// `bounded(0)`, [`MchainError::PreallocatedUnbounded`](crate::mchain::MchainError::PreallocatedUnbounded)
    /// for `unbounded().preallocated()`.
    ///
    /// ```
    /// use cohort::mchain::{MchainError, MchainParams, Overflow, Sent};
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let chain = env
    ///     .create_mchain(MchainParams::bounded(2).on_overflow(Overflow::DropNewest))
    ///     .unwrap();
    /// assert_eq!(chain.send(1u8), Ok(Sent::Queued));
    /// assert_eq!(chain.send(2u8), Ok(Sent::Queued));
    /// assert_eq!(chain.send(3u8), Ok(Sent::DroppedNewest));
    /// assert_eq!(chain.stats().dropped_newest, 1);
    /// assert_eq!(env.create_mchain(MchainParams::bounded(0)).unwrap_err(), MchainError::ZeroCapacity);
    /// ```
    pub fn create_mchain(
        &self,
        params: crate::mchain::MchainParams,
    ) -> Result<crate::mchain::Mchain, crate::mchain::MchainError> {
        crate::mchain::Mchain::new(params, Arc::downgrade(&self.0))
    }

    /// Creates a `one_thread` dispatcher with default parameters (see [`OneThreadBuilder`]).
    pub fn one_thread(&self, name: &str) -> Result<DispatcherHandle, DispatcherError> {
        OneThreadBuilder::new().name(name).build(self)
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Environment")
            .field("coops", &self.coop_count())
            .field("stopping", &self.is_stopping())
            .field("dead_letters", &self.dead_letters())
            .finish()
    }
}

/// An environment running in the background; dropping it stops it and joins its threads.
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// assert_eq!(env.coop_count(), 0);
/// drop(env); // stops and joins
/// ```
pub struct WrappedEnv {
    pub(super) env: Environment,
}

impl WrappedEnv {
    /// A clonable handle to the environment.
    pub fn environment(&self) -> Environment {
        self.env.clone()
    }

    /// Stops the environment and waits until it has stopped.
    pub fn stop_and_wait(self) {
        self.env.stop();
        self.env.wait();
    }
}

impl Deref for WrappedEnv {
    type Target = Environment;
    fn deref(&self) -> &Environment {
        &self.env
    }
}

impl Drop for WrappedEnv {
    fn drop(&mut self) {
        self.env.stop();
        self.env.wait();
    }
}
