//! Dispatchers: the worker threads that run agents' demands.
//!
//! An agent is bound to a dispatcher through a [`Binder`] (per cooperation with
//! [`Coop::set_binder`](crate::Coop::set_binder), or per agent with
//! [`Coop::add_with_binder`](crate::Coop::add_with_binder)). Binding hands the agent an
//! `EventQueue`; from then on, sending to the agent is a push to that queue, with no call
//! into the dispatcher. So a new dispatcher kind (thread pools, work stealing) plugs in by
//! implementing `DispatcherCore` and deciding which queue each agent gets and which worker
//! runs it; agent code does not change.
//!
//! Dispatchers here:
//! - [`one_thread`](OneThreadBuilder): one worker thread for all its agents (the default).
//! - [`active_obj`](ActiveObjBuilder): a worker thread per agent.
//! - [`active_group`](ActiveGroupBuilder): a worker thread per named group of agents.
//! - [`thread_pool`](ThreadPoolBuilder): N workers sharing one FIFO run queue.
//! - [`prio_one_thread`](PrioOneThreadBuilder): one worker thread serving agents by
//!   priority, strictly ordered or by quotas per priority.
//! - [`work_stealing`](WorkStealingBuilder): N workers with their own run queues, a LIFO
//!   slot for the agent a send just woke, and stealing by idle workers.
//! - [`adv_thread_pool`](AdvThreadPoolBuilder): a `thread_pool` on which an agent's
//!   thread-safe handlers may run in parallel.

mod active_group;
mod active_obj;
mod adv_thread_pool;
mod handle;
mod one_thread;
pub(crate) mod pool;
mod prio_one_thread;
pub(crate) mod reuse;
pub(crate) mod test_thread;
mod thread_pool;
pub mod turn_end;
mod work_stealing;

pub use active_group::{ActiveGroupBuilder, ActiveGroupHandle};
pub use active_obj::ActiveObjBuilder;
pub use adv_thread_pool::{AdvThreadPoolBuilder, AdvThreadPoolHandle};
pub use handle::DispatcherHandle;
pub use one_thread::OneThreadBuilder;
pub use pool::params::{PoolBindParams, PoolHandle};
pub use prio_one_thread::{PrioOneThreadBuilder, PrioOneThreadHandle, Priority};
pub use reuse::spin::{MAX_WORKER_SPIN, MIN_ADAPTIVE_SPIN, WorkerSpin};
pub use thread_pool::{ThreadPoolBuilder, ThreadPoolHandle};
pub use work_stealing::{WorkStealingBuilder, WorkStealingHandle};

use crate::runtime::coop::CoopId;

/// How a pool dispatcher gives queues to agents.
///
/// ```
/// assert_eq!(cohort::dispatcher::Fifo::default(), cohort::dispatcher::Fifo::Cooperation);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fifo {
    /// One queue per cooperation: its agents never run in parallel and keep one order
    /// (SObjectizer's default).
    #[default]
    Cooperation,
    /// One queue per agent: agents of one cooperation may run in parallel.
    Individual,
}

/// Per-binding parameters a dispatcher understands.
#[derive(Debug, Clone, Default)]
pub(crate) enum BindParams {
    /// The dispatcher's defaults.
    #[default]
    Default,
    /// An `active_group` binding: the group's name.
    Group(Arc<str>),
    /// A priority dispatcher binding: the agent's priority (0 lowest .. 7 highest).
    Priority(u8),
    /// A pool binding (`fifo: None`: the pool's default fifo).
    Pool {
        fifo: Option<Fifo>,
        max_demands_at_once: usize,
    },
}

use crate::error::BindError;
use crate::queue::QueueArc;
use crate::runtime::env::EnvId;
use std::fmt;
use std::sync::Arc;

/// What every dispatcher implements. Binding is not on the message path, so this is a trait
/// object; the message path only sees the concrete `EventQueue`.
pub(crate) trait DispatcherCore: Send + Sync {
    /// The dispatcher's name.
    fn name(&self) -> &str;
    /// Binds `agents` agents (at least one) of cooperation `coop` with the same parameters,
    /// handing each one's queue (where its demands go) to `bound` in order. On an error the
    /// agents already handed a queue stay bound: the caller unbinds them. A dispatcher with a
    /// lock or a shared count takes it once for all of them.
    fn bind_group(
        &self,
        params: &BindParams,
        coop: CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError>;
    /// `agents` agents (at least one) of cooperation `coop`, bound with `params` to `queue`,
    /// have finished: a cooperation's agents on one queue through one binder are unbound in
    /// one call.
    fn unbind(&self, params: &BindParams, coop: CoopId, queue: &QueueArc, agents: usize);
    /// Refuses new bindings; worker threads exit once their agents are gone.
    fn shutdown(&self);
    /// Joins the worker threads (after `shutdown`, once their agents are gone).
    fn join(&self);
    /// The dispatcher's statistics (worker counters are kept while statistics are on).
    fn stats(&self) -> crate::stats::DispatcherStats;
}

/// [`DispatcherCore::bind_group`] for a dispatcher that binds its agents one at a time (a
/// thread each, or a group looked up by name): `bind` once per agent.
fn bind_each(
    agents: usize,
    bound: &mut dyn FnMut(QueueArc),
    mut bind: impl FnMut() -> Result<QueueArc, BindError>,
) -> Result<(), BindError> {
    for _ in 0..agents {
        bound(bind()?);
    }
    Ok(())
}

/// [`DispatcherCore::bind_group`]'s hand-off for a dispatcher whose `agents` agents of one
/// binding share `queue` (its one thread's, a priority's, a cooperation's): each gets it.
fn hand_to_each(agents: usize, queue: QueueArc, bound: &mut dyn FnMut(QueueArc)) {
    for _ in 1..agents {
        bound(queue.clone());
    }
    bound(queue);
}

/// Binds agents to a dispatcher. Cheap to clone: one word, one reference count.
#[derive(Clone)]
pub struct Binder(Arc<BinderInner>);

/// What a [`Binder`] shares between its clones: one word in every agent or cooperation that
/// keeps a binder (a parent that places its children like itself keeps one per agent).
struct BinderInner {
    core: Arc<dyn DispatcherCore>,
    params: BindParams,
    /// The environment the dispatcher belongs to (a cooperation of another refuses it).
    env: EnvId,
}

impl Binder {
    pub(crate) fn new(core: Arc<dyn DispatcherCore>, params: BindParams, env: EnvId) -> Self {
        Self(Arc::new(BinderInner { core, params, env }))
    }

    /// The environment whose dispatcher this binder binds to.
    #[inline]
    pub(crate) fn env(&self) -> EnvId {
        self.0.env
    }

    /// Binds `agents` agents of cooperation `coop` (see [`DispatcherCore::bind_group`]).
    pub(crate) fn bind_group(
        &self,
        coop: CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError> {
        self.0.core.bind_group(&self.0.params, coop, agents, bound)
    }

    /// Unbinds `agents` agents (at least one) of cooperation `coop`, all bound to `q` through
    /// this binder.
    pub(crate) fn unbind(&self, coop: CoopId, q: &QueueArc, agents: usize) {
        self.0.core.unbind(&self.0.params, coop, q, agents)
    }

    /// Unbinds an agent of cooperation `coop` whose registration failed after it was bound.
    pub(crate) fn unbind_queue_of(&self, coop: CoopId, header: &crate::agent::cell::Header) {
        // SAFETY: called only for agents bound during the failing registration, on the
        // registering thread, so the queue is set.
        let q = unsafe { header.queue_arc() };
        self.0.core.unbind(&self.0.params, coop, q, 1)
    }

    /// The dispatcher's name.
    pub fn dispatcher_name(&self) -> &str {
        self.0.core.name()
    }
}

impl fmt::Debug for Binder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Binder")
            .field("dispatcher", &self.0.core.name())
            .finish()
    }
}
