//! [`Coop::register`]: how a built cooperation becomes a registered one, all or nothing.
//!
//! The steps, in order: [`bind_agents`] (each agent's queue into its header),
//! [`group_by_queue`] (agents sharing a queue become one group), [`define_agents`] (every
//! `define` on the registering thread), [`join_parent`] (activate and queue the starts under
//! the parent's lock), [`notify_registered`]. A failing step undoes what the earlier ones did.

use super::builder::{Coop, release_agents};
use super::registered::{CoopHandle, CoopInner, CoopStatus, Group, Groups};
use super::{CoopId, CoopRegistered, Step};
use crate::agent::cell::{ACTIVE, DefineFailure, DynCell};
use crate::agent::demand::Demand;
use crate::dispatcher::Binder;
use crate::error::{BindError, RegisterError};
use crate::queue::QueueArc;
use crate::runtime::env::{EnvId, EnvShared};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use thin_vec::ThinVec;

impl Coop {
    /// Registers the cooperation: binds every agent, runs every `define` on this thread, then
    /// queues every `start`. All or nothing: on error nothing starts and nothing stays bound.
    pub(crate) fn register(mut self) -> Result<CoopHandle, RegisterError> {
        let env = self.env.clone();
        let parent = self.parent.take();
        let binder = self.binder.take();
        let mut agents = std::mem::take(&mut self.agents);
        let own = std::mem::take(&mut self.binders);
        let extras = std::mem::take(&mut self.extras);
        let shared = env.shared();
        if agents.is_empty() {
            return Err(RegisterError::EmptyCoop);
        }
        if shared.is_stopping() {
            release_agents(&agents);
            return Err(RegisterError::EnvironmentStopped);
        }
        if parent
            .as_ref()
            .is_some_and(|p| !Arc::ptr_eq(&p.env, shared))
        {
            release_agents(&agents);
            return Err(RegisterError::ParentInOtherEnvironment);
        }
        let binders = Binders {
            default: binder.unwrap_or_else(|| shared.default_binder()),
            own,
        };
        let id = shared.next_coop_id();

        let queues = bind_agents(&agents, &binders, id, shared.id())?;
        let Some(parent) = parent.or_else(|| shared.root()) else {
            unbind(&agents, &binders, id);
            release_agents(&agents);
            return Err(RegisterError::EnvironmentStopped);
        };
        let (groups, position) = group_by_queue(&mut agents, queues, &binders);

        let extras = (!extras.is_empty()).then(|| Box::new(extras));
        let coop = Arc::new(CoopInner::new(
            id,
            shared.clone(),
            Some(parent.clone()),
            agents.into_boxed_slice(),
            groups,
            extras,
        ));

        define_agents(&coop, position.as_deref())?;
        join_parent(&coop, &parent, shared)?;
        notify_registered(&coop);
        Ok(CoopHandle { inner: coop })
    }
}

/// The binder of each agent: its own if it was given one, else the cooperation's.
struct Binders {
    default: Binder,
    /// Index-aligned with the agents; empty unless one was given.
    own: Vec<Option<Binder>>,
}

impl Binders {
    fn of(&self, i: usize) -> &Binder {
        self.own
            .get(i)
            .and_then(Option::as_ref)
            .unwrap_or(&self.default)
    }

    /// The end of the run of agents from `start` (below `len`) bound through the same binder:
    /// the cooperation's default, or an agent's own (each given one binds its agent alone).
    fn run_end(&self, start: usize, len: usize) -> usize {
        let binder = self.of(start);
        (start + 1..len)
            .find(|&i| !std::ptr::eq(self.of(i), binder))
            .unwrap_or(len)
    }
}

/// The queues the agents were bound to: `all` stays empty while every agent landed on the
/// first agent's queue (the common case), else it holds each agent's queue by index.
struct BoundQueues {
    first: QueueArc,
    all: Vec<QueueArc>,
}

/// Step 1: binds every agent to its dispatcher, a run of agents with the same binder in one
/// call (one lock or count update per cooperation, not per agent); the queue goes into the
/// agent's header. A binder of another environment's dispatcher is refused. On a bind
/// error, unbinds the agents already bound and drops every agent value.
fn bind_agents(
    agents: &[Arc<DynCell>],
    binders: &Binders,
    id: CoopId,
    env: EnvId,
) -> Result<BoundQueues, RegisterError> {
    let mut queues: Vec<QueueArc> = Vec::new();
    let mut first_queue: Option<QueueArc> = None;
    // The agents handed a queue so far.
    let mut index = 0;
    while index < agents.len() {
        let end = binders.run_end(index, agents.len());
        let run = end - index;
        let binder = binders.of(index);
        let result = if binder.env() != env {
            Err(BindError::OtherEnvironment {
                name: binder.dispatcher_name().to_owned(),
            })
        } else {
            binder.bind_group(id, run, &mut |q| {
                match &first_queue {
                    None => first_queue = Some(q.clone()),
                    Some(f) if queues.is_empty() && QueueArc::ptr_eq(f, &q) => {}
                    Some(f) => {
                        if queues.is_empty() {
                            // One allocation for every agent's queue (a queue per agent is
                            // the common case here), not one per doubling.
                            queues.reserve_exact(agents.len());
                            queues.extend(std::iter::repeat_n(f.clone(), index));
                        }
                        queues.push(q.clone());
                    }
                }
                // SAFETY: not registered: this thread has the only access to the header's queue,
                // written before the status leaves `NEW`.
                unsafe { agents[index].header.bind_queue(q) };
                index += 1;
            })
        };
        if let Err(source) = result {
            // SAFETY: not registered: this thread has the only access to the body.
            let agent = unsafe { agents[index].body() }.name().into_owned();
            unbind(&agents[..index], binders, id);
            release_agents(agents);
            return Err(RegisterError::Bind {
                agent,
                index,
                source,
            });
        }
        debug_assert_eq!(index, end, "a dispatcher bound fewer agents than asked");
    }
    Ok(BoundQueues {
        first: first_queue.expect("at least one agent"),
        all: queues,
    })
}

/// Unbinds `agents` (the first ones of cooperation `id`, in `add` order) from their queues.
fn unbind(agents: &[Arc<DynCell>], binders: &Binders, id: CoopId) {
    for (i, c) in agents.iter().enumerate() {
        binders.of(i).unbind_queue_of(id, &c.header);
    }
}

/// Step 2: groups the agents by queue (stable: start order within a queue is `add` order).
/// Returns the groups and `position[i]`, where the i-th added agent lands (`None` when
/// nothing moves).
fn group_by_queue(
    agents: &mut Vec<Arc<DynCell>>,
    queues: BoundQueues,
    binders: &Binders,
) -> (Groups, Option<Vec<usize>>) {
    let n = agents.len();
    let BoundQueues { first, all: queues } = queues;
    if queues.is_empty() {
        let group = Group {
            queue: first,
            binder: binders.of(0).clone(),
            start: 0,
            end: n as u32,
        };
        return (
            Groups {
                first: Some(group),
                more: ThinVec::new(),
            },
            None,
        );
    }
    if let Some(groups) = groups_in_add_order(&queues, binders) {
        return (groups, None);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| QueueArc::as_ptr(&queues[i]) as usize);
    let mut position = vec![0usize; n];
    let mut groups: Vec<Group> = Vec::new();
    for (pos, &i) in order.iter().enumerate() {
        position[i] = pos;
        match groups.last_mut() {
            Some(g) if QueueArc::ptr_eq(&g.queue, &queues[i]) => g.end += 1,
            _ => groups.push(Group {
                queue: queues[i].clone(),
                binder: binders.of(i).clone(),
                start: pos as u32,
                end: pos as u32 + 1,
            }),
        }
    }
    let mut slots: Vec<Option<Arc<DynCell>>> = agents.drain(..).map(Some).collect();
    agents.extend(
        order
            .iter()
            .map(|&i| slots[i].take().expect("a permutation")),
    );
    let mut groups = groups.into_iter();
    let first = groups.next();
    (
        Groups {
            first,
            more: groups.collect(),
        },
        Some(position),
    )
}

/// Runs of agents on one queue past which [`groups_in_add_order`] gives up: its check looks
/// back over the agents at each new run, which the sort beats once runs are many.
const MAX_RUNS_IN_ADD_ORDER: usize = 32;

/// The groups, when each queue's agents already stand together in `add` order (a queue per
/// agent, as a pool's individual fifo gives, or one run per queue): no sort and no
/// reordering. `None` when a queue comes back after another's agents, or runs are many.
fn groups_in_add_order(queues: &[QueueArc], binders: &Binders) -> Option<Groups> {
    let mut starts = 1;
    for i in 1..queues.len() {
        if QueueArc::ptr_eq(&queues[i], &queues[i - 1]) {
            continue;
        }
        starts += 1;
        if starts > MAX_RUNS_IN_ADD_ORDER
            || queues[..i - 1]
                .iter()
                .any(|q| QueueArc::ptr_eq(q, &queues[i]))
        {
            return None;
        }
    }
    let mut first = None;
    let mut more = ThinVec::with_capacity(starts - 1);
    let mut start = 0;
    for end in 1..=queues.len() {
        if end < queues.len() && QueueArc::ptr_eq(&queues[end], &queues[start]) {
            continue;
        }
        let group = Group {
            queue: queues[start].clone(),
            binder: binders.of(start).clone(),
            start: start as u32,
            end: end as u32,
        };
        if first.is_none() {
            first = Some(group);
        } else {
            more.push(group);
        }
        start = end;
    }
    Some(Groups { first, more })
}

/// Step 3: attaches and defines every agent, in `add` order, on this thread. On a failing
/// `define`, unbinds every agent and drops every agent value.
fn define_agents(coop: &Arc<CoopInner>, position: Option<&[usize]>) -> Result<(), RegisterError> {
    for i in 0..coop.agents.len() {
        let cell = &coop.agents[position.map_or(i, |p| p[i])];
        // SAFETY: not registered yet: this thread has the only access to the body.
        let result = unsafe {
            cell.body().attach(Arc::as_ptr(coop));
            cell.body().define(NonNull::from(&**cell))
        };
        if let Err(failure) = result {
            // SAFETY: as above.
            let agent = unsafe { cell.body() }.name().into_owned();
            coop.abandon();
            let reason = match failure {
                DefineFailure::Failed(e) => e.to_string(),
                DefineFailure::Panicked(p) => format!("panicked: {p}"),
            };
            return Err(RegisterError::Define {
                agent,
                index: i,
                reason,
            });
        }
    }
    Ok(())
}

/// Step 4: joins the parent, activates the agents and queues the starts, under the parent's
/// lock, so that a parent deregistering concurrently either refuses this child or sees it
/// started.
fn join_parent(
    coop: &Arc<CoopInner>,
    parent: &Arc<CoopInner>,
    shared: &EnvShared,
) -> Result<(), RegisterError> {
    let mut pstate = parent.lock_state();
    if pstate.status != CoopStatus::Registered {
        drop(pstate);
        coop.abandon();
        return Err(if parent.parent.is_none() {
            RegisterError::EnvironmentStopped
        } else {
            RegisterError::ParentDeregistering
        });
    }
    // SAFETY: the parent's lock is held.
    unsafe { parent.link_child(&mut pstate, coop.clone()) };
    parent.pending.fetch_add(1, Ordering::AcqRel);
    coop.lock_state().status = CoopStatus::Registered;
    shared.coop_registered();
    shared.agents_added(coop.agents.len());
    for cell in coop.agents.iter() {
        cell.header.set_status(ACTIVE);
    }
    for (g, group) in coop.groups.iter().enumerate() {
        group
            .queue
            .push(Demand::lifecycle(coop.clone(), g as u32, Step::Start));
    }
    Ok(())
}

/// Step 5: tells each `notify_registered` mailbox.
fn notify_registered(coop: &CoopInner) {
    if let Some(x) = &coop.extras {
        for m in &x.notify_registered {
            m.send(CoopRegistered {
                id: coop.id,
                name: x.name.clone(),
            });
        }
    }
}
