//! `one_thread`: all the agents bound to it share one worker thread and one queue.

use super::reuse::bound_count::BoundCount;
use super::reuse::thread_builder_setters;
use super::reuse::worker;
use super::{DispatcherCore, DispatcherHandle};
use crate::dispatcher::reuse::spin::WorkerSpin;
use crate::error::{BindError, DispatcherError};
use crate::queue::{EventQueue, QueueArc};
use crate::runtime::env::Environment;
use crate::stats::{DispatcherStats, WorkerProbe};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Builds a `one_thread` dispatcher: one worker thread, one queue, for all its agents.
/// Messages between its agents take the lock-free, allocation-free local path.
///
/// ```
/// use std::time::Duration;
/// let env = cohort::Environment::builder().start().unwrap();
/// let disp = cohort::OneThreadBuilder::new()
///     .name("ui")                            // default: "one_thread"
///     .worker_spin(Duration::from_micros(10)) // fixed; default: adaptive up to 50 µs
///     .build(&env)
///     .unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(disp.binder());
/// ```
#[derive(Debug, Clone)]
pub struct OneThreadBuilder {
    name: String,
    worker_spin: WorkerSpin,
}

impl Default for OneThreadBuilder {
    fn default() -> Self {
        Self {
            name: "one_thread".into(),
            worker_spin: WorkerSpin::default(),
        }
    }
}

impl OneThreadBuilder {
    thread_builder_setters!("one_thread");

    /// Starts the worker thread and registers the dispatcher with `env` (which shuts it down
    /// and joins it when it stops).
    pub fn build(self, env: &Environment) -> Result<DispatcherHandle, DispatcherError> {
        self.worker_spin.validate(&self.name)?;
        let queue = EventQueue::new();
        let probe = WorkerProbe::new(format!("cohort-{}", self.name), env.shared().stats_switch());
        let thread = worker::spawn(
            format!("cohort-{}", self.name),
            queue.clone(),
            self.worker_spin,
            probe.clone(),
        )
        .map_err(|source| DispatcherError::Spawn {
            name: self.name.clone(),
            source,
        })?;
        let core = Arc::new(OneThread {
            name: self.name,
            queue,
            bound: BoundCount::default(),
            probe,
            thread: Mutex::new(Some(thread)),
        });
        env.shared().add_dispatcher(core)
    }
}

struct OneThread {
    name: String,
    queue: QueueArc,
    bound: BoundCount,
    probe: Arc<WorkerProbe>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl DispatcherCore for OneThread {
    fn name(&self) -> &str {
        &self.name
    }

    fn bind_group(
        &self,
        _: &super::BindParams,
        _: crate::runtime::coop::CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError> {
        if !self.bound.bind(agents, || self.queue.close()) {
            return Err(BindError::DispatcherShutDown {
                name: self.name.clone(),
            });
        }
        super::hand_to_each(agents, self.queue.clone(), bound);
        Ok(())
    }

    fn unbind(
        &self,
        _: &super::BindParams,
        _: crate::runtime::coop::CoopId,
        _: &QueueArc,
        agents: usize,
    ) {
        self.bound.unbind(agents, || self.queue.close());
    }

    fn shutdown(&self) {
        self.bound.shut(|| self.queue.close());
    }

    fn stats(&self) -> DispatcherStats {
        DispatcherStats {
            name: self.name.clone(),
            kind: "one_thread",
            workers: vec![self.probe.snapshot()],
        }
    }

    fn join(&self) {
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            worker::join_all(&self.name, [t]);
        }
    }
}
