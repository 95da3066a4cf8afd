//! [`AgentCell`]: where an agent lives once added to a cooperation.
//!
//! A cell is one allocation: a [`Header`] that any thread may read (the agent's status and
//! the queue it is bound to) and a body that only the thread running the agent's queue touches
//! (the agent itself, its subscriptions). Cells are type-erased as [`DynCell`]; the one dynamic
//! call per message goes from the worker into [`ErasedBody::handle`], which is monomorphised
//! per agent type.

use crate::agent::{Agent, Context};
use crate::coop::{CoopInner, DeregReason};
use crate::env::EnvShared;
use crate::env_ref::EnvRef;
use crate::limits::MessageLimits;
use crate::mbox::MboxId;
use crate::message::Envelope;
use crate::panic::PanicReaction;
use crate::queue::EventQueue;
use crate::subscription::{Handler, Subscriptions};
use crate::trace::{self, TraceStep};
use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

pub use crate::dead_letter::DeliveryFailure;

/// Agent status: added to a cooperation that is not registered yet.
pub(crate) const NEW: u8 = 0;
/// Registered: accepts messages.
pub(crate) const ACTIVE: u8 = 1;
/// Its cooperation is deregistering: no new messages, pending ones still run.
pub(crate) const FINISHING: u8 = 2;
/// `finish` has run: nothing runs any more.
pub(crate) const FINISHED: u8 = 3;

/// The part of an agent any thread may read.
pub(crate) struct Header {
    status: AtomicU8,
    /// Whether `start` has run. Only the thread running the agent's queue touches it (kept
    /// here, in the status word's padding, to keep a cell within 128 bytes).
    started: UnsafeCell<bool>,
    /// The agent's own panic reaction: written before registration, read-only after.
    panic_reaction: UnsafeCell<Option<PanicReaction>>,
    /// The agent value has been dropped (after `finish`, or when its registration failed).
    /// Touched by whoever has exclusive access to the body.
    agent_dropped: UnsafeCell<bool>,
    /// Written once at registration, before the status becomes `ACTIVE` (release), and read
    /// only after observing `ACTIVE` or later (acquire).
    queue: UnsafeCell<Option<Arc<EventQueue>>>,
    /// The environment, and the agent's message limits once it declared some (one word:
    /// see [`EnvRef`]).
    pub(crate) env: EnvRef<EnvShared, MessageLimits>,
}

impl Header {
    pub(crate) fn new(env: Arc<EnvShared>) -> Self {
        Self {
            status: AtomicU8::new(NEW),
            started: UnsafeCell::new(false),
            panic_reaction: UnsafeCell::new(None),
            agent_dropped: UnsafeCell::new(false),
            queue: UnsafeCell::new(None),
            env: EnvRef::new(env),
        }
    }

    #[inline]
    pub(crate) fn status(&self) -> u8 {
        self.status.load(Ordering::Acquire)
    }

    pub(crate) fn set_status(&self, s: u8) {
        self.status.store(s, Ordering::Release)
    }

    /// Binds the agent's queue.
    ///
    /// # Safety
    /// Called once, by the registering thread, before the status leaves `NEW`.
    pub(crate) unsafe fn bind_queue(&self, q: Arc<EventQueue>) {
        // SAFETY: nobody reads `queue` before the status leaves `NEW` (caller), so this write
        // does not race; the release store of the status publishes it.
        unsafe { *self.queue.get() = Some(q) }
    }

    /// The bound queue.
    ///
    /// # Safety
    /// The caller observed a status other than `NEW` (acquire), so the queue is bound.
    #[inline]
    pub(crate) unsafe fn queue(&self) -> &EventQueue {
        // SAFETY: written before the status left `NEW`, never written again (caller).
        match unsafe { &*self.queue.get() } {
            Some(q) => q,
            None => unreachable!("agent queue read before binding"),
        }
    }

    /// Whether `start` has run.
    ///
    /// # Safety
    /// The caller runs the agent's queue.
    #[inline]
    unsafe fn started(&self) -> bool {
        // SAFETY: only the running thread touches `started` (caller).
        unsafe { *self.started.get() }
    }

    /// # Safety
    /// As for [`Header::started`].
    unsafe fn set_started(&self) {
        // SAFETY: only the running thread touches `started` (caller).
        unsafe { *self.started.get() = true }
    }

    fn panic_reaction(&self) -> Option<PanicReaction> {
        // SAFETY: written only before registration (by the builder's owner), read-only after.
        unsafe { *self.panic_reaction.get() }
    }

    /// The bound queue's `Arc`.
    ///
    /// # Safety
    /// As for [`Header::queue`], or the caller bound it on this thread.
    pub(crate) unsafe fn queue_arc(&self) -> &Arc<EventQueue> {
        // SAFETY: as the caller guarantees.
        match unsafe { &*self.queue.get() } {
            Some(q) => q,
            None => unreachable!("agent queue read before binding"),
        }
    }

    /// Counts an undeliverable message known by its type name.
    #[cold]
    pub(crate) fn dead_letter_named(&self, message_type: &'static str, why: DeliveryFailure) {
        self.env.dead_letter(message_type, why);
    }

    /// Counts an undeliverable message and hands it to the environment's hook.
    #[cold]
    pub(crate) fn dead_letter(&self, msg: Envelope, why: DeliveryFailure) {
        self.env.dead_letter(msg.type_name(), why);
        // A request inside learns why it goes unanswered.
        crate::request::drop_with_reason(msg, why);
    }
}

/// An agent's home: header plus body.
pub(crate) struct AgentCell<B: ?Sized + ErasedBody> {
    pub(crate) header: Header,
    body: UnsafeCell<B>,
}

impl<B: ?Sized + ErasedBody> Drop for AgentCell<B> {
    fn drop(&mut self) {
        // An agent that never finished (its cooperation was never registered, or its
        // registration failed) still holds its value.
        if !*self.header.agent_dropped.get_mut() {
            // SAFETY: `&mut self`: exclusive access; the value has not been dropped yet.
            unsafe { self.body.get_mut().drop_agent() }
        }
    }
}

impl DynCell {
    /// The agent's message limits, if it declared any.
    #[inline(always)]
    pub(crate) fn limits(&self) -> Option<&MessageLimits> {
        self.header.env.limits()
    }

    /// Sets the agent's message limits; false if they were already set.
    ///
    /// # Safety
    /// Called by the registering thread, in `define`, while the status is `NEW`.
    pub(crate) unsafe fn set_limits(&self, limits: MessageLimits) -> bool {
        // SAFETY: only the registering thread calls it (caller); senders read the limits
        // after observing `ACTIVE`, published after `define`.
        unsafe { self.header.env.set_limits(limits) }
    }

    /// Drops the agent value now (its cooperation will never run it): breaks the cycles that
    /// mailboxes held by agents form (an agent holding its own or a peer's mailbox).
    ///
    /// # Safety
    /// The caller has exclusive access to the body (not registered, or its `finish` ran on
    /// this thread) and the agent will not run again.
    pub(crate) unsafe fn release_agent(&self) {
        // SAFETY: exclusive access (caller).
        unsafe {
            if !*self.header.agent_dropped.get() {
                *self.header.agent_dropped.get() = true;
                let body = &mut *self.body.get();
                // Subscriptions to multi-consumer mailboxes made in `define` hold the cell:
                // unregister them, or the cell would never be freed.
                body.clear_subscriptions(self);
                body.drop_agent();
            }
        }
    }
}

/// A cell with its agent type erased.
pub(crate) type DynCell = AgentCell<dyn ErasedBody>;

// SAFETY: the header is `Sync` by itself; the body is only accessed by the thread that runs
// the agent's queue (one at a time) or by the registering thread before any worker sees it.
unsafe impl<B: ?Sized + Send + ErasedBody> Sync for AgentCell<B> {}

impl<A: Agent> AgentCell<AgentBody<A>> {
    pub(crate) fn new(env: Arc<EnvShared>, agent: A) -> Arc<Self> {
        Arc::new(Self {
            header: Header::new(env),
            body: UnsafeCell::new(AgentBody {
                subs: Subscriptions::new(),
                coop: std::ptr::null(),
                agent: ManuallyDrop::new(agent),
            }),
        })
    }

    /// The agent itself, before registration.
    ///
    /// # Safety
    /// The cell is not registered yet and the caller has the only access to its body.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn agent_mut(&self) -> &mut A {
        // SAFETY: as the caller guarantees.
        unsafe { &mut (*self.body.get()).agent }
    }

    /// # Safety
    /// As for [`AgentCell::agent_mut`].
    pub(crate) unsafe fn set_panic_reaction(&self, r: PanicReaction) {
        // SAFETY: as the caller guarantees: nobody reads it before registration.
        unsafe { *self.header.panic_reaction.get() = Some(r) }
    }
}

impl DynCell {
    /// The body.
    ///
    /// # Safety
    /// The caller runs this agent's queue, or registers the agent before any worker sees it;
    /// no other reference to the body is alive.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn body(&self) -> &mut dyn ErasedBody {
        // SAFETY: exclusive access as the caller guarantees.
        unsafe { &mut *self.body.get() }
    }

    /// The body, shared (thread-safe handlers on `adv_thread_pool`).
    ///
    /// # Safety
    /// No `&mut` to the body is alive while the returned reference is (exclusive handlers
    /// never overlap thread-safe ones).
    #[inline]
    pub(crate) unsafe fn body_shared(&self) -> &dyn ErasedBody {
        // SAFETY: as the caller guarantees.
        unsafe { &*self.body.get() }
    }

    /// The direct mailbox id: the cell's address.
    #[inline]
    pub(crate) fn mbox_id(&self) -> MboxId {
        MboxId((self as *const Self).cast::<()>() as usize)
    }
}

/// Where a message demand goes: the agent, and the mailbox it came through.
///
/// The agent reference is borrowed (no refcount; see `docs/runtime-semantics.md`, "Agent
/// lifetime") on the local path and on the remote path of a pool queue whose agents have not
/// begun to finish, and owned (one strong count) otherwise. The owned flag lives in bit 0 of
/// the mailbox id and the message-limit flag in bit 1 (ids are addresses of 8-aligned
/// objects), which keeps a message demand at 40 bytes.
pub(crate) struct AgentRef {
    ptr: NonNull<DynCell>,
    mbox_and_flags: usize,
}

const OWNED: usize = 1;
/// The message was counted by one of the agent's message limits when queued (bit 1 of the
/// mailbox id, free like bit 0).
const COUNTED: usize = 2;
const FLAGS: usize = OWNED | COUNTED;

// SAFETY: a `DynCell` is `Sync`; an owned ref is an `Arc`, a borrowed one never leaves the
// thread that runs the agent's queue.
unsafe impl Send for AgentRef {}

impl AgentRef {
    /// A borrowed reference.
    ///
    /// # Safety
    /// The cell stays alive until its cooperation releases it, which must happen after this
    /// demand runs: either the caller runs the agent's queue and saw the agent `ACTIVE`, or
    /// the demand goes to the agent's pool queue through a reservation made before the
    /// queue's finish step (`EventQueue::push_remote_with` says so), which moves it ahead of
    /// `finish`; and the caller holds a strong count until the demand is in the queue.
    #[inline]
    pub(crate) unsafe fn borrowed(cell: &Arc<DynCell>, mbox: MboxId) -> Self {
        debug_assert_eq!(mbox.0 & FLAGS, 0);
        Self {
            ptr: NonNull::from(&**cell),
            mbox_and_flags: mbox.0,
        }
    }

    /// A borrowed reference from a raw cell pointer.
    ///
    /// # Safety
    /// As for [`AgentRef::borrowed`].
    #[inline]
    pub(crate) unsafe fn borrowed_ptr(cell: NonNull<DynCell>, mbox: MboxId) -> Self {
        debug_assert_eq!(mbox.0 & FLAGS, 0);
        Self {
            ptr: cell,
            mbox_and_flags: mbox.0,
        }
    }

    /// An owned reference (one strong count).
    #[inline]
    pub(crate) fn owned(cell: Arc<DynCell>, mbox: MboxId) -> Self {
        debug_assert_eq!(mbox.0 & FLAGS, 0);
        // SAFETY: `Arc::into_raw` never returns null.
        let ptr = unsafe { NonNull::new_unchecked(Arc::into_raw(cell) as *mut DynCell) };
        Self {
            ptr,
            mbox_and_flags: mbox.0 | OWNED,
        }
    }

    /// Marks the message as counted by a message limit (when `counted`).
    #[inline(always)]
    pub(crate) fn counted(mut self, counted: bool) -> Self {
        self.mbox_and_flags |= usize::from(counted) << 1;
        self
    }

    /// Counts a message out of its message limit, if it was counted in.
    #[inline(always)]
    fn release_limit(&self, msg: &Envelope) {
        if self.mbox_and_flags & COUNTED != 0 {
            // SAFETY: the cell is alive while this reference exists (see constructors).
            release_limit(unsafe { self.ptr.as_ref() }, msg)
        }
    }

    /// Counts a demand that will never run as undelivered.
    pub(crate) fn reject(self, msg: Envelope, why: DeliveryFailure) {
        if self.mbox_and_flags & COUNTED != 0
            && let Some(limits) = self.header().env.limits()
        {
            limits.release_rejected(msg.key());
        }
        self.header().dead_letter(msg, why)
    }

    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the cell is alive while this reference exists (see constructors).
        unsafe { &self.ptr.as_ref().header }
    }

    /// Runs a message on the agent. Called by the thread that runs the agent's queue.
    #[inline]
    pub(crate) fn handle(self, msg: Envelope) {
        self.release_limit(&msg);
        let mbox = MboxId(self.mbox_and_flags & !FLAGS);
        // SAFETY: demands run on the thread that runs the agent's queue, one at a time, and
        // the cell is alive (constructors).
        unsafe { self.ptr.as_ref().body() }.handle(self.ptr, mbox, msg);
    }
}

impl AgentRef {
    /// Whether `msg` goes to a thread-safe handler of a started agent. Called by the thread
    /// that runs the agent's queue.
    #[inline]
    pub(crate) fn is_thread_safe(&self, msg: &Envelope) -> bool {
        let mbox = MboxId(self.mbox_and_flags & !FLAGS);
        // SAFETY: called by the queue's runner, which no exclusive handler overlaps.
        unsafe { self.ptr.as_ref().body_shared() }.is_thread_safe(self.ptr, mbox, msg)
    }

    /// Runs `msg` on the agent's thread-safe handler (after [`AgentRef::is_thread_safe`]), on
    /// any thread, alongside other thread-safe handlers of the agent but no other handler.
    pub(crate) fn handle_shared(self, msg: Envelope) {
        self.release_limit(&msg);
        let mbox = MboxId(self.mbox_and_flags & !FLAGS);
        // SAFETY: the dispatcher runs no exclusive handler of this agent until this returns,
        // and the cell outlives the demand (the agent cannot finish meanwhile).
        unsafe { self.ptr.as_ref().body_shared() }.handle_shared(self.ptr, mbox, msg);
    }
}

impl Drop for AgentRef {
    #[inline]
    fn drop(&mut self) {
        if self.mbox_and_flags & OWNED != 0 {
            // SAFETY: an owned ref holds one strong count taken by `Arc::into_raw`.
            unsafe { drop(Arc::from_raw(self.ptr.as_ptr() as *const DynCell)) }
        }
    }
}

#[inline(never)]
fn release_limit(cell: &DynCell, msg: &Envelope) {
    if let Some(limits) = cell.limits() {
        limits.release(msg.key());
    }
}

/// Why an agent's `define` failed.
#[derive(Debug)]
pub(crate) enum DefineFailure {
    Failed(crate::agent::DefineError),
    Panicked(String),
}

/// The agent-type-specific entry points, called through one dynamic call.
pub(crate) trait ErasedBody: Send {
    fn handle(&mut self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope);
    /// See [`AgentRef::is_thread_safe`].
    fn is_thread_safe(&self, this: NonNull<DynCell>, mbox: MboxId, msg: &Envelope) -> bool;
    /// See [`AgentRef::handle_shared`].
    fn handle_shared(&self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope);
    fn start(&mut self, this: NonNull<DynCell>);
    fn finish(&mut self, this: NonNull<DynCell>);
    fn define(&mut self, this: NonNull<DynCell>) -> Result<(), DefineFailure>;
    fn attach(&mut self, coop: *const CoopInner);
    fn name(&self) -> Cow<'static, str>;
    fn agent_type(&self) -> std::any::TypeId;
    /// Drops the agent value.
    ///
    /// # Safety
    /// Called at most once, with exclusive access; nothing touches the agent afterwards.
    unsafe fn drop_agent(&mut self);
    /// Drops every subscription (unregistering from multi-consumer mailboxes).
    fn clear_subscriptions(&mut self, cell: *const DynCell);
}

/// An agent with its runtime state.
pub(crate) struct AgentBody<A: Agent> {
    pub(crate) subs: Subscriptions<A>,
    /// The agent's cooperation: set at registration, valid until the agent has finished
    /// (the cooperation outlives the handling of its agents' demands).
    pub(crate) coop: *const CoopInner,
    /// Dropped right after `finish` (see [`AgentCell::release_agent`]).
    pub(crate) agent: ManuallyDrop<A>,
}

// SAFETY: `coop` points to a `Sync` cooperation; everything else is `Send` since `A: Send`.
unsafe impl<A: Agent> Send for AgentBody<A> {}

impl<A: Agent> AgentBody<A> {
    #[cold]
    fn trace_handled(&self, this: NonNull<DynCell>, mbox: MboxId, message_type: &'static str) {
        // SAFETY: the cell is alive while its demands run.
        let cell = unsafe { this.as_ref() };
        let agent = cell.mbox_id();
        let name = self.agent.name();
        cell.header.env.trace(&trace::TraceEvent {
            step: TraceStep::Handled,
            message_type,
            mbox: Some(mbox),
            agent: Some(agent),
            agent_name: Some(&name),
        });
    }

    #[cold]
    pub(crate) fn on_panic(
        &self,
        this: NonNull<DynCell>,
        during: &str,
        payload: Box<dyn Any + Send>,
    ) {
        // SAFETY: the cell is alive while its demands run.
        let header = unsafe { &this.as_ref().header };
        // SAFETY: `coop` is valid while the agent runs (field doc).
        let coop = unsafe { CoopInner::arc_from_ptr(self.coop) };
        let reaction = header
            .panic_reaction()
            .or(coop.panic_reaction())
            .unwrap_or(header.env.panic_reaction);
        let what = panic_message(&*payload);
        tracing::error!(
            agent = %self.agent.name(),
            during,
            panic = %what,
            ?reaction,
            "agent handler panicked"
        );
        header.env.count_panic();
        match reaction {
            PanicReaction::Abort => std::process::abort(),
            PanicReaction::ShutdownEnvironment => header.env.stop(),
            PanicReaction::DeregisterCoop => coop.deregister(DeregReason::Panic),
            PanicReaction::Ignore => {}
        }
    }
}

fn panic_message(p: &(dyn Any + Send)) -> Cow<'static, str> {
    if let Some(s) = p.downcast_ref::<&'static str>() {
        Cow::Borrowed(s)
    } else if let Some(s) = p.downcast_ref::<String>() {
        Cow::Owned(s.clone())
    } else {
        Cow::Borrowed("<non-string panic payload>")
    }
}

impl<A: Agent> AgentBody<A> {
    /// Runs a handler taken from the subscriptions with `msg`, then puts it back.
    #[inline(always)]
    pub(crate) fn run_handler(
        &mut self,
        this: NonNull<DynCell>,
        slot: usize,
        mbox: MboxId,
        key: TypeId,
        mut handler: Handler<A>,
        msg: Envelope,
    ) {
        let type_name = msg.type_name_fn();
        if trace::on() {
            self.trace_handled(this, mbox, type_name());
        }
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let result = catch_unwind(AssertUnwindSafe(|| handler(agent, msg, &mut ctx)));
        self.subs.put_back(slot, mbox, key, handler);
        if let Err(payload) = result {
            self.on_panic(this, type_name(), payload);
        }
        if self.subs.pending() {
            // The handler switched state: the hooks run now, before the next message.
            self.run_effects(this);
        }
    }
}

impl<A: Agent> ErasedBody for AgentBody<A> {
    #[inline]
    fn handle(&mut self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
        // SAFETY: the cell is alive while its demands run.
        let header = unsafe { &this.as_ref().header };
        // SAFETY: we run the agent's queue.
        if !unsafe { header.started() } {
            // SAFETY: the agent is registered (its queue is bound).
            let queue = unsafe { header.queue() };
            let local = queue.local().expect("a handler runs on its queue's worker");
            return local.stash_early(this.as_ptr() as *const () as usize, mbox, msg);
        }
        if header.status() == FINISHED {
            return header.dead_letter(msg, DeliveryFailure::ReceiverGone);
        }
        let key = msg.key();
        let Some((slot, handler)) = self.subs.take(mbox, key) else {
            // Not in the current state: its parents, transfers, the dead-letter handler.
            return self.handle_unmatched(this, mbox, msg);
        };
        self.run_handler(this, slot, mbox, key, handler, msg);
    }

    #[inline]
    fn is_thread_safe(&self, this: NonNull<DynCell>, mbox: MboxId, msg: &Envelope) -> bool {
        // SAFETY: the cell is alive while its demands run, and we run its queue.
        let header = unsafe { &this.as_ref().header };
        // SAFETY: we run the agent's queue (caller).
        let started = unsafe { header.started() };
        started && header.status() != FINISHED && self.subs.shared(mbox, msg.key()).is_some()
    }

    fn handle_shared(&self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
        let Some(handler) = self.subs.shared(mbox, msg.key()) else {
            // SAFETY: the cell is alive while its demands run.
            let header = unsafe { &this.as_ref().header };
            return header.dead_letter(msg, DeliveryFailure::NoHandler);
        };
        let type_name = msg.type_name_fn();
        let agent: &A = &self.agent;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| handler(agent, &msg))) {
            self.on_panic(this, type_name(), payload);
        }
    }

    fn start(&mut self, this: NonNull<DynCell>) {
        // SAFETY: the cell is alive and we run its queue.
        unsafe { this.as_ref().header.set_started() };
        if self.subs.pending() {
            // Hooks of a switch made in `define`.
            self.run_effects(this);
        }
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let result = catch_unwind(AssertUnwindSafe(|| agent.start(&mut ctx)));
        if let Err(payload) = result {
            self.on_panic(this, "start", payload);
        }
        if self.subs.pending() {
            self.run_effects(this);
        }
        // SAFETY: the cell is alive and registered.
        let queue = unsafe { this.as_ref().header.queue() };
        let early = queue
            .local()
            .expect("`start` runs on its queue's worker")
            .take_early(this.as_ptr() as *const () as usize);
        for (mbox, msg) in early {
            self.handle(this, mbox, msg);
        }
    }

    fn finish(&mut self, this: NonNull<DynCell>) {
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let result = catch_unwind(AssertUnwindSafe(|| agent.finish(&mut ctx)));
        if let Err(payload) = result {
            self.on_panic(this, "finish", payload);
        }
        // The active states are left: their `on_exit` hooks run, their time limits end.
        self.leave_states(this);
        // Nothing of the agent runs again: free its handlers and its value now rather than
        // when the last mailbox goes (and break the cycles of agents holding mailboxes).
        self.subs.clear(this.as_ptr());
        let agent = &mut self.agent;
        let dropped = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the cell is alive and we run its queue; the status is FINISHED, so no
            // handler touches the agent again, and the flag keeps it from a second drop.
            unsafe {
                let header = &this.as_ref().header;
                *header.agent_dropped.get() = true;
                ManuallyDrop::drop(agent);
            }
        }));
        if let Err(payload) = dropped {
            // The cooperation's finish must complete whatever the agent's `Drop` does.
            // SAFETY: the cell is alive while its demands run.
            unsafe { this.as_ref() }.header.env.count_panic();
            let what = panic_message(&*payload);
            tracing::error!(panic = %what, "agent value panicked when dropped after finish");
        }
    }

    fn define(&mut self, this: NonNull<DynCell>) -> Result<(), DefineFailure> {
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        match catch_unwind(AssertUnwindSafe(|| agent.define(&mut ctx))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(DefineFailure::Failed(e)),
            Err(p) => {
                let what = panic_message(&*p).into_owned();
                // SAFETY: the cell is alive (its registration is running).
                unsafe { this.as_ref() }.header.env.count_panic();
                tracing::error!(agent = %self.agent.name(), panic = %what, "agent panicked in define");
                Err(DefineFailure::Panicked(what))
            }
        }
    }

    fn attach(&mut self, coop: *const CoopInner) {
        self.coop = coop;
    }

    fn name(&self) -> Cow<'static, str> {
        self.agent.name()
    }

    fn agent_type(&self) -> std::any::TypeId {
        std::any::TypeId::of::<A>()
    }

    fn clear_subscriptions(&mut self, cell: *const DynCell) {
        self.subs.clear(cell);
    }

    unsafe fn drop_agent(&mut self) {
        // SAFETY: at most once, and nothing touches the agent afterwards (caller).
        unsafe { ManuallyDrop::drop(&mut self.agent) }
    }
}
