//! `prio_one_thread`: one worker thread serving its agents by priority, with a queue of
//! demands per priority (the loop is in [`worker`]).

#[cfg(all(test, cohort_loom))]
mod loom_model;
mod worker;

use super::handle::typed_handle;
use super::reuse::bound_count::BoundCount;
use super::reuse::thread_builder_setters;
use super::{BindParams, Binder, DispatcherCore};
use crate::dispatcher::reuse::spin::WorkerSpin;
use crate::error::{BindError, DispatcherError};
use crate::queue::wakeup::SharedWakeup;
use crate::queue::{EventQueue, QueueArc};
use crate::runtime::env::Environment;
use crate::stats::{DispatcherStats, WorkerProbe};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use worker::{PRIORITIES, PrioMode, run_prio};

/// An agent's priority on a `prio_one_thread` dispatcher, `P0` lowest to `P7` highest
/// (SObjectizer's `so_5::prio::p0..p7`). Given per agent with
/// [`PrioOneThreadHandle::priority_binder`].
///
/// ```
/// use cohort::dispatcher::Priority;
/// assert!(Priority::P7 > Priority::P0);
/// assert_eq!(Priority::default(), Priority::P0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[allow(missing_docs)]
pub enum Priority {
    #[default]
    P0 = 0,
    P1,
    P2,
    P3,
    P4,
    P5,
    P6,
    P7,
}

/// Builds a `prio_one_thread` dispatcher: one worker thread serving its agents by priority.
///
/// - [`strictly_ordered`](PrioOneThreadBuilder::strictly_ordered) (the default): after every
///   demand, the highest priority with work goes next; lower priorities run only when every
///   higher one is idle.
/// - [`quoted_round_robin`](PrioOneThreadBuilder::quoted_round_robin): priorities take turns
///   from the highest down, each handling up to its quota of demands per round, so low
///   priorities progress under load.
///
/// Agents of one priority share a queue of demands, as the agents of a `one_thread`
/// dispatcher share theirs: a send between two of them takes the lock-free, allocation-free
/// local path, and each agent's demands keep their order.
///
/// ```
/// use cohort::dispatcher::Priority;
/// let env = cohort::Environment::builder().start().unwrap();
/// let prio = cohort::PrioOneThreadBuilder::new()
///     .name("control")                             // default: "prio_one_thread"
///     .quoted_round_robin([1, 1, 1, 1, 2, 2, 4, 8]) // default: strictly_ordered
///     .build(&env)
///     .unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(prio.priority_binder(Priority::P7));
/// assert!(cohort::PrioOneThreadBuilder::new().quoted_round_robin([0; 8]).build(&env).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct PrioOneThreadBuilder {
    name: String,
    worker_spin: WorkerSpin,
    mode: PrioMode,
}

impl Default for PrioOneThreadBuilder {
    fn default() -> Self {
        Self {
            name: "prio_one_thread".into(),
            worker_spin: WorkerSpin::default(),
            mode: PrioMode::Strict,
        }
    }
}

impl PrioOneThreadBuilder {
    thread_builder_setters!("prio_one_thread");

    /// Strict priority order (the default).
    pub fn strictly_ordered(mut self) -> Self {
        self.mode = PrioMode::Strict;
        self
    }

    /// Round robin with a quota of demands per priority per round (index 0 = `P0`); each
    /// quota at least 1.
    pub fn quoted_round_robin(mut self, quotas: [usize; PRIORITIES]) -> Self {
        self.mode = PrioMode::Quoted(quotas);
        self
    }

    /// Starts the worker thread and registers the dispatcher with `env` (which shuts it down
    /// and joins it when it stops).
    pub fn build(self, env: &Environment) -> Result<PrioOneThreadHandle, DispatcherError> {
        self.worker_spin.validate(&self.name)?;
        if let PrioMode::Quoted(q) = self.mode
            && let Some(p) = q.iter().position(|&n| n == 0)
        {
            return Err(DispatcherError::invalid(
                &self.name,
                "quoted_round_robin",
                format!("the quota of priority P{p} is 0: every quota must be at least 1"),
            ));
        }
        let group = Arc::new(SharedWakeup::new());
        let queues: Arc<[QueueArc]> = (0..PRIORITIES)
            .map(|p| EventQueue::in_group(group.clone(), 1 << p))
            .collect();
        let thread_name = format!("cohort-{}-0", self.name);
        let probe = WorkerProbe::new(thread_name.clone(), env.shared().stats_switch());
        let thread = {
            let (queues, probe, mode, spin) =
                (queues.clone(), probe.clone(), self.mode, self.worker_spin);
            std::thread::Builder::new()
                .name(thread_name)
                .spawn(move || {
                    run_prio(&queues, &group, mode, spin, Some(&probe), |q, d, budget| {
                        d.run(q, budget)
                    })
                })
                .map_err(|source| DispatcherError::Spawn {
                    name: self.name.clone(),
                    source,
                })?
        };
        let core = Arc::new(PrioOneThread {
            name: self.name,
            mode: self.mode,
            queues,
            bound: BoundCount::default(),
            probe,
            thread: Mutex::new(Some(thread)),
        });
        Ok(PrioOneThreadHandle(env.shared().add_dispatcher(core)?))
    }
}

typed_handle!(
    /// A handle to a `prio_one_thread` dispatcher: gives binders by priority (its plain
    /// [`binder`](Self::binder) gives the lowest, `P0`).
    PrioOneThreadHandle
);

impl PrioOneThreadHandle {
    /// A binder that gives agents `priority`.
    pub fn priority_binder(&self, priority: Priority) -> Binder {
        self.0.binder_with(BindParams::Priority(priority as u8))
    }
}

struct PrioOneThread {
    name: String,
    mode: PrioMode,
    /// A queue of demands per priority (index 0 = `P0`), all run by the one thread.
    queues: Arc<[QueueArc]>,
    bound: BoundCount,
    probe: Arc<WorkerProbe>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PrioOneThread {
    fn close(&self) {
        for q in self.queues.iter() {
            q.close();
        }
    }
}

impl DispatcherCore for PrioOneThread {
    fn name(&self) -> &str {
        &self.name
    }

    fn bind_group(
        &self,
        params: &BindParams,
        _: crate::runtime::coop::CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError> {
        // Any other binding (a plain `binder()`) gives the lowest priority.
        let p = match params {
            BindParams::Priority(p) => usize::from(*p).min(PRIORITIES - 1),
            _ => 0,
        };
        if !self.bound.bind(agents, || self.close()) {
            return Err(BindError::DispatcherShutDown {
                name: self.name.clone(),
            });
        }
        super::hand_to_each(agents, self.queues[p].clone(), bound);
        Ok(())
    }

    fn unbind(&self, _: &BindParams, _: crate::runtime::coop::CoopId, _: &QueueArc, agents: usize) {
        self.bound.unbind(agents, || self.close());
    }

    fn shutdown(&self) {
        self.bound.shut(|| self.close());
    }

    fn stats(&self) -> DispatcherStats {
        DispatcherStats {
            name: self.name.clone(),
            kind: match self.mode {
                PrioMode::Strict => "prio_one_thread::strictly_ordered",
                PrioMode::Quoted(_) => "prio_one_thread::quoted_round_robin",
            },
            workers: vec![self.probe.snapshot()],
        }
    }

    fn join(&self) {
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            super::reuse::worker::join_all(&self.name, [t]);
        }
    }
}
