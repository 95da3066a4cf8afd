//! `active_group`: a worker thread per named group; agents bound to one group share it.
//!
//! A group's thread starts when its first agent is bound and ends when its last agent is
//! unbound (its cooperation is gone), as in SObjectizer. A group name belongs to one
//! `active_group` dispatcher of the environment at a time: binding the same name on another
//! one is refused, so two threads never pretend to be one group.

use super::handle::typed_handle;
use super::reuse::{thread_builder_setters, worker};
use super::{BindParams, Binder, DispatcherCore};
use crate::dispatcher::reuse::spin::WorkerSpin;
use crate::error::{BindError, DispatcherError};
use crate::queue::{EventQueue, QueueArc};
use crate::runtime::coop::CoopId;
use crate::runtime::env::{EnvShared, Environment};
use crate::stats::{DispatcherStats, StatsSwitch, WorkerProbe};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;

/// Builds an `active_group` dispatcher. Bind agents with
/// [`ActiveGroupHandle::group_binder`]; the plain [`ActiveGroupHandle::binder`] binds to a
/// group named after the dispatcher.
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// let groups = cohort::ActiveGroupBuilder::new().name("io").build(&env).unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(groups.group_binder("network")); // every agent of `coop` on one thread
/// ```
#[derive(Debug, Clone)]
pub struct ActiveGroupBuilder {
    name: String,
    worker_spin: WorkerSpin,
}

impl Default for ActiveGroupBuilder {
    fn default() -> Self {
        Self {
            name: "active_group".into(),
            worker_spin: WorkerSpin::default(),
        }
    }
}

impl ActiveGroupBuilder {
    thread_builder_setters!("active_group");

    /// Creates the dispatcher and registers it with `env`.
    pub fn build(self, env: &Environment) -> Result<ActiveGroupHandle, DispatcherError> {
        self.worker_spin.validate(&self.name)?;
        let core = Arc::new(ActiveGroup {
            name: self.name,
            switch: env.shared().stats_switch(),
            spin: self.worker_spin,
            env: Arc::downgrade(env.shared()),
            state: Mutex::new(State::default()),
        });
        Ok(ActiveGroupHandle(env.shared().add_dispatcher(core)?))
    }
}

typed_handle!(
    /// A handle to an `active_group` dispatcher: gives binders to its groups.
    ActiveGroupHandle
);

impl ActiveGroupHandle {
    /// A binder to the named group: agents bound to one group share its thread.
    pub fn group_binder(&self, group: &str) -> Binder {
        self.0.binder_with(BindParams::Group(Arc::from(group)))
    }
}

struct Group {
    queue: QueueArc,
    agents: usize,
    probe: Arc<WorkerProbe>,
}

#[derive(Default)]
struct State {
    shut: bool,
    groups: HashMap<Arc<str>, Group>,
    threads: Vec<JoinHandle<()>>,
}

struct ActiveGroup {
    name: String,
    switch: StatsSwitch,
    spin: WorkerSpin,
    env: Weak<EnvShared>,
    state: Mutex<State>,
}

impl ActiveGroup {
    /// The group a binding names: its own, or the dispatcher's name for a plain `binder()`.
    fn group_of(&self, params: &BindParams) -> Arc<str> {
        match params {
            BindParams::Group(g) => g.clone(),
            _ => Arc::from(self.name.as_str()),
        }
    }

    /// Binds one agent: its group's queue (the group and its thread made for its first).
    fn bind_agent(&self, params: &BindParams) -> Result<QueueArc, BindError> {
        let group = self.group_of(params);
        let mut st = self.state();
        if st.shut {
            return Err(BindError::DispatcherShutDown {
                name: self.name.clone(),
            });
        }
        if let Some(g) = st.groups.get_mut(&group) {
            g.agents += 1;
            return Ok(g.queue.clone());
        }
        if let Some(env) = self.env.upgrade()
            && let Err(owner) = env.claim_group(&group, self.id(), &self.name)
        {
            return Err(BindError::GroupTaken {
                group: group.to_string(),
                owner,
            });
        }
        st.threads.retain(|t| !t.is_finished());
        let queue = EventQueue::new();
        let probe = WorkerProbe::new(format!("cohort-{}-{group}", self.name), self.switch.clone());
        let thread = worker::spawn(
            format!("cohort-{}-{group}", self.name),
            queue.clone(),
            self.spin,
            probe.clone(),
        );
        match thread {
            Ok(t) => st.threads.push(t),
            Err(source) => {
                if let Some(env) = self.env.upgrade() {
                    env.release_group(&group, self.id());
                }
                return Err(BindError::Spawn {
                    name: self.name.clone(),
                    source,
                });
            }
        }
        st.groups.insert(
            group,
            Group {
                queue: queue.clone(),
                agents: 1,
                probe,
            },
        );
        Ok(queue)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This dispatcher's identity in the environment's group-name registry.
    fn id(&self) -> usize {
        self as *const Self as usize
    }
}

impl DispatcherCore for ActiveGroup {
    fn name(&self) -> &str {
        &self.name
    }

    fn bind_group(
        &self,
        params: &BindParams,
        _: CoopId,
        agents: usize,
        bound: &mut dyn FnMut(QueueArc),
    ) -> Result<(), BindError> {
        super::bind_each(agents, bound, || self.bind_agent(params))
    }

    fn unbind(&self, params: &BindParams, _: CoopId, queue: &QueueArc, agents: usize) {
        let name = self.group_of(params);
        let mut st = self.state();
        let Some(g) = st
            .groups
            .get_mut(&name)
            .filter(|g| QueueArc::ptr_eq(&g.queue, queue))
        else {
            debug_assert!(false, "unbinding from a group that is not bound");
            return;
        };
        debug_assert!(g.agents >= agents, "more agents unbound than bound");
        g.agents = g.agents.saturating_sub(agents);
        if g.agents == 0 {
            g.queue.close();
            st.groups.remove(&name);
            if let Some(env) = self.env.upgrade() {
                env.release_group(&name, self.id());
            }
        }
    }

    fn shutdown(&self) {
        self.state().shut = true;
    }

    fn stats(&self) -> DispatcherStats {
        let workers = self
            .state()
            .groups
            .values()
            .map(|g| g.probe.snapshot())
            .collect();
        DispatcherStats {
            name: self.name.clone(),
            kind: "active_group",
            workers,
        }
    }

    fn join(&self) {
        let threads = std::mem::take(&mut self.state().threads);
        worker::join_all(&self.name, threads);
    }
}
