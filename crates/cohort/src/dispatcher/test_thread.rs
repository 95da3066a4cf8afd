//! `test_thread`: the dispatcher of [`cohort::testing`](crate::testing). It has no thread:
//! its one queue is drained by the test itself, one demand per step, so a test decides
//! exactly when and in which order agents run.

use super::reuse::bound_count::BoundCount;
use super::{BindParams, DispatcherCore};
use crate::agent::cell::{DynCell, NEW};
use crate::error::BindError;
use crate::queue::{EventQueue, QueueArc, RunningGuard};
use crate::runtime::coop::CoopId;
use crate::stats::DispatcherStats;
use std::sync::Arc;

/// The core of a `test_thread` dispatcher.
pub(crate) struct TestThread {
    queue: QueueArc,
    bound: BoundCount,
}

impl TestThread {
    /// A `test_thread` dispatcher, to be an environment's default one
    /// (`EnvironmentBuilder::default_dispatcher`).
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            queue: EventQueue::new(),
            bound: BoundCount::default(),
        })
    }

    /// Runs the next demand on the calling thread; false when the queue is empty.
    ///
    /// Must be called from one thread only (the owner of the test environment, which is
    /// `!Send`), and not from a handler running on this queue.
    pub(crate) fn step(&self) -> bool {
        let q = &*self.queue;
        // SAFETY: only the test environment's thread runs this queue (the environment is
        // `!Send`, and steps never nest: a handler cannot reach its test environment), and
        // the guard is dropped before `self.queue` is.
        let running = unsafe { RunningGuard::enter(q) };
        let local = running.local();
        local.drain_remote(usize::MAX);
        match local.pop() {
            Some(d) => {
                d.run(q, 1);
                true
            }
            None => false,
        }
    }

    /// The active states of the agent in `cell`, innermost first; `None` unless the agent
    /// is bound to this dispatcher. Called between steps, on the stepping thread.
    pub(crate) fn state_path(&self, cell: &DynCell) -> Option<Vec<String>> {
        if cell.header.status() == NEW {
            return None;
        }
        // SAFETY: the status left `NEW` (acquire load above), so the queue is bound.
        let q = unsafe { cell.header.queue_arc() };
        if !QueueArc::ptr_eq(q, &self.queue) {
            return None;
        }
        // SAFETY: the agent's demands run only in `step`, on this thread (the caller), and no
        // step is running: a handler cannot call back into its `!Send` test environment.
        Some(unsafe { cell.body_shared() }.state_path())
    }
}

impl DispatcherCore for TestThread {
    fn name(&self) -> &str {
        "test_thread"
    }

    fn bind_group(
        &self,
        _: &BindParams,
        _: CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError> {
        if !self.bound.bind(agents, || self.queue.close()) {
            return Err(BindError::DispatcherShutDown {
                name: "test_thread".into(),
            });
        }
        super::hand_to_each(agents, self.queue.clone(), bound);
        Ok(())
    }

    fn unbind(&self, _: &BindParams, _: CoopId, _: &QueueArc, agents: usize) {
        self.bound.unbind(agents, || self.queue.close());
    }

    fn shutdown(&self) {
        self.bound.shut(|| self.queue.close());
    }

    fn join(&self) {}

    fn stats(&self) -> DispatcherStats {
        DispatcherStats {
            name: "test_thread".into(),
            kind: "test_thread",
            workers: Vec::new(),
        }
    }
}
