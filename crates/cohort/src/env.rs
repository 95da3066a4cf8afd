//! The environment: cooperations, dispatchers, dead letters, and how it all starts and stops.
//!
//! Two ways to run one:
//! - [`launch`] (or [`EnvironmentBuilder::launch`]): blocks the calling thread until the
//!   environment stops; by default it stops by itself when its last cooperation is gone
//!   (autoshutdown).
//! - [`EnvironmentBuilder::start`]: returns a [`WrappedEnv`] that runs in the background and
//!   stops and joins everything when dropped; autoshutdown is off by default there.

use crate::coop::{Coop, CoopHandle, CoopId, CoopInner, DeregReason};
use crate::dead_letter::{DeadLetter, DeadLetterHook, DeliveryFailure};
use crate::defaults;
use crate::dispatcher::{Binder, DispatcherCore, DispatcherHandle, OneThreadBuilder};
use crate::error::{DispatcherError, LaunchError, RegisterError};
use crate::mbox::IndirectMbox;
use crate::mbox::Mbox;
use crate::named::NamedMbox;
use crate::panic::PanicReaction;
use crate::stats::{RuntimeStats, StatsConfig, StatsSwitch};
use crate::trace::{self, MessageTracing, TraceEvent, TraceStep};
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::Duration;

/// Runs an environment on the calling thread until it stops.
///
/// `init` registers the first cooperations. The environment stops when [`Environment::stop`]
/// is called, or (autoshutdown) when its last cooperation is gone; `launch` then returns after
/// every agent has finished and every worker thread is joined.
///
/// ```
/// use cohort::{Agent, Context};
/// struct Once;
/// impl Agent for Once {
///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.stop_environment();
///     }
/// }
/// cohort::launch(|env| {
///     let mut coop = env.new_coop();
///     coop.add(Once);
///     env.register_coop(coop)?;
///     Ok(())
/// })
/// .unwrap();
/// ```
pub fn launch<F>(init: F) -> Result<(), LaunchError>
where
    F: FnOnce(&Environment) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
{
    Environment::builder().launch(init)
}

/// Configures an environment. Every default is in [`crate::defaults`].
///
/// ```
/// use cohort::{Environment, PanicReaction};
/// let env = Environment::builder()
///     .panic_reaction(PanicReaction::Ignore)
///     .autoshutdown(false)
///     .start()
///     .unwrap();
/// assert_eq!(env.dead_letters(), 0);
/// ```
pub struct EnvironmentBuilder {
    autoshutdown: Option<bool>,
    panic_reaction: PanicReaction,
    dead_letter_hook: Option<DeadLetterHook>,
    worker_spin: Duration,
    timer_queue: crate::timer::TimerQueue,
    message_tracing: Option<MessageTracing>,
}

impl Default for EnvironmentBuilder {
    fn default() -> Self {
        Self {
            autoshutdown: None,
            panic_reaction: PanicReaction::default(),
            dead_letter_hook: None,
            worker_spin: defaults::WORKER_SPIN,
            timer_queue: defaults::TIMER_QUEUE,
            message_tracing: None,
        }
    }
}

impl EnvironmentBuilder {
    /// Whether the environment stops by itself once its last cooperation is gone.
    /// Default: on for [`launch`](EnvironmentBuilder::launch), off for
    /// [`start`](EnvironmentBuilder::start).
    pub fn autoshutdown(mut self, on: bool) -> Self {
        self.autoshutdown = Some(on);
        self
    }

    /// The panic reaction of agents and cooperations that set none.
    /// Default: [`PanicReaction::DeregisterCoop`].
    pub fn panic_reaction(mut self, r: PanicReaction) -> Self {
        self.panic_reaction = r;
        self
    }

    /// A function called for every dead letter, on the thread that finds it. Default: none
    /// (dead letters are only counted).
    pub fn dead_letter_hook(mut self, hook: impl Fn(&DeadLetter) + Send + Sync + 'static) -> Self {
        self.dead_letter_hook = Some(Box::new(hook));
        self
    }

    /// How long the default dispatcher's worker spins before parking when it has nothing to
    /// do. Default: [`defaults::WORKER_SPIN`].
    pub fn worker_spin(mut self, spin: Duration) -> Self {
        self.worker_spin = spin;
        self
    }

    /// Where the environment's pending timers wait (see [`TimerQueue`](crate::TimerQueue)).
    /// Default: [`defaults::TIMER_QUEUE`].
    pub fn timer_queue(mut self, queue: crate::timer::TimerQueue) -> Self {
        self.timer_queue = queue;
        self
    }

    /// Traces message delivery from the start (see [`MessageTracing`]). Default: off.
    /// [`Environment::set_message_tracing`] changes it at run time.
    pub fn message_tracing(mut self, tracing: MessageTracing) -> Self {
        self.message_tracing = Some(tracing);
        self
    }

    /// Starts the environment in the background.
    pub fn start(self) -> Result<WrappedEnv, DispatcherError> {
        let autoshutdown = self.autoshutdown.unwrap_or(false);
        let env = self.build(autoshutdown)?;
        env.0.init_done.store(true, Ordering::Release);
        Ok(WrappedEnv { env })
    }

    /// Runs the environment on this thread until it stops (see [`launch`]).
    pub fn launch<F>(self, init: F) -> Result<(), LaunchError>
    where
        F: FnOnce(&Environment) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
    {
        let autoshutdown = self.autoshutdown.unwrap_or(true);
        let env = WrappedEnv {
            env: self.build(autoshutdown)?,
        };
        if let Err(e) = init(&env) {
            env.stop();
            env.wait();
            return Err(LaunchError::Init(e));
        }
        // SeqCst with `coop_gone` / `last_coop_gone`: either we see the count at zero, or
        // the worker that brought it there sees `init_done` and stops the environment.
        env.0.init_done.store(true, Ordering::SeqCst);
        if autoshutdown && env.0.coops.load(Ordering::SeqCst) == 0 {
            env.stop();
        }
        env.wait();
        Ok(())
    }

    fn build(self, autoshutdown: bool) -> Result<Environment, DispatcherError> {
        let shared = Arc::new(EnvShared {
            root: Mutex::new(None),
            default_binder: OnceLock::new(),
            dispatchers: Mutex::new(Vec::new()),
            next_coop_id: AtomicU64::new(1),
            coops: AtomicUsize::new(0),
            autoshutdown,
            init_done: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            finished: Mutex::new(Finished::Running),
            finished_cv: Condvar::new(),
            panic_reaction: self.panic_reaction,
            dead_letters: AtomicU64::new(0),
            dead_letter_hook: self.dead_letter_hook,
            panics: AtomicU64::new(0),
            worker_spin: self.worker_spin,
            group_names: Mutex::new(std::collections::HashMap::new()),
            named: Mutex::new(std::collections::HashMap::new()),
            agents: AtomicUsize::new(0),
            stats_on: Arc::new(AtomicBool::new(false)),
            stats_thread: Mutex::new(None),
            timers: crate::timer::TimerService::new(self.timer_queue),
            tracer: RwLock::new(None),
            unique_named: Mutex::new(std::collections::HashMap::new()),
        });
        if let Some(t) = self.message_tracing {
            shared.set_tracer(Some(t));
        }
        *shared.root.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Arc::new(CoopInner::root(shared.clone())));
        let env = Environment(shared);
        let default = OneThreadBuilder::new()
            .name("default")
            .worker_spin(env.0.worker_spin)
            .build(&env)?;
        let _ = env.0.default_binder.set(default.binder());
        Ok(env)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finished {
    Running,
    /// Every cooperation is gone; dispatchers are shutting down.
    Done,
    /// Worker threads joined.
    Joined,
}

/// Mailboxes by name, held weakly (a name lives while someone holds its mailbox).
type MboxNames = std::collections::HashMap<Arc<str>, std::sync::Weak<IndirectMbox>>;

/// The state shared by every handle to one environment.
pub(crate) struct EnvShared {
    root: Mutex<Option<Arc<CoopInner>>>,
    default_binder: OnceLock<Binder>,
    dispatchers: Mutex<Vec<Arc<dyn DispatcherCore>>>,
    next_coop_id: AtomicU64,
    coops: AtomicUsize,
    autoshutdown: bool,
    init_done: AtomicBool,
    stopping: AtomicBool,
    finished: Mutex<Finished>,
    finished_cv: Condvar,
    pub(crate) panic_reaction: PanicReaction,
    dead_letters: AtomicU64,
    dead_letter_hook: Option<DeadLetterHook>,
    panics: AtomicU64,
    pub(crate) worker_spin: Duration,
    /// Agents of registered cooperations.
    agents: AtomicUsize,
    /// Whether workers keep statistics.
    stats_on: StatsSwitch,
    /// The thread that distributes statistics, while on.
    stats_thread: Mutex<Option<StatsThread>>,
    /// Named mailboxes alive: the same name gives the same mailbox while anyone holds it.
    named: Mutex<MboxNames>,
    /// Delayed and periodic messages, and the `cohort-timer` thread (started with the first).
    pub(crate) timers: Arc<crate::timer::TimerService>,
    /// `active_group` group names in use: name -> (dispatcher id, dispatcher name).
    group_names: Mutex<std::collections::HashMap<String, (usize, String)>>,
    /// Named unique-subscribers mailboxes alive (a namespace of their own).
    unique_named: Mutex<MboxNames>,
    /// The message tracer, while tracing is on (see [`crate::trace`]).
    tracer: RwLock<Option<Arc<MessageTracing>>>,
}

impl Drop for EnvShared {
    fn drop(&mut self) {
        if self.tracer.get_mut().is_ok_and(|t| t.is_some()) {
            trace::count(false);
        }
    }
}

/// The `cohort-stats` thread and its stop flag.
struct StatsThread {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl EnvShared {
    fn named_count(&self) -> usize {
        let names = self.named.lock().unwrap_or_else(|e| e.into_inner());
        names.values().filter(|w| w.strong_count() > 0).count()
    }

    pub(crate) fn stats_switch(&self) -> StatsSwitch {
        self.stats_on.clone()
    }

    pub(crate) fn agents_added(&self, n: usize) {
        self.agents.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn agents_removed(&self, n: usize) {
        self.agents.fetch_sub(n, Ordering::Relaxed);
    }

    /// A snapshot of the statistics.
    fn stats(&self) -> RuntimeStats {
        let dispatchers = self
            .dispatchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|d| d.stats())
            .collect();
        RuntimeStats {
            coops: self.coops.load(Ordering::Relaxed),
            agents: self.agents.load(Ordering::Relaxed),
            named_mailboxes: self.named_count(),
            timers: self.timers.active(),
            dead_letters: self.dead_letters.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
            dispatchers,
        }
    }

    /// Stops the statistics thread, if any; joins it unless called from it.
    fn stop_stats(&self) {
        let t = self
            .stats_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.stats_on.store(false, Ordering::Relaxed);
        if let Some(t) = t {
            t.stop.store(true, Ordering::Release);
            t.handle.thread().unpark();
            if t.handle.thread().id() != std::thread::current().id() {
                let _ = t.handle.join();
            }
        }
    }

    /// Claims `group` for dispatcher `id`; the owner's name if another dispatcher has it.
    pub(crate) fn claim_group(&self, group: &str, id: usize, name: &str) -> Result<(), String> {
        let mut names = self.group_names.lock().unwrap_or_else(|e| e.into_inner());
        match names.get(group) {
            Some((owner, owner_name)) if *owner != id => Err(owner_name.clone()),
            _ => {
                names.insert(group.to_string(), (id, name.to_string()));
                Ok(())
            }
        }
    }

    /// Releases `group` if dispatcher `id` holds it.
    pub(crate) fn release_group(&self, group: &str, id: usize) {
        let mut names = self.group_names.lock().unwrap_or_else(|e| e.into_inner());
        if names.get(group).is_some_and(|(owner, _)| *owner == id) {
            names.remove(group);
        }
    }

    /// The root cooperation; `None` once the environment has stopped and been joined.
    pub(crate) fn root(&self) -> Option<Arc<CoopInner>> {
        self.root.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn default_binder(&self) -> Binder {
        self.default_binder
            .get()
            .expect("default dispatcher is created with the environment")
            .clone()
    }

    pub(crate) fn add_dispatcher(&self, d: Arc<dyn DispatcherCore>) -> Result<(), DispatcherError> {
        let mut ds = self.dispatchers.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_stopping()
            || *self.finished.lock().unwrap_or_else(|e| e.into_inner()) != Finished::Running
        {
            d.shutdown();
            return Err(DispatcherError::EnvironmentStopped);
        }
        ds.push(d);
        Ok(())
    }

    pub(crate) fn next_coop_id(&self) -> CoopId {
        CoopId(self.next_coop_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(crate) fn coop_registered(&self) {
        self.coops.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn coop_gone(&self) {
        self.coops.fetch_sub(1, Ordering::SeqCst);
    }

    /// The root lost its last child while the environment runs.
    pub(crate) fn last_coop_gone(&self) {
        if self.autoshutdown && self.init_done.load(Ordering::SeqCst) {
            self.stop();
        }
    }

    /// Deregisters every cooperation. Idempotent.
    pub(crate) fn stop(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        // Snapshots sent during shutdown would only become dead letters.
        self.stop_stats();
        // Pending timers are cancelled; the timer thread ends.
        self.timers.shutdown();
        if let Some(root) = self.root() {
            root.deregister(DeregReason::Shutdown);
        }
    }

    /// Every cooperation is gone: shut the dispatchers down and wake the waiters.
    pub(crate) fn root_gone(&self) {
        let ds: Vec<_> = self
            .dispatchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut f = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        for d in &ds {
            d.shutdown();
        }
        *f = Finished::Done;
        self.finished_cv.notify_all();
    }

    /// Blocks until every cooperation is gone, then joins every worker thread.
    fn wait(&self) {
        let mut f = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        while *f == Finished::Running {
            f = self.finished_cv.wait(f).unwrap_or_else(|e| e.into_inner());
        }
        if *f == Finished::Joined {
            return;
        }
        drop(f);
        let ds: Vec<_> =
            std::mem::take(&mut *self.dispatchers.lock().unwrap_or_else(|e| e.into_inner()));
        for d in &ds {
            d.join();
        }
        // Break the root <-> environment cycle.
        let root = self.root.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(root);
        *self.finished.lock().unwrap_or_else(|e| e.into_inner()) = Finished::Joined;
        self.finished_cv.notify_all();
    }

    /// Replaces the message tracer (`None`: tracing off).
    fn set_tracer(&self, t: Option<MessageTracing>) {
        let mut slot = self.tracer.write().unwrap_or_else(|e| e.into_inner());
        let was_on = slot.is_some();
        *slot = t.map(Arc::new);
        if was_on != slot.is_some() {
            trace::count(slot.is_some());
        }
    }

    /// Reports a delivery step to the tracer, if this environment traces.
    #[cold]
    pub(crate) fn trace(&self, e: &TraceEvent<'_>) {
        let tracer = self
            .tracer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(t) = tracer
            && t.emit(e).is_err()
        {
            self.count_panic();
            tracing::error!("the message tracer panicked");
        }
    }

    /// Reports a step of `msg`'s delivery to the tracer.
    #[cold]
    pub(crate) fn trace_step(
        &self,
        step: TraceStep,
        msg: &crate::message::Envelope,
        mbox: Option<crate::mbox::MboxId>,
        agent: Option<crate::mbox::MboxId>,
    ) {
        self.trace(&TraceEvent {
            step,
            message_type: msg.type_name(),
            mbox,
            agent,
            agent_name: None,
        })
    }

    #[cold]
    pub(crate) fn dead_letter(&self, message_type: &'static str, reason: DeliveryFailure) {
        if trace::on() {
            self.trace(&TraceEvent {
                step: TraceStep::Dropped(reason),
                message_type,
                mbox: None,
                agent: None,
                agent_name: None,
            });
        }
        if let Some(hook) = &self.dead_letter_hook {
            let letter = DeadLetter {
                message_type,
                reason,
            };
            // The hook runs on a sender's or a worker's thread: its panic must not unwind
            // through the runtime.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&letter))).is_err() {
                self.count_panic();
                tracing::error!(message_type, %reason, "the dead-letter hook panicked");
            }
        }
        // Counted last, with release ordering: whoever sees the count (an
        // `Environment::dead_letters()` load) also sees what the trace and the hook did.
        self.dead_letters.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn count_panic(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
    }
}

/// The body of the `cohort-stats` thread: a snapshot every period, until stopped.
fn stats_loop(env: std::sync::Weak<EnvShared>, stop: Arc<AtomicBool>, config: StatsConfig) {
    let mut next = std::time::Instant::now() + config.period;
    loop {
        let now = std::time::Instant::now();
        if now < next {
            std::thread::park_timeout(next - now);
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        if std::time::Instant::now() < next {
            continue; // woken early (spuriously): wait for the period
        }
        next += config.period;
        let Some(env) = env.upgrade() else { return };
        let snapshot = env.stats();
        if config.export_metrics {
            crate::stats::export(&snapshot);
        }
        for m in &config.targets {
            m.send(snapshot.clone());
        }
    }
}

/// A handle to an environment; clone it freely.
#[derive(Clone)]
pub struct Environment(Arc<EnvShared>);

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
    ///         ctx.on(|_: &mut Self, s: &RuntimeStats, ctx: &mut Context<'_, Self>| {
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
        if config.period < Duration::from_millis(1) {
            return Err(DispatcherError::invalid(
                "stats",
                "period",
                "must be at least 1 ms",
            ));
        }
        if self.is_stopping() {
            return Err(DispatcherError::EnvironmentStopped);
        }
        self.0.stop_stats();
        self.0.stats_on.store(true, Ordering::Relaxed);
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(&self.0);
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("cohort-stats".into())
            .spawn(move || stats_loop(weak, stop2, config))
            .map_err(|source| DispatcherError::Spawn {
                name: "stats".into(),
                source,
            })?;
        *self
            .0
            .stats_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(StatsThread { stop, handle });
        // A `stop` that raced with this call may have missed the thread: stop it now.
        if self.is_stopping() {
            self.0.stop_stats();
            return Err(DispatcherError::EnvironmentStopped);
        }
        Ok(())
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
    env: Environment,
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
