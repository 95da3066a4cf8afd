//! [`PoolCore`]: a pool's `DispatcherCore` face: binding a run of a cooperation's agents (a
//! queue each, or the cooperation's queue from [`CoopQueues`](super::coop_queues::CoopQueues)),
//! unbinding them, shutdown, statistics and join.

use super::{Pool, PoolPolicy};
use crate::agent::demand::Demand;
use crate::defaults;
use crate::dispatcher::{BindParams, DispatcherCore, Fifo};
use crate::error::BindError;
use crate::queue::{EventQueue, QueueArc, Schedule};
use crate::runtime::coop::CoopId;
use crate::stats::DispatcherStats;
use std::sync::Arc;

/// The `DispatcherCore` face of a pool.
pub(crate) struct PoolCore<P: PoolPolicy>(pub(crate) Arc<Pool<P>>);

impl<P: PoolPolicy> PoolCore<P> {
    /// A binding's fifo and `max_demands_at_once` (the pool's defaults for a plain
    /// `binder()`).
    fn binding(params: &BindParams) -> (Fifo, usize) {
        match params {
            BindParams::Pool {
                fifo,
                max_demands_at_once,
            } => (fifo.unwrap_or(P::DEFAULT_FIFO), *max_demands_at_once),
            _ => (P::DEFAULT_FIFO, defaults::MAX_DEMANDS_AT_ONCE),
        }
    }

    /// A new queue run by the pool, which holds a count of it until its last agent is
    /// unbound ([`DispatcherCore::unbind`]).
    fn new_queue(&self, max_demands_at_once: usize) -> QueueArc {
        let scheduler: Arc<dyn Schedule<Demand>> = self.0.clone();
        let q = EventQueue::pooled(scheduler, max_demands_at_once);
        q.hold_for_pool();
        self.0.policy.on_new_queue(&q);
        q
    }
}

impl<P: PoolPolicy> DispatcherCore for PoolCore<P> {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn bind_group(
        &self,
        params: &BindParams,
        coop: CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError> {
        let pool = &self.0;
        if !pool.bound.bind(agents, || pool.wake_all()) {
            return Err(BindError::DispatcherShutDown {
                name: pool.name.clone(),
            });
        }
        let (fifo, max_demands_at_once) = Self::binding(params);
        match fifo {
            Fifo::Individual => {
                for _ in 0..agents {
                    bound(self.new_queue(max_demands_at_once));
                }
            }
            Fifo::Cooperation => {
                let q = pool
                    .coop_queues
                    .bind(coop, agents, || self.new_queue(max_demands_at_once));
                crate::dispatcher::hand_to_each(agents, q, bound);
            }
        }
        Ok(())
    }

    fn unbind(&self, params: &BindParams, coop: CoopId, queue: &QueueArc, agents: usize) {
        let pool = &self.0;
        let last = match Self::binding(params).0 {
            // An agent's own queue.
            Fifo::Individual => true,
            // A cooperation's queue: the last of its agents gives it back.
            Fifo::Cooperation => pool.coop_queues.unbind(coop, queue, agents),
        };
        if last {
            queue.release_pool_hold();
        }
        pool.bound.unbind(agents, || pool.wake_all());
    }

    fn shutdown(&self) {
        self.0.bound.shut(|| self.0.wake_all());
    }

    fn stats(&self) -> DispatcherStats {
        let workers = self.0.probes.iter().map(|p| p.snapshot()).collect();
        DispatcherStats {
            name: self.0.name.clone(),
            kind: P::KIND,
            workers,
        }
    }

    fn join(&self) {
        let threads =
            std::mem::take(&mut *self.0.threads.lock().unwrap_or_else(|e| e.into_inner()));
        crate::dispatcher::reuse::worker::join_all(&self.0.name, threads);
    }
}
