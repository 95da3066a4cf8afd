//! [`Coop`]: a cooperation being built, and [`AgentHandle`], a typed handle to one of its
//! agents.

use super::registered::{CoopHandle, CoopInner};
use crate::agent::Agent;
use crate::agent::cell::{AgentBody, AgentCell, DynCell};
use crate::dispatcher::Binder;
use crate::mailbox::Mbox;
use crate::panic::PanicReaction;
use crate::runtime::env::Environment;
use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// A typed handle to an agent added to a [`Coop`] that is being built.
pub struct AgentHandle<A> {
    pub(super) index: usize,
    pub(super) mbox: Mbox,
    pub(super) _agent: PhantomData<fn() -> A>,
}

impl<A> AgentHandle<A> {
    /// The agent's direct mailbox.
    pub fn mbox(&self) -> Mbox {
        self.mbox.clone()
    }

    /// The agent's position in its cooperation (order of `add`).
    pub fn index(&self) -> usize {
        self.index
    }
}

impl<A> fmt::Debug for AgentHandle<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentHandle")
            .field("index", &self.index)
            .field("mbox", &self.mbox)
            .finish()
    }
}

/// A cooperation being built.
///
/// ```
/// use cohort::{Agent, Context, DefineError, DeregReason};
///
/// struct Worker;
/// impl Agent for Worker {
///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.deregister_coop(DeregReason::Normal);
///     }
/// }
///
/// cohort::launch(|env| {
///     let mut coop = env.new_coop();
///     coop.set_name("workers");
///     coop.add(Worker);
///     coop.add(Worker);
///     env.register_coop(coop)?;
///     Ok(())
/// })
/// .unwrap(); // returns once the cooperation is gone (autoshutdown)
/// ```
pub struct Coop {
    pub(super) env: Environment,
    pub(super) parent: Option<Arc<CoopInner>>,
    pub(super) binder: Option<Binder>,
    /// The agents, in `add` order; this vector becomes the registered cooperation's.
    pub(super) agents: Vec<Arc<DynCell>>,
    /// Per-agent binders, index-aligned with `agents`; empty unless one was given.
    pub(super) binders: Vec<Option<Binder>>,
    pub(super) extras: CoopExtras,
}

#[derive(Default)]
pub(super) struct CoopExtras {
    pub(super) name: Option<String>,
    pub(super) panic_reaction: Option<PanicReaction>,
    pub(super) notify_registered: Vec<Mbox>,
    pub(super) notify_deregistered: Vec<Mbox>,
}

impl CoopExtras {
    pub(super) fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.panic_reaction.is_none()
            && self.notify_registered.is_empty()
            && self.notify_deregistered.is_empty()
    }
}

impl Coop {
    pub(crate) fn new(env: Environment, parent: Option<Arc<CoopInner>>) -> Self {
        Self {
            env,
            parent,
            binder: None,
            agents: Vec::new(),
            binders: Vec::new(),
            extras: CoopExtras::default(),
        }
    }

    /// Adds an agent bound to the cooperation's binder (the environment's default dispatcher
    /// unless [`Coop::set_binder`] chose another).
    pub fn add<A: Agent>(&mut self, agent: A) -> AgentHandle<A> {
        self.push(agent, None)
    }

    /// Adds an agent bound to its own binder.
    pub fn add_with_binder<A: Agent>(&mut self, agent: A, binder: Binder) -> AgentHandle<A> {
        self.push(agent, Some(binder))
    }

    fn push<A: Agent>(&mut self, agent: A, binder: Option<Binder>) -> AgentHandle<A> {
        let cell: Arc<DynCell> = AgentCell::new(self.env.shared().clone(), agent);
        let mbox = Mbox::direct(cell.clone());
        let index = self.agents.len();
        self.agents.push(cell);
        if let Some(b) = binder {
            self.binders.resize(index, None);
            self.binders.push(Some(b));
        }
        AgentHandle {
            index,
            mbox,
            _agent: PhantomData,
        }
    }

    /// Reserves room for `additional` more agents (saves reallocations when the count is
    /// known, as in creation storms).
    pub fn reserve(&mut self, additional: usize) -> &mut Self {
        self.agents.reserve_exact(additional);
        self
    }

    fn typed<A: Agent>(&self, h: &AgentHandle<A>) -> &AgentCell<AgentBody<A>> {
        let cell = &self.agents[h.index];
        // SAFETY: not registered: this thread (through `&self`) has the only access to the body.
        let is_a = unsafe { cell.body() }.agent_type() == TypeId::of::<A>();
        assert!(is_a, "agent handle used with another cooperation");
        // SAFETY: the type id matches, so this cell was created as `AgentCell<AgentBody<A>>`
        // and only unsized to `DynCell`; casting the data pointer back is sound.
        unsafe { &*(Arc::as_ptr(cell) as *const AgentCell<AgentBody<A>>) }
    }

    /// The agent behind `handle`, to finish wiring it before registration (for instance, to
    /// give it the mailbox of an agent added after it).
    ///
    /// # Panics
    /// If `handle` comes from another cooperation.
    pub fn agent_mut<A: Agent>(&mut self, handle: &AgentHandle<A>) -> &mut A {
        let cell = self.typed(handle);
        // SAFETY: the cooperation is not registered and `&mut self` is the only way to reach
        // the agent's body; sends to it are rejected while its status is `NEW`.
        unsafe { cell.agent_mut() }
    }

    /// Sets one agent's panic reaction (overrides the cooperation's).
    pub fn set_agent_panic_reaction<A: Agent>(
        &mut self,
        handle: &AgentHandle<A>,
        r: PanicReaction,
    ) {
        let cell = self.typed(handle);
        // SAFETY: as in `agent_mut`.
        unsafe { cell.set_panic_reaction(r) }
    }

    /// Binds the agents added without a binder of their own.
    pub fn set_binder(&mut self, binder: Binder) -> &mut Self {
        self.binder = Some(binder);
        self
    }

    /// Names the cooperation (for logs and notifications).
    pub fn set_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.extras.name = Some(name.into());
        self
    }

    /// The panic reaction of this cooperation's agents (overrides the environment's).
    pub fn set_panic_reaction(&mut self, r: PanicReaction) -> &mut Self {
        self.extras.panic_reaction = Some(r);
        self
    }

    /// Makes this cooperation a child of `parent`: it deregisters with it.
    pub fn set_parent(&mut self, parent: &CoopHandle) -> &mut Self {
        self.parent = Some(parent.inner.clone());
        self
    }

    /// `mbox` receives [`CoopRegistered`](crate::CoopRegistered) once this cooperation is
    /// registered.
    pub fn notify_registered(&mut self, mbox: Mbox) -> &mut Self {
        self.extras.notify_registered.push(mbox);
        self
    }

    /// `mbox` receives [`CoopDeregistered`](crate::CoopDeregistered) once this cooperation is
    /// fully gone.
    pub fn notify_deregistered(&mut self, mbox: Mbox) -> &mut Self {
        self.extras.notify_deregistered.push(mbox);
        self
    }

    /// Number of agents added.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// True if no agent was added.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

/// Drops the values of agents that will never run (registration failed, or the builder was
/// dropped unregistered): an agent holding its own or a peer's mailbox would otherwise keep
/// its cell alive forever.
pub(super) fn release_agents(agents: &[Arc<DynCell>]) {
    for cell in agents {
        // SAFETY: these agents are not registered: only this thread reaches their bodies.
        unsafe { cell.release_agent() }
    }
}

impl Drop for Coop {
    fn drop(&mut self) {
        release_agents(&self.agents);
    }
}
