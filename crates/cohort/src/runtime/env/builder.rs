//! [`EnvironmentBuilder`] and [`launch`]: how an environment is configured and started.

use super::shared::Finished;
use super::{EnvId, EnvShared, Environment, WrappedEnv};
use crate::defaults;
use crate::dispatcher::{DispatcherCore, OneThreadBuilder};
use crate::error::{DispatcherError, LaunchError};
use crate::mailbox::dead_letter::{DeadLetter, DeadLetterHook};
use crate::panic::PanicReaction;
use crate::runtime::coop::CoopInner;
use crate::trace::MessageTracing;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};

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
    worker_spin: crate::WorkerSpin,
    timer_queue: crate::timer::TimerQueue,
    message_tracing: Option<MessageTracing>,
    /// Where agents' futures run.
    futures: crate::future::RuntimeChoice,
    /// The default dispatcher, if not a `one_thread` (the test kit's threadless one).
    default_dispatcher: Option<Arc<dyn DispatcherCore>>,
}

impl Default for EnvironmentBuilder {
    fn default() -> Self {
        Self {
            autoshutdown: None,
            panic_reaction: PanicReaction::default(),
            dead_letter_hook: None,
            worker_spin: crate::WorkerSpin::default(),
            timer_queue: defaults::TIMER_QUEUE,
            message_tracing: None,
            futures: crate::future::RuntimeChoice::default(),
            default_dispatcher: None,
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

    /// How the default dispatcher's worker waits before it parks when it has nothing to do:
    /// a [`WorkerSpin`](crate::WorkerSpin), or a `Duration` to spin exactly that long.
    /// Default: [`WorkerSpin::default`](crate::WorkerSpin::default), adaptive up to
    /// [`defaults::WORKER_SPIN`]. Checked by `start` (an invalid one fails it with
    /// [`DispatcherError::InvalidParameter`]).
    pub fn worker_spin(mut self, spin: impl Into<crate::WorkerSpin>) -> Self {
        self.worker_spin = spin.into();
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

    /// Runs agents' futures ([`Context::spawn`](crate::Context::spawn)) on the application's
    /// tokio runtime: the environment neither starts nor stops one. Default: a runtime of
    /// its own, started on first use (see [`async_threads`](Self::async_threads)).
    ///
    /// ```
    /// let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    /// let env = cohort::Environment::builder()
    ///     .tokio_handle(rt.handle().clone())
    ///     .start()
    ///     .unwrap();
    /// # drop(env);
    /// ```
    pub fn tokio_handle(mut self, handle: tokio::runtime::Handle) -> Self {
        self.futures = crate::future::RuntimeChoice::Handle(handle);
        self
    }

    /// The worker threads of the tokio runtime the environment starts, on the first future
    /// an agent spawns, when no [`tokio_handle`](Self::tokio_handle) is given; it stops with
    /// the environment. Default: [`defaults::ASYNC_THREADS`].
    ///
    /// Errors: [`AsyncError::ZeroThreads`](crate::AsyncError::ZeroThreads) for zero.
    ///
    /// ```
    /// let env = cohort::Environment::builder().async_threads(2)?.start()?;
    /// # drop(env);
    /// assert!(cohort::Environment::builder().async_threads(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn async_threads(mut self, threads: usize) -> Result<Self, crate::AsyncError> {
        if threads == 0 {
            return Err(crate::AsyncError::ZeroThreads);
        }
        self.futures = crate::future::RuntimeChoice::Embedded(threads);
        Ok(self)
    }

    /// Makes `core` the default dispatcher instead of a `one_thread` one.
    pub(crate) fn default_dispatcher(mut self, core: Arc<dyn DispatcherCore>) -> Self {
        self.default_dispatcher = Some(core);
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
        // Before anything is built: nothing to undo.
        self.worker_spin.validate("default")?;
        let shared = Arc::new(EnvShared {
            id: EnvId::next(),
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
            supervision: Default::default(),
            worker_spin: self.worker_spin,
            group_names: Mutex::new(std::collections::HashMap::new()),
            named: Mutex::new(std::collections::HashMap::new()),
            agents: AtomicUsize::new(0),
            stats_on: Arc::new(AtomicBool::new(false)),
            stats_thread: Mutex::new(None),
            timers: crate::timer::TimerService::new(self.timer_queue),
            tracer: RwLock::new(None),
            futures: crate::future::AsyncRuntime::new(self.futures),
            unique_named: Mutex::new(std::collections::HashMap::new()),
        });
        if let Some(t) = self.message_tracing {
            shared.set_tracer(Some(t));
        }
        *shared.root.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Arc::new(CoopInner::root(shared.clone())));
        let env = Environment(shared);
        let default = match self.default_dispatcher {
            Some(core) => env.0.add_dispatcher(core),
            None => OneThreadBuilder::new()
                .name("default")
                .worker_spin(env.0.worker_spin)
                .build(&env),
        };
        match default {
            Ok(default) => {
                let _ = env.0.default_binder.set(default.binder());
                Ok(env)
            }
            Err(e) => {
                // The root cooperation and the environment hold each other until a stop
                // releases the root; a build that fails releases it here.
                env.0.root.lock().unwrap_or_else(|e| e.into_inner()).take();
                Err(e)
            }
        }
    }
}
