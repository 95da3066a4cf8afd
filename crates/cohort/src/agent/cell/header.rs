//! [`Header`]: the part of an agent any thread may read (status, bound queue, environment).

use crate::agent::cell::env_ref::EnvRef;
use crate::mailbox::limits::MessageLimits;
use crate::message::Envelope;
use crate::panic::PanicReaction;
use crate::queue::EventQueue;
use crate::runtime::env::EnvShared;
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::mailbox::MboxId;
use crate::mailbox::dead_letter::DeadLetter;
pub use crate::mailbox::dead_letter::DeliveryFailure;

/// Agent status: added to a cooperation that is not registered yet.
pub(crate) const NEW: u8 = 0;
/// Registered: accepts messages.
pub(crate) const ACTIVE: u8 = 1;
/// Its cooperation is deregistering: no new messages, pending ones still run.
pub(crate) const FINISHING: u8 = 2;
/// `finish` has run: nothing runs any more.
pub(crate) const FINISHED: u8 = 3;
/// Its cooperation's registration failed after the agent was bound: it never starts, and
/// what reaches it is a `NotRegistered` dead letter.
pub(crate) const ABANDONED: u8 = 4;

/// The part of an agent any thread may read.
pub(crate) struct Header {
    status: AtomicU8,
    /// Whether `start` has run. Only the thread running the agent's queue touches it (kept
    /// here, in the status word's padding, to keep a cell within 128 bytes).
    started: UnsafeCell<bool>,
    /// The agent's own panic reaction: written before registration, read-only after.
    pub(super) panic_reaction: UnsafeCell<Option<PanicReaction>>,
    /// The agent value has been dropped (after `finish`, or when its registration failed).
    /// Touched by whoever has exclusive access to the body.
    pub(super) agent_dropped: UnsafeCell<bool>,
    /// The agent has spawned a future ([`Context::spawn`](crate::Context::spawn)): its start
    /// and finish look for its futures. Touched only by the thread that runs the agent (or
    /// registers it, in `define`).
    pub(crate) spawned: UnsafeCell<bool>,
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
            spawned: UnsafeCell::new(false),
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
    /// The caller observed a status other than `NEW` (acquire), so the queue is bound; or it
    /// otherwise knows the binding happened before (it found the agent subscribed to a
    /// mailbox, which `define` does after binding, or it runs a demand from that queue).
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
    pub(super) unsafe fn started(&self) -> bool {
        // SAFETY: only the running thread touches `started` (caller).
        unsafe { *self.started.get() }
    }

    /// # Safety
    /// As for [`Header::started`].
    pub(super) unsafe fn set_started(&self) {
        // SAFETY: only the running thread touches `started` (caller).
        unsafe { *self.started.get() = true }
    }

    pub(super) fn panic_reaction(&self) -> Option<PanicReaction> {
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

    /// Counts an undeliverable message and hands it to the environment's hook.
    #[cold]
    pub(crate) fn dead_letter(&self, msg: Envelope, why: DeliveryFailure) {
        self.env.dead_letter_with(&DeadLetter {
            message: Some(msg.as_any()),
            ..DeadLetter::bare(msg.type_name(), why)
        });
        // A request inside learns why it goes unanswered.
        crate::mailbox::request::drop_with_reason(msg, why);
    }

    /// As [`Header::dead_letter`], for a message sent through `mbox` to the agent whose
    /// direct mailbox is `agent`.
    #[cold]
    pub(crate) fn dead_letter_at(
        &self,
        msg: Envelope,
        why: DeliveryFailure,
        mbox: MboxId,
        agent: MboxId,
    ) {
        self.env.dead_letter_with(&DeadLetter {
            mbox: Some(mbox),
            agent: Some(agent),
            message: Some(msg.as_any()),
            ..DeadLetter::bare(msg.type_name(), why)
        });
        // A request inside learns why it goes unanswered.
        crate::mailbox::request::drop_with_reason(msg, why);
    }
}
