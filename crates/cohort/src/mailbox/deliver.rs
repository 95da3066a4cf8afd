//! [`deliver`]: the one path by which a message reaches an agent's queue, whoever sends it
//! (a direct mailbox, a multi-consumer one, a message limit's redirect, the agent itself).
//!
//! It checks the agent's status, applies its message limits (if it has any), traces the
//! queueing (if on), and pushes a message [`Demand`] to the agent's queue: its local half
//! when the sender runs that queue, else its remote half. What differs between senders is
//! only how the demand refers to the agent ([`Receiver`]) and whether the remote push, their
//! common path or a rare one, is inlined at the send, so the generic function is
//! monomorphised per kind and no sender pays for the others' cases.

use crate::agent::cell::{ABANDONED, ACTIVE, AgentRef, DeliveryFailure, DynCell, NEW};
use crate::agent::demand::Demand;
use crate::mailbox::MboxId;
use crate::mailbox::limits::Admit;
use crate::message::Envelope;
use crate::queue::EventQueue;
use crate::trace::{self, TraceStep};
use std::ptr::NonNull;
use std::sync::Arc;

/// How a sender holds the receiving agent, which decides how a demand refers to it.
pub(crate) trait Receiver: Copy {
    /// The receiving agent's cell, alive for the whole send.
    fn cell(&self) -> &DynCell;
    /// The agent as a demand on its queue's remote half refers to it: borrowed when the
    /// queue lends (`lend`, see `EventQueue::push_remote_with`) and the kind allows it, else
    /// owned.
    fn remote_ref(self, lend: bool, mbox: MboxId) -> AgentRef;
    /// Pushes the message demand for `msg` to the remote half of `queue`, the agent's (see
    /// [`push_to_remote_half`]).
    fn push_remote(self, queue: &EventQueue, mbox: MboxId, msg: Envelope, counted: bool);
}

/// The push of [`deliver`] from a thread that does not run the agent's queue: the demand is
/// built in its place in the queue, after the claim or reservation.
#[inline(always)]
fn push_to_remote_half<R: Receiver>(
    to: R,
    queue: &EventQueue,
    mbox: MboxId,
    msg: Envelope,
    counted: bool,
) {
    queue.push_remote_with(|lend| Demand::Message {
        agent: to.remote_ref(lend, mbox).counted(counted),
        msg,
    })
}

/// Any sender holding the agent's `Arc` (its direct mailbox, a multi-consumer mailbox's
/// subscriber list).
impl Receiver for &Arc<DynCell> {
    #[inline(always)]
    fn cell(&self) -> &DynCell {
        self
    }

    #[inline(always)]
    fn remote_ref(self, lend: bool, mbox: MboxId) -> AgentRef {
        // Read after the reservation: an agent seen active here has its finish step still
        // to come, and that step sees this reservation (`EventQueue::push_remote_with`).
        if lend && self.header.status() == ACTIVE {
            // SAFETY: the queue lends and the agent had not begun to finish: the demand was
            // reserved before its finish step, which runs it before `finish` (see
            // `AgentRef::borrowed`); the sender holds a strong count until the demand is in
            // the queue.
            unsafe { AgentRef::borrowed(self, mbox) }
        } else {
            AgentRef::owned(self.clone(), mbox)
        }
    }

    #[inline(always)]
    fn push_remote(self, queue: &EventQueue, mbox: MboxId, msg: Envelope, counted: bool) {
        push_to_remote_half(self, queue, mbox, msg, counted)
    }
}

/// The agent whose hook or handler runs on this thread, sending to itself: it holds no
/// count, since its cooperation keeps the cell alive while any of its hooks runs.
#[derive(Clone, Copy)]
pub(crate) struct ItSelf(pub(crate) NonNull<DynCell>);

impl ItSelf {
    /// The agent's direct mailbox id.
    #[inline(always)]
    pub(crate) fn mbox_id(self) -> MboxId {
        self.cell().mbox_id()
    }
}

impl Receiver for ItSelf {
    #[inline(always)]
    fn cell(&self) -> &DynCell {
        // SAFETY: one of the agent's hooks is running (the context that made `self` proves
        // it), so its cooperation holds the cell.
        unsafe { self.0.as_ref() }
    }

    #[inline(always)]
    fn remote_ref(self, _lend: bool, mbox: MboxId) -> AgentRef {
        // Reached only when the agent's handler runs off its queue's thread (thread-safe
        // handlers on adv_thread_pool, or `define` on the registering thread, which sees
        // `NEW` first): take a count like any other sender.
        let ptr = self.0.as_ptr() as *const DynCell;
        // SAFETY: the cell lives in an `Arc` and is alive.
        let arc = unsafe { crate::sync::arc_from_ref(ptr) };
        AgentRef::owned(arc, mbox)
    }

    /// Rare (see `remote_ref`), so out of line: a send to itself from a handler is then
    /// small enough to be inlined into the handler.
    #[inline(never)]
    fn push_remote(self, queue: &EventQueue, mbox: MboxId, msg: Envelope, counted: bool) {
        push_to_remote_half(self, queue, mbox, msg, counted)
    }
}

/// Delivers `msg` to the agent `to`, as arriving through mailbox `mbox`, `depth` redirects
/// by message limits away from its first mailbox.
#[inline(always)]
pub(crate) fn deliver<R: Receiver>(to: R, mbox: MboxId, msg: Envelope, depth: u8) {
    let cell = to.cell();
    let header = &cell.header;
    if header.status() != ACTIVE {
        return inactive(to, mbox, msg, depth);
    }
    let (msg, counted) = match admit(cell, mbox, msg, depth) {
        Some(admitted) => admitted,
        None => return,
    };
    // SAFETY: the status was `ACTIVE` (acquire), so the queue is bound.
    let queue = unsafe { header.queue() };
    if let Some(local) = queue.local() {
        let agent = NonNull::from(cell);
        local.push_with(|| Demand::Message {
            // SAFETY: we run the agent's queue and saw it `ACTIVE`: the borrowed reference
            // stays valid until the demand runs.
            agent: unsafe { AgentRef::borrowed_ptr(agent, mbox) }.counted(counted),
            msg,
        })
    } else {
        to.push_remote(queue, mbox, msg, counted)
    }
}

/// Applies the agent's message limits (if any) and traces the queueing (if on): the
/// envelope to queue and whether it was counted, or `None` when a limit took it.
#[inline(always)]
fn admit(cell: &DynCell, mbox: MboxId, msg: Envelope, depth: u8) -> Option<(Envelope, bool)> {
    let header = &cell.header;
    let agent = cell.mbox_id();
    let admitted = match cell.limits() {
        None => (msg, false),
        Some(limits) => match limits.admit(&header.env, mbox, agent, msg, depth) {
            Admit::Counted(msg) => (msg, true),
            Admit::Free(msg) => (msg, false),
            Admit::Taken => return None,
        },
    };
    if trace::on() {
        header
            .env
            .trace_step(TraceStep::Queued, &admitted.0, Some(mbox), Some(agent));
    }
    Some(admitted)
}

/// A message for an agent that is not `ACTIVE`: a 1:N delivery (through a mailbox the
/// agent subscribed to, not its own) to an agent whose cooperation is still registering is
/// queued, and kept on the queue until its `start` (see [`AgentRef::handle`]); anything
/// else is a dead letter.
#[cold]
fn inactive<R: Receiver>(to: R, mbox: MboxId, msg: Envelope, depth: u8) {
    let cell = to.cell();
    let header = &cell.header;
    let why = match header.status() {
        NEW if mbox != cell.mbox_id() => return deliver_registering(to, mbox, msg, depth),
        NEW | ABANDONED => DeliveryFailure::NotRegistered,
        _ => DeliveryFailure::ReceiverGone,
    };
    header.dead_letter_at(msg, why, mbox, cell.mbox_id())
}

/// Queues a 1:N delivery to an agent subscribed in `define` whose cooperation is still
/// registering: owned (the cooperation may yet fail and let the cell go), past its message
/// limits like any message. Its queue keeps it until the agent's `start` (or counts it as
/// `NotRegistered` if the registration fails).
#[cold]
fn deliver_registering<R: Receiver>(to: R, mbox: MboxId, msg: Envelope, depth: u8) {
    let cell = to.cell();
    let (msg, counted) = match admit(cell, mbox, msg, depth) {
        Some(admitted) => admitted,
        None => return,
    };
    // SAFETY: a subscriber is bound before its `define` subscribes it, and this sender found
    // the subscription in a table published under the mailbox's lock after that: the
    // binding is visible here.
    let queue = unsafe { cell.header.queue() };
    queue.push(Demand::Message {
        agent: to.remote_ref(false, mbox).counted(counted),
        msg,
    })
}

/// Queues `msg`, an event the runtime owes the agent `to` (a future's output, an ask's
/// outcome), past its message limits; gives it back if the agent no longer takes messages.
pub(crate) fn deliver_event(to: &Arc<DynCell>, msg: Envelope) -> Result<(), Envelope> {
    let cell: &DynCell = to;
    let header = &cell.header;
    if header.status() != ACTIVE {
        return Err(msg);
    }
    let mbox = cell.mbox_id();
    if trace::on() {
        header
            .env
            .trace_step(TraceStep::Queued, &msg, Some(mbox), Some(mbox));
    }
    // SAFETY: the status was `ACTIVE` (acquire), so the queue is bound.
    let queue = unsafe { header.queue() };
    if let Some(local) = queue.local() {
        let agent = NonNull::from(cell);
        local.push_with(|| Demand::Message {
            // SAFETY: we run the agent's queue and saw it `ACTIVE` (as in `deliver`).
            agent: unsafe { AgentRef::borrowed_ptr(agent, mbox) },
            msg,
        })
    } else {
        queue.push_remote_with(|lend| Demand::Message {
            agent: to.remote_ref(lend, mbox),
            msg,
        })
    }
    Ok(())
}
