//! Builders of the pool dispatchers (`thread_pool`, `work_stealing`) and their binding
//! parameters. Every default is documented where it is set.

use super::pool::{Adv, HomeQueuePace, Pool, PoolCore, PoolPolicy, ThreadPool, WorkStealing};
use super::{BindParams, DispatcherHandle, Fifo};
use crate::defaults;
use crate::env::Environment;
use crate::error::DispatcherError;
use std::sync::Arc;
use std::time::Duration;

/// Per-binding parameters of a pool dispatcher (SObjectizer's `bind_params_t`).
///
/// ```
/// use cohort::dispatcher::{Fifo, PoolBindParams};
/// let p = PoolBindParams::new()          // fifo: the dispatcher's default
///     .fifo(Fifo::Individual)            // one queue per agent
///     .max_demands_at_once(100);         // default: defaults::MAX_DEMANDS_AT_ONCE (4)
/// # let _ = p;
/// ```
#[derive(Debug, Clone, Default)]
pub struct PoolBindParams {
    fifo: Option<Fifo>,
    max_demands_at_once: Option<usize>,
}

impl PoolBindParams {
    /// The dispatcher's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// One queue per cooperation or per agent. Default: the dispatcher's
    /// ([`Fifo::Cooperation`] for `thread_pool`, [`Fifo::Individual`] for `work_stealing`).
    pub fn fifo(mut self, fifo: Fifo) -> Self {
        self.fifo = Some(fifo);
        self
    }

    /// How many demands a worker runs from one queue before it moves on (at least 1).
    /// Default: [`defaults::MAX_DEMANDS_AT_ONCE`].
    pub fn max_demands_at_once(mut self, n: usize) -> Self {
        self.max_demands_at_once = Some(n);
        self
    }

    pub(crate) fn validate(&self, dispatcher: &str) -> Result<(), DispatcherError> {
        if self.max_demands_at_once == Some(0) {
            return Err(DispatcherError::invalid(
                dispatcher,
                "max_demands_at_once",
                "must be at least 1 (4 is the default; 100 and more favour dense self-sends)",
            ));
        }
        Ok(())
    }

    pub(crate) fn into_bind_params(self) -> BindParams {
        match (self.fifo, self.max_demands_at_once) {
            (None, None) => BindParams::Default,
            (fifo, n) => BindParams::Pool {
                fifo,
                max_demands_at_once: n.unwrap_or(defaults::MAX_DEMANDS_AT_ONCE),
            },
        }
    }
}

/// The parameters shared by both pool builders.
#[derive(Debug, Clone)]
struct PoolParams {
    name: String,
    threads: usize,
    worker_spin: Duration,
    /// `work_stealing` only (see [`WorkStealingBuilder::home_queue_interval`] and
    /// [`WorkStealingBuilder::home_queue_wait`]).
    home: HomeQueuePace,
}

impl PoolParams {
    fn build<P: PoolPolicy>(
        self,
        env: &Environment,
        policy: impl FnOnce(usize, HomeQueuePace) -> P,
    ) -> Result<DispatcherHandle, DispatcherError> {
        if self.threads == 0 {
            return Err(DispatcherError::invalid(
                &self.name,
                "threads",
                "must be at least 1 (the default is the machine's available parallelism)",
            ));
        }
        if self.home.interval == 0 {
            return Err(DispatcherError::invalid(
                &self.name,
                "home_queue_interval",
                "must be at least 1 (1 serves work sent from outside the pool first at every \
                 turn; the default is 61)",
            ));
        }
        let pool = Pool::start(
            self.name.clone(),
            policy(self.threads, self.home),
            self.threads,
            self.worker_spin,
            env.shared().stats_switch(),
        )
        .map_err(|source| DispatcherError::Spawn {
            name: self.name.clone(),
            source,
        })?;
        let core = Arc::new(PoolCore(pool));
        env.shared().add_dispatcher(core.clone())?;
        Ok(DispatcherHandle::new(core))
    }
}

macro_rules! pool_builder_setters {
    () => {
        /// The dispatcher's name (its threads are `cohort-<name>-<i>`).
        pub fn name(mut self, name: impl Into<String>) -> Self {
            self.params.name = name.into();
            self
        }

        /// Number of worker threads (at least 1). Default: [`defaults::pool_threads`], the
        /// machine's available parallelism.
        pub fn threads(mut self, n: usize) -> Self {
            self.params.threads = n;
            self
        }

        /// How long an idle worker spins before parking. Default: [`defaults::WORKER_SPIN`].
        pub fn worker_spin(mut self, spin: Duration) -> Self {
            self.params.worker_spin = spin;
            self
        }
    };
}

/// Builds a `thread_pool` dispatcher: N workers taking woken queues from one shared FIFO,
/// each queue with work left after its turn going to the back of its worker's own FIFO
/// (behind the queues woken since; workers even out their FIFOs). Default binding:
/// [`Fifo::Cooperation`], [`defaults::MAX_DEMANDS_AT_ONCE`].
///
/// ```
/// use cohort::dispatcher::{Fifo, PoolBindParams};
/// let env = cohort::Environment::builder().start().unwrap();
/// let pool = cohort::ThreadPoolBuilder::new().name("workers").threads(2).build(&env).unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(pool.pool_binder(PoolBindParams::new().fifo(Fifo::Individual)).unwrap());
/// assert!(cohort::ThreadPoolBuilder::new().threads(0).build(&env).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct ThreadPoolBuilder {
    params: PoolParams,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        Self {
            params: PoolParams {
                name: "thread_pool".into(),
                threads: defaults::pool_threads(),
                worker_spin: defaults::WORKER_SPIN,
                home: HomeQueuePace::default(),
            },
        }
    }
}

impl ThreadPoolBuilder {
    /// Default parameters (name `"thread_pool"`).
    pub fn new() -> Self {
        Self::default()
    }

    pool_builder_setters!();

    /// Starts the workers and registers the dispatcher with `env`.
    pub fn build(self, env: &Environment) -> Result<DispatcherHandle, DispatcherError> {
        self.params
            .build(env, |threads, _| ThreadPool::new(threads))
    }
}

/// Builds a `work_stealing` dispatcher: N workers with their own run queues. An agent woken by
/// a send from a worker runs next on that worker (a LIFO slot, taken at most
/// [`defaults::LIFO_STREAK`] times in a row), stays there while it has work, and is stolen,
/// oldest first, only by an idle worker. An agent woken by a send from outside the pool goes
/// back to the worker that ran it last (its home), whose cache may still hold its state.
/// Default binding: [`Fifo::Individual`],
/// [`defaults::MAX_DEMANDS_AT_ONCE`].
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// let ws = cohort::WorkStealingBuilder::new().threads(2).build(&env).unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(ws.binder());
/// ```
#[derive(Debug, Clone)]
pub struct WorkStealingBuilder {
    params: PoolParams,
}

impl Default for WorkStealingBuilder {
    fn default() -> Self {
        Self {
            params: PoolParams {
                name: "work_stealing".into(),
                threads: defaults::pool_threads(),
                worker_spin: defaults::WORKER_SPIN,
                home: HomeQueuePace::default(),
            },
        }
    }
}

impl WorkStealingBuilder {
    /// Default parameters (name `"work_stealing"`).
    pub fn new() -> Self {
        Self::default()
    }

    pool_builder_setters!();

    /// Every how many turns a worker kept busy by its own agents looks at its home run queue
    /// (agents woken by sends from outside the pool) and, once that run queue has held work
    /// for [`home_queue_wait`](Self::home_queue_wait), serves it before its own deque, as
    /// tokio's `global_queue_interval`. At least 1. Default:
    /// [`defaults::HOME_QUEUE_INTERVAL`] (61).
    ///
    /// With the wait, such a worker takes one agent woken from outside per wait, at its first
    /// look after the wait ran out (see [`home_queue_wait`](Self::home_queue_wait)). With no
    /// wait (`home_queue_wait(Duration::ZERO)`), it takes one at every look: an agent woken
    /// from outside waits behind the worker's busy agents about this many turns of up to
    /// `max_demands_at_once` demands each per agent ahead of it, and 1 serves work from
    /// outside first at every turn.
    ///
    /// ```
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let ws = cohort::WorkStealingBuilder::new()
    ///     .threads(2)
    ///     .home_queue_interval(509)
    ///     .build(&env)
    ///     .unwrap();
    /// # let _ = ws;
    /// let err = cohort::WorkStealingBuilder::new().home_queue_interval(0).build(&env);
    /// assert!(err.unwrap_err().to_string().contains("home_queue_interval"));
    /// ```
    pub fn home_queue_interval(mut self, turns: usize) -> Self {
        self.params.home.interval = turns;
        self
    }

    /// How long a worker kept busy by its own agents lets its home run queue (agents woken by
    /// sends from outside the pool) hold work before it serves it first, at its next look
    /// (every [`home_queue_interval`](Self::home_queue_interval) turns); the wait starts
    /// again after each agent so taken. A worker whose own deque runs dry serves its home run
    /// queue at once, and an idle worker steals from it at once. `Duration::ZERO` serves it at
    /// every look. Default: [`defaults::HOME_QUEUE_WAIT`] (1 ms).
    ///
    /// So a worker busy with its own agents takes one agent woken from outside per wait (plus
    /// up to the interval's turns), oldest first: the k-th in line waits about k waits. The
    /// others gather messages meanwhile and join that worker's round together when it runs
    /// out of its own work (or an idle worker takes them at once), instead of one per look:
    /// what keeps a pool fed by a plain thread as fast as `thread_pool` on a few hundred
    /// agents with small states, and faster than with no wait on many agents with large
    /// states (`docs/BENCHMARKS.md`, locality, 2026-11-25). Agents that have not run yet
    /// (just bound, their `start` waiting) skip the wait: a burst of them on a busy pool
    /// starts at the interval's pace. What waits is work for agents that ran before.
    ///
    /// ```
    /// use std::time::Duration;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// // Work from outside first at every turn: lowest latency for it, tokio's order.
    /// let ws = cohort::WorkStealingBuilder::new()
    ///     .threads(2)
    ///     .home_queue_interval(1)
    ///     .home_queue_wait(Duration::ZERO)
    ///     .build(&env)
    ///     .unwrap();
    /// # let _ = ws;
    /// ```
    pub fn home_queue_wait(mut self, wait: Duration) -> Self {
        self.params.home.wait = wait;
        self
    }

    /// Starts the workers and registers the dispatcher with `env`.
    pub fn build(self, env: &Environment) -> Result<DispatcherHandle, DispatcherError> {
        self.params.build(env, WorkStealing::new)
    }
}

/// Builds an `adv_thread_pool` dispatcher: a `thread_pool` (one shared FIFO run queue for
/// every scheduled queue, same binding parameters) on which the handlers an agent subscribed with
/// [`Context::on_thread_safe`](crate::Context::on_thread_safe) may run in parallel on several
/// workers. Its other handlers (and `start`, `finish`) stay exclusive: one runs only when no
/// other handler of its queue runs, thread-safe or not. Demands still start in FIFO order per
/// queue. Default binding: [`Fifo::Cooperation`] (exclusion then spans the cooperation's
/// agents, as in SObjectizer), [`defaults::MAX_DEMANDS_AT_ONCE`].
///
/// ```
/// use cohort::dispatcher::{Fifo, PoolBindParams};
/// let env = cohort::Environment::builder().start().unwrap();
/// let adv = cohort::AdvThreadPoolBuilder::new().threads(2).build(&env).unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(adv.pool_binder(PoolBindParams::new().fifo(Fifo::Individual)).unwrap());
/// assert!(cohort::AdvThreadPoolBuilder::new().threads(0).build(&env).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct AdvThreadPoolBuilder {
    params: PoolParams,
}

impl Default for AdvThreadPoolBuilder {
    fn default() -> Self {
        Self {
            params: PoolParams {
                name: "adv_thread_pool".into(),
                threads: defaults::pool_threads(),
                worker_spin: defaults::WORKER_SPIN,
                home: HomeQueuePace::default(),
            },
        }
    }
}

impl AdvThreadPoolBuilder {
    /// Default parameters (name `"adv_thread_pool"`).
    pub fn new() -> Self {
        Self::default()
    }

    pool_builder_setters!();

    /// Starts the workers and registers the dispatcher with `env`.
    pub fn build(self, env: &Environment) -> Result<DispatcherHandle, DispatcherError> {
        self.params.build(env, |_, _| Adv::new())
    }
}
