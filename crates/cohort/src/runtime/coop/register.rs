//! [`Coop::register`]: how a built cooperation becomes a registered one, all or nothing.

use super::builder::{Coop, release_agents};
use super::registered::{CoopHandle, CoopInner, CoopState, CoopStatus, Group, Groups, Links};
use super::{CoopRegistered, DeregReason, Step};
use crate::agent::cell::{ACTIVE, DefineFailure, DynCell};
use crate::agent::demand::Demand;
use crate::error::RegisterError;
use crate::queue::EventQueue;
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

impl Coop {
    /// Registers the cooperation: binds every agent, runs every `define` on this thread, then
    /// queues every `start`. All or nothing: on error nothing starts and nothing stays bound.
    pub(crate) fn register(mut self) -> Result<CoopHandle, RegisterError> {
        let env = self.env.clone();
        let parent = self.parent.take();
        let binder = self.binder.take();
        let mut agents = std::mem::take(&mut self.agents);
        let binders = std::mem::take(&mut self.binders);
        let extras = std::mem::take(&mut self.extras);
        let shared = env.shared();
        if agents.is_empty() {
            return Err(RegisterError::EmptyCoop);
        }
        if shared.is_stopping() {
            release_agents(&agents);
            return Err(RegisterError::EnvironmentStopped);
        }
        let default = binder.unwrap_or_else(|| shared.default_binder());
        let n = agents.len();
        let id = shared.next_coop_id();
        let binder_of = |i: usize| binders.get(i).and_then(Option::as_ref).unwrap_or(&default);

        // 1. Bind every agent to its dispatcher: the queue goes into the agent's header.
        //    `queues` stays empty while every agent lands on the first agent's queue.
        let mut queues: Vec<Arc<EventQueue>> = Vec::new();
        let mut first_queue: Option<Arc<EventQueue>> = None;
        for (index, cell) in agents.iter().enumerate() {
            match binder_of(index).bind(id) {
                Ok(q) => {
                    match &first_queue {
                        None => first_queue = Some(q.clone()),
                        Some(f) if queues.is_empty() && Arc::ptr_eq(f, &q) => {}
                        Some(f) => {
                            if queues.is_empty() {
                                queues.extend(std::iter::repeat_n(f.clone(), index));
                            }
                            queues.push(q.clone());
                        }
                    }
                    // SAFETY: not registered: this thread has the only access to the header's
                    // queue, written before the status leaves `NEW`.
                    unsafe { cell.header.bind_queue(q) };
                }
                Err(source) => {
                    // SAFETY: not registered: this thread has the only access to the body.
                    let agent = unsafe { cell.body() }.name().into_owned();
                    for (i, c) in agents[..index].iter().enumerate() {
                        binder_of(i).unbind_queue_of(&c.header);
                    }
                    release_agents(&agents);
                    return Err(RegisterError::Bind {
                        agent,
                        index,
                        source,
                    });
                }
            }
        }
        let Some(parent) = parent.or_else(|| shared.root()) else {
            for (i, c) in agents.iter().enumerate() {
                binder_of(i).unbind_queue_of(&c.header);
            }
            release_agents(&agents);
            return Err(RegisterError::EnvironmentStopped);
        };

        // 2. Group the agents by queue (stable: start order within a queue is `add` order).
        //    `position[i]` is where the i-th added agent lands; `None` when nothing moves.
        let first_queue = first_queue.expect("at least one agent");
        let (groups, position) = if queues.is_empty() {
            let group = Group {
                queue: first_queue,
                binder: binder_of(0).clone(),
                start: 0,
                end: n as u32,
            };
            (
                Groups {
                    first: Some(group),
                    more: Box::new([]),
                },
                None,
            )
        } else {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| Arc::as_ptr(&queues[i]) as usize);
            let mut position = vec![0usize; n];
            let mut groups: Vec<Group> = Vec::new();
            for (pos, &i) in order.iter().enumerate() {
                position[i] = pos;
                match groups.last_mut() {
                    Some(g) if Arc::ptr_eq(&g.queue, &queues[i]) => g.end += 1,
                    _ => groups.push(Group {
                        queue: queues[i].clone(),
                        binder: binder_of(i).clone(),
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
        };
        drop(queues);

        let coop = Arc::new(CoopInner {
            id,
            env: shared.clone(),
            parent: Some(parent.clone()),
            agents: agents.into_boxed_slice(),
            groups,
            state: Mutex::new(CoopState {
                status: CoopStatus::Registering,
                reason: DeregReason::Normal,
                first_child: None,
                children: 0,
                gone_waiters: Vec::new(),
            }),
            links: UnsafeCell::new(Links {
                next: None,
                prev: std::ptr::null(),
            }),
            pending: AtomicUsize::new(1),
            groups_left: AtomicUsize::new(0),
            extras: if extras.is_empty() {
                None
            } else {
                Some(Box::new(extras))
            },
        });
        coop.groups_left.store(coop.groups.len(), Ordering::Relaxed);

        // 3. Attach and define, in `add` order, on this thread.
        for i in 0..n {
            let cell = &coop.agents[position.as_ref().map_or(i, |p| p[i])];
            // SAFETY: not registered yet: this thread has the only access to the body.
            let result = unsafe {
                cell.body().attach(Arc::as_ptr(&coop));
                cell.body().define(NonNull::from(&**cell))
            };
            if let Err(failure) = result {
                // SAFETY: as above.
                let agent = unsafe { cell.body() }.name().into_owned();
                coop.unbind_all();
                release_agents(&coop.agents);
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

        // 4. Join the parent, activate, queue the starts: under the parent's lock, so that a
        //    parent deregistering concurrently either refuses this child or sees it started.
        {
            let mut pstate = parent.lock_state();
            if pstate.status != CoopStatus::Registered {
                drop(pstate);
                coop.unbind_all();
                release_agents(&coop.agents);
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
        }
        if let Some(x) = &coop.extras {
            for m in &x.notify_registered {
                m.send(CoopRegistered {
                    id: coop.id,
                    name: x.name.clone(),
                });
            }
        }
        Ok(CoopHandle { inner: coop })
    }
}
