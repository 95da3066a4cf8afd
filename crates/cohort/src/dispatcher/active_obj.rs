//! `active_obj`: a worker thread per agent, started at binding, ended when the agent finishes.

use super::reuse::{thread_builder_setters, worker};
use super::{DispatcherCore, DispatcherHandle};
use crate::dispatcher::reuse::spin::WorkerSpin;
use crate::error::{BindError, DispatcherError};
use crate::queue::{EventQueue, QueueArc};
use crate::runtime::env::Environment;
use crate::stats::{DispatcherStats, StatsSwitch, WorkerProbe};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Builds an `active_obj` dispatcher: each agent bound to it gets its own worker thread.
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// let disp = cohort::ActiveObjBuilder::new().name("sensors").build(&env).unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(disp.binder()); // every agent of `coop` on a thread of its own
/// ```
#[derive(Debug, Clone)]
pub struct ActiveObjBuilder {
    name: String,
    worker_spin: WorkerSpin,
}

impl Default for ActiveObjBuilder {
    fn default() -> Self {
        Self {
            name: "active_obj".into(),
            worker_spin: WorkerSpin::default(),
        }
    }
}

impl ActiveObjBuilder {
    thread_builder_setters!("active_obj");

    /// Creates the dispatcher and registers it with `env`.
    pub fn build(self, env: &Environment) -> Result<DispatcherHandle, DispatcherError> {
        self.worker_spin.validate(&self.name)?;
        let core = Arc::new(ActiveObj {
            name: self.name,
            switch: env.shared().stats_switch(),
            spin: self.worker_spin,
            state: Mutex::new(State {
                shut: false,
                threads: Vec::new(),
            }),
        });
        env.shared().add_dispatcher(core)
    }
}

struct State {
    shut: bool,
    threads: Vec<(JoinHandle<()>, Arc<WorkerProbe>)>,
}

struct ActiveObj {
    name: String,
    switch: StatsSwitch,
    spin: WorkerSpin,
    state: Mutex<State>,
}

impl ActiveObj {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Binds one agent: a worker thread of its own, and its queue.
    fn bind_agent(&self) -> Result<QueueArc, BindError> {
        let mut st = self.state();
        if st.shut {
            return Err(BindError::DispatcherShutDown {
                name: self.name.clone(),
            });
        }
        // Forget threads that already ended, so a long-running environment does not keep
        // their handles.
        st.threads.retain(|(t, _)| !t.is_finished());
        let queue = EventQueue::new();
        let thread_name = format!("cohort-{}", self.name);
        let probe = WorkerProbe::new(thread_name.clone(), self.switch.clone());
        let t = worker::spawn(thread_name, queue.clone(), self.spin, probe.clone()).map_err(
            |source| BindError::Spawn {
                name: self.name.clone(),
                source,
            },
        )?;
        st.threads.push((t, probe));
        Ok(queue)
    }
}

impl DispatcherCore for ActiveObj {
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
        super::bind_each(agents, bound, || self.bind_agent())
    }

    fn unbind(
        &self,
        _: &super::BindParams,
        _: crate::runtime::coop::CoopId,
        queue: &QueueArc,
        _agents: usize,
    ) {
        // The queue's one agent.
        queue.close();
    }

    fn shutdown(&self) {
        self.state().shut = true;
    }

    fn stats(&self) -> DispatcherStats {
        let st = self.state();
        let workers = st
            .threads
            .iter()
            .filter(|(t, _)| !t.is_finished())
            .map(|(_, p)| p.snapshot())
            .collect();
        DispatcherStats {
            name: self.name.clone(),
            kind: "active_obj",
            workers,
        }
    }

    fn join(&self) {
        let threads = std::mem::take(&mut self.state().threads);
        worker::join_all(&self.name, threads.into_iter().map(|(t, _)| t));
    }
}
