//! `thread_pool`: N workers sharing one FIFO run queue (the policy is in
//! [`pool::thread_pool`](super::pool)).

use super::pool::ThreadPool;
use super::pool::params::{PoolParams, pool_builder_setters, pool_handle};
use crate::error::DispatcherError;
use crate::runtime::env::Environment;

/// Builds a `thread_pool` dispatcher: N workers taking woken queues from one shared FIFO,
/// each queue with work left after its turn going to the back of its worker's own FIFO
/// (behind the queues woken since; workers even out their FIFOs). Default binding:
/// [`Fifo::Cooperation`](super::Fifo::Cooperation), [`defaults::MAX_DEMANDS_AT_ONCE`](crate::defaults::MAX_DEMANDS_AT_ONCE).
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
            params: PoolParams::named("thread_pool"),
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
    pub fn build(self, env: &Environment) -> Result<ThreadPoolHandle, DispatcherError> {
        self.params
            .build(env, |threads, _| ThreadPool::new(threads))
            .map(|h| ThreadPoolHandle(h.0))
    }
}

pool_handle!(
    /// A handle to a `thread_pool` dispatcher.
    ThreadPoolHandle
);
