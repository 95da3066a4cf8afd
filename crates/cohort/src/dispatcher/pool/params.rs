//! What the builders of the pool dispatchers (`thread_pool`, `adv_thread_pool`,
//! `work_stealing`) share: their binding parameters, their parameters and setters, and the
//! start of a pool. Every default is documented where it is set.

use super::{HomeQueuePace, Pool, PoolCore, PoolPolicy};
use crate::defaults;
use crate::dispatcher::handle::typed_handle;
use crate::dispatcher::reuse::spin::WorkerSpin;
use crate::dispatcher::{BindParams, Binder, Fifo};
use crate::error::DispatcherError;
use crate::runtime::env::Environment;
use std::sync::Arc;

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

typed_handle!(
    /// A handle to any pool dispatcher (`thread_pool`, `adv_thread_pool`, `work_stealing`),
    /// for code that binds with [`PoolBindParams`] to a pool of any kind; each pool's own
    /// handle converts into it with `into()`.
    PoolHandle
);

impl PoolHandle {
    /// A binder with pool parameters (fifo, `max_demands_at_once`).
    ///
    /// ```
    /// use cohort::dispatcher::{Fifo, PoolBindParams, PoolHandle};
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let pool: PoolHandle = cohort::ThreadPoolBuilder::new().threads(2).build(&env).unwrap().into();
    /// let binder = pool
    ///     .pool_binder(PoolBindParams::new().fifo(Fifo::Individual).max_demands_at_once(100))
    ///     .unwrap();
    /// assert!(pool.pool_binder(PoolBindParams::new().max_demands_at_once(0)).is_err());
    /// # drop(binder);
    /// ```
    pub fn pool_binder(&self, params: PoolBindParams) -> Result<Binder, DispatcherError> {
        params.validate(self.name())?;
        Ok(self.0.binder_with(params.into_bind_params()))
    }
}

/// Declares the typed handle of one pool dispatcher: a [`PoolHandle`] that converts into it
/// and into [`DispatcherHandle`](crate::dispatcher::DispatcherHandle).
macro_rules! pool_handle {
    ($(#[$doc:meta])* $name:ident) => {
        crate::dispatcher::handle::typed_handle!($(#[$doc])* $name);

        impl $name {
            /// A binder with pool parameters (fifo, `max_demands_at_once`); an error if they
            /// are invalid.
            pub fn pool_binder(
                &self,
                params: crate::dispatcher::PoolBindParams,
            ) -> Result<crate::dispatcher::Binder, crate::DispatcherError> {
                crate::dispatcher::PoolHandle::from(self.clone()).pool_binder(params)
            }
        }

        impl From<$name> for crate::dispatcher::PoolHandle {
            fn from(h: $name) -> Self {
                crate::dispatcher::PoolHandle(h.0)
            }
        }
    };
}
pub(crate) use pool_handle;

/// The parameters shared by the pool builders.
#[derive(Debug, Clone)]
pub(crate) struct PoolParams {
    pub(crate) name: String,
    pub(crate) threads: usize,
    pub(crate) worker_spin: WorkerSpin,
    /// `work_stealing` only (see
    /// [`WorkStealingBuilder::home_queue_interval`](crate::WorkStealingBuilder::home_queue_interval)
    /// and [`WorkStealingBuilder::home_queue_wait`](crate::WorkStealingBuilder::home_queue_wait)).
    pub(crate) home: HomeQueuePace,
}

impl PoolParams {
    /// The defaults of a pool named `name`: [`defaults::pool_threads`] workers (the machine's
    /// available parallelism), [`defaults::WORKER_SPIN`], and
    /// [`defaults::HOME_QUEUE_INTERVAL`] and [`defaults::HOME_QUEUE_WAIT`] for
    /// `work_stealing`.
    pub(crate) fn named(name: &str) -> Self {
        Self {
            name: name.into(),
            threads: defaults::pool_threads(),
            worker_spin: WorkerSpin::default(),
            home: HomeQueuePace::default(),
        }
    }

    /// Validates the parameters, starts a pool of `policy` and registers it with `env`.
    pub(crate) fn build<P: PoolPolicy>(
        self,
        env: &Environment,
        policy: impl FnOnce(usize, HomeQueuePace) -> P,
    ) -> Result<PoolHandle, DispatcherError> {
        if self.threads == 0 {
            return Err(DispatcherError::invalid(
                &self.name,
                "threads",
                "must be at least 1 (the default is the machine's available parallelism)",
            ));
        }
        self.worker_spin.validate(&self.name)?;
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
        Ok(PoolHandle(env.shared().add_dispatcher(core)?))
    }
}

/// The `name`, `threads` and `worker_spin` setters of a pool builder (field `params`).
macro_rules! pool_builder_setters {
    () => {
        /// The dispatcher's name (its threads are `cohort-<name>-<i>`).
        pub fn name(mut self, name: impl Into<String>) -> Self {
            self.params.name = name.into();
            self
        }

        /// Number of worker threads (at least 1). Default: [`defaults::pool_threads`](crate::defaults::pool_threads), the
        /// machine's available parallelism.
        pub fn threads(mut self, n: usize) -> Self {
            self.params.threads = n;
            self
        }

        /// How an idle worker waits before it parks: a [`WorkerSpin`](crate::WorkerSpin), or a
        /// `Duration` to spin exactly that long. Default: [`WorkerSpin::default`](crate::WorkerSpin::default),
        /// adaptive up to [`defaults::WORKER_SPIN`](crate::defaults::WORKER_SPIN); each worker
        /// learns on its own. Checked by `build`.
        pub fn worker_spin(mut self, spin: impl Into<crate::WorkerSpin>) -> Self {
            self.params.worker_spin = spin.into();
            self
        }
    };
}
pub(crate) use pool_builder_setters;
