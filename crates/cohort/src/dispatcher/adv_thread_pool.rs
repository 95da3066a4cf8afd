//! `adv_thread_pool`: a `thread_pool` on which an agent's thread-safe handlers may run in
//! parallel (the policy is in [`pool::adv`](super::pool)).

use super::pool::Adv;
use super::pool::params::{PoolParams, pool_builder_setters, pool_handle};
use crate::error::DispatcherError;
use crate::runtime::env::Environment;

/// Builds an `adv_thread_pool` dispatcher: a `thread_pool` (one shared FIFO run queue for
/// every scheduled queue, same binding parameters) on which the handlers an agent subscribed with
/// [`Context::on_thread_safe`](crate::Context::on_thread_safe) may run in parallel on several
/// workers. Its other handlers (and `start`, `finish`) stay exclusive: one runs only when no
/// other handler of its queue runs, thread-safe or not. Demands still start in FIFO order per
/// queue. Default binding: [`Fifo::Cooperation`](super::Fifo::Cooperation) (exclusion then spans the cooperation's
/// agents, as in SObjectizer), [`defaults::MAX_DEMANDS_AT_ONCE`](crate::defaults::MAX_DEMANDS_AT_ONCE).
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
            params: PoolParams::named("adv_thread_pool"),
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
    pub fn build(self, env: &Environment) -> Result<AdvThreadPoolHandle, DispatcherError> {
        self.params
            .build(env, |_, _| Adv::new())
            .map(|h| AdvThreadPoolHandle(h.0))
    }
}

pool_handle!(
    /// A handle to an `adv_thread_pool` dispatcher.
    AdvThreadPoolHandle
);
