//! [`AgentBody`]: the agent and its subscriptions, touched only by the thread running its
//! queue, behind the one dynamic call per message ([`ErasedBody`]).

use super::{DynCell, FINISHED};
use crate::agent::subscription::{Subscriptions, Taken};
use crate::agent::{Agent, Context};
use crate::mailbox::MboxId;
use crate::message::Envelope;
use crate::panic::PanicReaction;
use crate::runtime::coop::{CoopInner, PanicNotice};
use crate::trace::{self, TraceStep};
use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

pub use crate::mailbox::dead_letter::DeliveryFailure;

/// Why an agent's `define` failed.
#[derive(Debug)]
pub(crate) enum DefineFailure {
    Failed(crate::agent::DefineError),
    Panicked(String),
}

/// The agent-type-specific entry points, called through one dynamic call.
pub(crate) trait ErasedBody: Send {
    fn handle(&mut self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope);
    /// See [`AgentRef::is_thread_safe`](super::AgentRef::is_thread_safe).
    fn is_thread_safe(&self, this: NonNull<DynCell>, mbox: MboxId, msg: &Envelope) -> bool;
    /// See [`AgentRef::handle_shared`](super::AgentRef::handle_shared).
    fn handle_shared(&self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope);
    fn start(&mut self, this: NonNull<DynCell>);
    fn finish(&mut self, this: NonNull<DynCell>);
    fn define(&mut self, this: NonNull<DynCell>) -> Result<(), DefineFailure>;
    fn attach(&mut self, coop: *const CoopInner);
    /// The agent's cooperation (see [`AgentBody::coop`]).
    fn coop(&self) -> *const CoopInner;
    fn name(&self) -> Cow<'static, str>;
    /// The active states' names, innermost first (the test kit's view of the agent).
    fn state_path(&self) -> Vec<String>;
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
///
/// `repr(C)` keeps the agent value last, so the subscriptions and the cooperation pointer
/// (read by the runner, never by a sender) lie between the header, which a sender on another
/// thread reads at every send, and the agent's fields, which its handlers write: the agent then
/// starts on a line apart from what a sender reads unless the cell's allocation begins 48 bytes
/// into a cache line (see docs/internals.md, "Agent cell").
#[repr(C)]
pub(crate) struct AgentBody<A: Agent> {
    pub(crate) subs: Subscriptions<A>,
    /// The agent's cooperation: set at registration, valid until the agent has finished
    /// (the cooperation outlives the handling of its agents' demands).
    pub(crate) coop: *const CoopInner,
    /// Dropped right after `finish` (see [`AgentCell::release_agent`](super::AgentCell::release_agent)).
    pub(crate) agent: ManuallyDrop<A>,
}

// SAFETY: `coop` points to a `Sync` cooperation; the subscription table may share its block
// with agents of this type on other threads, but a shared block holds only handlers without
// data, never changes and counts its holders atomically (`subscription::table`); everything
// else is `Send` since `A: Send`.
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
        during: &'static str,
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
            PanicReaction::DeregisterCoop => coop.deregister_panicked(PanicNotice {
                agent: self.agent.name().into_owned(),
                agent_type: std::any::type_name::<A>(),
                during,
                message: what.into_owned(),
            }),
            PanicReaction::Ignore => {}
        }
    }
}

/// Counts `msg`, which came through `mbox` to the agent in `this`, as a dead letter.
#[cold]
pub(crate) fn dead_letter_here(
    this: NonNull<DynCell>,
    mbox: MboxId,
    msg: Envelope,
    why: DeliveryFailure,
) {
    // SAFETY: the cell is alive while its demands run (callers run one).
    let cell = unsafe { this.as_ref() };
    cell.header.dead_letter_at(msg, why, mbox, cell.mbox_id())
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
        mut taken: Taken<A>,
        mbox: MboxId,
        key: TypeId,
        msg: Envelope,
    ) {
        let type_name = msg.type_name_fn();
        if trace::on() {
            self.trace_handled(this, mbox, type_name());
        }
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let handler = taken.handler();
        let result = catch_unwind(AssertUnwindSafe(|| handler(agent, msg, &mut ctx)));
        self.subs
            .put_back(DynCell::mbox_id_at(this.as_ptr()), mbox, key, taken);
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
    /// Called once the agent has started (a message that arrives before waits on the queue:
    /// see `AgentRef::handle`).
    #[inline]
    fn handle(&mut self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
        // SAFETY: the cell is alive while its demands run.
        let header = unsafe { &this.as_ref().header };
        if header.status() == FINISHED {
            return dead_letter_here(this, mbox, msg, DeliveryFailure::ReceiverGone);
        }
        let key = msg.key();
        let Some(taken) = self
            .subs
            .take(DynCell::mbox_id_at(this.as_ptr()), mbox, key)
        else {
            // Not in the current state: its parents, transfers, the dead-letter handler.
            return self.handle_unmatched(this, mbox, msg);
        };
        self.run_handler(this, taken, mbox, key, msg);
    }

    #[inline]
    fn is_thread_safe(&self, this: NonNull<DynCell>, mbox: MboxId, msg: &Envelope) -> bool {
        // SAFETY: the cell is alive while its demands run, and we run its queue.
        let header = unsafe { &this.as_ref().header };
        header.status() != FINISHED
            && self
                .subs
                .shared(DynCell::mbox_id_at(this.as_ptr()), mbox, msg.key())
                .is_some()
    }

    fn handle_shared(&self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
        let Some(handler) = self
            .subs
            .shared(DynCell::mbox_id_at(this.as_ptr()), mbox, msg.key())
        else {
            return dead_letter_here(this, mbox, msg, DeliveryFailure::NoHandler);
        };
        let type_name = msg.type_name_fn();
        let agent: &A = &self.agent;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| handler(agent, &msg))) {
            self.on_panic(this, type_name(), payload);
        }
    }

    fn start(&mut self, this: NonNull<DynCell>) {
        // SAFETY: the cell is alive while its demands run.
        let cell = unsafe { this.as_ref() };
        cell.header.set_started();
        if cell.header.spawned() {
            // Futures spawned in `define` start now, so that their output comes after this.
            crate::future::start_deferred(cell);
        }
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
        // SAFETY: the cell is alive while its demands run.
        let cell = unsafe { this.as_ref() };
        if cell.header.spawned() {
            // No future's output is handled after `finish`: cancel them first.
            crate::future::cancel_all(cell);
        }
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
        self.subs.clear(this.as_ptr(), self.coop);
        let agent = &mut self.agent;
        let dropped = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the cell is alive and we run its queue; the status is FINISHED, so no
            // handler touches the agent again, and the flag keeps it from a second drop.
            unsafe {
                if this.as_ref().header.mark_agent_dropped() {
                    ManuallyDrop::drop(agent);
                }
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
            Ok(Ok(())) => {
                self.subs.share();
                Ok(())
            }
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

    fn coop(&self) -> *const CoopInner {
        self.coop
    }

    fn name(&self) -> Cow<'static, str> {
        self.agent.name()
    }

    fn state_path(&self) -> Vec<String> {
        match &self.subs.machine {
            None => vec!["<default>".into()],
            Some(m) => std::iter::successors(Some(m.current), |&s| m.parent(s))
                .map(|s| m.name(s).to_string())
                .collect(),
        }
    }

    fn agent_type(&self) -> std::any::TypeId {
        std::any::TypeId::of::<A>()
    }

    fn clear_subscriptions(&mut self, cell: *const DynCell) {
        self.subs.clear(cell, self.coop);
    }

    unsafe fn drop_agent(&mut self) {
        // SAFETY: at most once, and nothing touches the agent afterwards (caller).
        unsafe { ManuallyDrop::drop(&mut self.agent) }
    }
}
