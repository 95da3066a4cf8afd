//! Cooperations: agents registered and deregistered as a unit.
//!
//! [`Coop`] is the builder: add agents, choose binders, then register it (through
//! [`Environment::register_coop`](crate::Environment::register_coop) or
//! [`Context::register_coop`](crate::Context::register_coop)). Registration is all or nothing.
//! [`CoopHandle`] deregisters it later.
//!
//! Deregistration runs children first: a cooperation's agents receive `finish` only once all
//! its child cooperations are fully gone. A cooperation is fully gone when every agent has
//! run `finish`; then its parent hears of it, and its `notify_deregistered` mailboxes receive
//! [`CoopDeregistered`].

use crate::agent::Agent;
use crate::cell::{ACTIVE, AgentBody, AgentCell, DefineFailure, DynCell, FINISHED, FINISHING};
use crate::demand::Demand;
use crate::dispatcher::Binder;
use crate::env::{EnvShared, Environment};
use crate::error::RegisterError;
use crate::mbox::Mbox;
use crate::panic::PanicReaction;
use crate::queue::EventQueue;
use std::any::TypeId;
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A cooperation's identity, unique within its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoopId(pub u64);

/// Why a cooperation was deregistered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeregReason {
    /// Its work is done.
    Normal,
    /// The environment is stopping.
    Shutdown,
    /// Its parent cooperation is deregistering.
    Parent,
    /// One of its agents panicked (reaction [`PanicReaction::DeregisterCoop`]).
    Panic,
    /// An application-defined code.
    User(u32),
}

/// Sent to each `notify_registered` mailbox once a cooperation is registered.
#[derive(Debug, Clone)]
pub struct CoopRegistered {
    /// The cooperation.
    pub id: CoopId,
    /// Its name, if it was given one.
    pub name: Option<String>,
}

/// Sent to each `notify_deregistered` mailbox once a cooperation is fully gone (every agent
/// has run `finish`).
#[derive(Debug, Clone)]
pub struct CoopDeregistered {
    /// The cooperation.
    pub id: CoopId,
    /// Its name, if it was given one.
    pub name: Option<String>,
    /// Why it was deregistered.
    pub reason: DeregReason,
}

/// A lifecycle step run by a worker for one group of agents.
pub(crate) enum Step {
    Start,
    /// `drained`: the queue's remote half was already moved ahead of this demand once.
    Finish {
        drained: bool,
    },
}

/// A typed handle to an agent added to a [`Coop`] that is being built.
pub struct AgentHandle<A> {
    index: usize,
    mbox: Mbox,
    _agent: PhantomData<fn() -> A>,
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
    env: Environment,
    parent: Option<Arc<CoopInner>>,
    binder: Option<Binder>,
    /// The agents, in `add` order; this vector becomes the registered cooperation's.
    agents: Vec<Arc<DynCell>>,
    /// Per-agent binders, index-aligned with `agents`; empty unless one was given.
    binders: Vec<Option<Binder>>,
    extras: CoopExtras,
}

#[derive(Default)]
struct CoopExtras {
    name: Option<String>,
    panic_reaction: Option<PanicReaction>,
    notify_registered: Vec<Mbox>,
    notify_deregistered: Vec<Mbox>,
}

impl CoopExtras {
    fn is_empty(&self) -> bool {
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

    /// `mbox` receives [`CoopRegistered`] once this cooperation is registered.
    pub fn notify_registered(&mut self, mbox: Mbox) -> &mut Self {
        self.extras.notify_registered.push(mbox);
        self
    }

    /// `mbox` receives [`CoopDeregistered`] once this cooperation is fully gone.
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

/// Drops the values of agents that will never run (registration failed, or the builder was
/// dropped unregistered): an agent holding its own or a peer's mailbox would otherwise keep
/// its cell alive forever.
fn release_agents(agents: &[Arc<DynCell>]) {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CoopStatus {
    Registering,
    Registered,
    Deregistering,
    Gone,
}

struct CoopState {
    status: CoopStatus,
    reason: DeregReason,
    /// Head of the intrusive list of live children (linked through their `links`).
    first_child: Option<Arc<CoopInner>>,
    children: usize,
}

/// A child's place in its parent's list; guarded by the parent's state lock.
struct Links {
    next: Option<Arc<CoopInner>>,
    prev: *const CoopInner,
}

/// The agents of a cooperation bound to one queue: `agents[start..end]`.
struct Group {
    queue: Arc<EventQueue>,
    binder: Binder,
    start: u32,
    end: u32,
}

/// A cooperation's groups: the first inline (most cooperations have one), the rest boxed.
struct Groups {
    first: Option<Group>,
    more: Box<[Group]>,
}

impl Groups {
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    fn get(&self, i: usize) -> &Group {
        if i == 0 {
            self.first.as_ref().expect("group 0 exists")
        } else {
            &self.more[i - 1]
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Group> {
        self.first.iter().chain(self.more.iter())
    }
}

/// A registered cooperation.
pub(crate) struct CoopInner {
    id: CoopId,
    env: Arc<EnvShared>,
    /// `None` only for the environment's root cooperation.
    parent: Option<Arc<CoopInner>>,
    agents: Box<[Arc<DynCell>]>,
    groups: Groups,
    state: Mutex<CoopState>,
    /// This cooperation's place in its parent's child list (guarded by the parent's lock).
    links: UnsafeCell<Links>,
    /// Live children, plus one while the cooperation is not deregistering.
    pending: AtomicUsize,
    /// Groups that have not finished yet.
    groups_left: AtomicUsize,
    extras: Option<Box<CoopExtras>>,
}

// SAFETY: `links` is only accessed under the parent's state lock; the raw `prev` pointer
// points to a sibling kept alive by the list itself. Everything else is `Sync`.
unsafe impl Sync for CoopInner {}
// SAFETY: as above.
unsafe impl Send for CoopInner {}

impl CoopInner {
    /// The environment's root cooperation: parent of every top-level cooperation.
    pub(crate) fn root(env: Arc<EnvShared>) -> Self {
        Self {
            id: CoopId(0),
            env,
            parent: None,
            agents: Box::new([]),
            groups: Groups {
                first: None,
                more: Box::new([]),
            },
            state: Mutex::new(CoopState {
                status: CoopStatus::Registered,
                reason: DeregReason::Normal,
                first_child: None,
                children: 0,
            }),
            links: UnsafeCell::new(Links {
                next: None,
                prev: std::ptr::null(),
            }),
            pending: AtomicUsize::new(1),
            groups_left: AtomicUsize::new(0),
            extras: None,
        }
    }

    pub(crate) fn id(&self) -> CoopId {
        self.id
    }

    /// A new strong reference from the pointer an agent keeps.
    ///
    /// # Safety
    /// `p` comes from `Arc::as_ptr` of a cooperation that is still alive.
    pub(crate) unsafe fn arc_from_ptr(p: *const CoopInner) -> Arc<CoopInner> {
        // SAFETY: `p` points into a live `Arc` (caller).
        unsafe { crate::sync::arc_from_ref(p) }
    }

    fn lock_state(&self) -> MutexGuard<'_, CoopState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn panic_reaction(&self) -> Option<PanicReaction> {
        self.extras.as_ref().and_then(|x| x.panic_reaction)
    }

    /// Number of live child cooperations.
    pub(crate) fn child_count(&self) -> usize {
        self.lock_state().children
    }

    /// Puts `child` at the head of this cooperation's child list.
    ///
    /// # Safety
    /// `st` is this cooperation's locked state (which guards the children's `links`).
    unsafe fn link_child(&self, st: &mut CoopState, child: Arc<CoopInner>) {
        // SAFETY: the lock guards every child's links (caller).
        unsafe {
            let links = &mut *child.links.get();
            links.prev = std::ptr::null();
            links.next = st.first_child.take();
            if let Some(next) = &links.next {
                (*next.links.get()).prev = Arc::as_ptr(&child);
            }
        }
        st.first_child = Some(child);
        st.children += 1;
    }

    /// Takes `child` out of this cooperation's child list.
    ///
    /// # Safety
    /// `st` is this cooperation's locked state and `child` is in its list.
    unsafe fn unlink_child(&self, st: &mut CoopState, child: &CoopInner) {
        // SAFETY: the lock guards every child's links (caller); `prev` points to a sibling
        // that the list keeps alive.
        unsafe {
            let links = &mut *child.links.get();
            let next = links.next.take();
            let prev = std::mem::replace(&mut links.prev, std::ptr::null());
            if let Some(n) = &next {
                (*n.links.get()).prev = prev;
            }
            // Replacing the owner's pointer drops the list's strong count on `child`; the
            // caller holds another.
            if prev.is_null() {
                st.first_child = next;
            } else {
                (*(*prev).links.get()).next = next;
            }
        }
        st.children -= 1;
    }

    /// The live children, for deregistration.
    ///
    /// # Safety
    /// `st` is this cooperation's locked state.
    unsafe fn children(&self, st: &CoopState) -> Vec<Arc<CoopInner>> {
        let mut out = Vec::with_capacity(st.children);
        let mut cur = st.first_child.clone();
        while let Some(c) = cur {
            // SAFETY: the lock guards the links (caller).
            cur = unsafe { (*c.links.get()).next.clone() };
            out.push(c);
        }
        out
    }

    /// Unbinds every agent (registration failed, or the cooperation is gone).
    fn unbind_all(&self) {
        for g in self.groups.iter() {
            for _ in g.start..g.end {
                g.binder.unbind(&g.queue);
            }
        }
    }

    /// Starts deregistration (idempotent: the first reason wins).
    pub(crate) fn deregister(self: &Arc<Self>, reason: DeregReason) {
        let children = {
            let mut st = self.lock_state();
            if st.status != CoopStatus::Registered {
                return;
            }
            st.status = CoopStatus::Deregistering;
            st.reason = reason;
            // SAFETY: the lock is held.
            unsafe { self.children(&st) }
        };
        let child_reason = if self.parent.is_none() {
            reason
        } else {
            DeregReason::Parent
        };
        for child in children {
            child.deregister(child_reason);
        }
        self.release_pending();
    }

    fn release_pending(self: &Arc<Self>) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.begin_finish();
        }
    }

    /// Every child is gone: queue `finish` for every group.
    fn begin_finish(self: &Arc<Self>) {
        for cell in self.agents.iter() {
            cell.header.set_status(FINISHING);
        }
        if self.groups.len() == 0 {
            return self.gone();
        }
        for (g, group) in self.groups.iter().enumerate() {
            group.queue.push(Demand::lifecycle(
                self.clone(),
                g as u32,
                Step::Finish { drained: false },
            ));
        }
    }

    /// Runs a lifecycle step on the thread that runs `queue`.
    pub(crate) fn run_step(self: Arc<Self>, group: u32, step: Step, queue: &EventQueue) {
        let g = self.groups.get(group as usize);
        let members = &self.agents[g.start as usize..g.end as usize];
        match step {
            Step::Start => {
                for cell in members {
                    // SAFETY: lifecycle steps run on the thread that runs the group's queue.
                    unsafe { cell.body() }.start(NonNull::from(&**cell));
                }
            }
            Step::Finish { drained: false } => {
                // Move what other threads queued before deregistration began ahead of the
                // finish, so `finish` runs after the last pending message (and every demand
                // that borrows an agent of this queue runs while the cooperation holds it).
                let local = queue
                    .local()
                    .expect("a lifecycle step runs on its queue's worker");
                local.close_lending();
                local.push(Demand::lifecycle(
                    self.clone(),
                    group,
                    Step::Finish { drained: true },
                ));
            }
            Step::Finish { drained: true } => {
                for cell in members {
                    cell.header.set_status(FINISHED);
                    // SAFETY: as for `Start`.
                    unsafe { cell.body() }.finish(NonNull::from(&**cell));
                }
                if self.groups_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    self.gone();
                }
            }
        }
    }

    /// Every agent has finished: unbind, update the count, notify, tell the parent.
    ///
    /// The notification goes out before the parent hears of it: the parent's agents may be
    /// its receivers, and they finish only after this call tells the parent.
    fn gone(self: &Arc<Self>) {
        self.unbind_all();
        // Uncounted first, so whoever sees it gone (or notified) sees the count without it.
        if self.parent.is_some() {
            self.env.agents_removed(self.agents.len());
            self.env.coop_gone();
        }
        let reason = {
            let mut st = self.lock_state();
            st.status = CoopStatus::Gone;
            st.reason
        };
        if let Some(x) = &self.extras {
            for m in &x.notify_deregistered {
                m.send(CoopDeregistered {
                    id: self.id,
                    name: x.name.clone(),
                    reason,
                });
            }
        }
        match &self.parent {
            Some(parent) => parent.child_gone(self),
            None => self.env.root_gone(),
        }
    }

    fn child_gone(self: &Arc<Self>, child: &CoopInner) {
        let (left, registered) = {
            let mut st = self.lock_state();
            // SAFETY: the lock is held and `child` is linked (it registered under this lock
            // and unlinks only here, once).
            unsafe { self.unlink_child(&mut st, child) };
            (st.children, st.status == CoopStatus::Registered)
        };
        if registered && left == 0 && self.parent.is_none() {
            self.env.last_coop_gone();
        }
        self.release_pending();
    }

    /// True once the cooperation is fully gone.
    fn is_gone(&self) -> bool {
        self.lock_state().status == CoopStatus::Gone
    }
}

/// A handle to a registered cooperation.
///
/// ```
/// use cohort::{Agent, DeregReason};
/// struct Idle;
/// impl Agent for Idle {}
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let mut coop = env.new_coop();
/// coop.add(Idle);
/// let handle = env.register_coop(coop).unwrap();
/// handle.deregister(DeregReason::User(7));
/// env.stop();
/// env.wait();
/// assert!(handle.is_gone());
/// ```
#[derive(Clone)]
pub struct CoopHandle {
    inner: Arc<CoopInner>,
}

impl CoopHandle {
    pub(crate) fn new(inner: Arc<CoopInner>) -> Self {
        Self { inner }
    }

    pub(crate) fn into_inner(self) -> Arc<CoopInner> {
        self.inner
    }

    /// The cooperation's id.
    pub fn id(&self) -> CoopId {
        self.inner.id
    }

    /// Its name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.inner.extras.as_ref().and_then(|x| x.name.as_deref())
    }

    /// Starts deregistration (children first). Idempotent: the first reason wins.
    pub fn deregister(&self, reason: DeregReason) {
        self.inner.deregister(reason)
    }

    /// True once every agent has run `finish` and the cooperation is gone.
    pub fn is_gone(&self) -> bool {
        self.inner.is_gone()
    }

    /// Number of live child cooperations.
    pub fn child_count(&self) -> usize {
        self.inner.child_count()
    }
}

impl fmt::Debug for CoopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoopHandle")
            .field("id", &self.inner.id)
            .field("name", &self.name())
            .finish()
    }
}

#[cfg(test)]
mod sizes {
    //! The memory budget of skynet (a million agents in 256 MiB) rests on these sizes.

    use crate::cell::{AgentBody, AgentCell};

    #[test]
    fn agent_cell_fits_a_128_byte_allocation() {
        // A skynet node: parent mailbox and five counters (48 bytes).
        struct Node {
            _parent: crate::Mbox,
            _counters: [u64; 5],
        }
        impl crate::Agent for Node {}
        // An `Arc` adds 16 bytes and glibc 8: 104 + 16 + 8 = 128.
        assert!(std::mem::size_of::<AgentCell<AgentBody<Node>>>() <= 104);
    }

    #[test]
    fn message_demand_is_40_bytes() {
        assert_eq!(std::mem::size_of::<crate::demand::Demand>(), 40);
    }
}
