//! [`Header`]: the part of an agent any thread may read (status, bound queue, environment).

use crate::agent::cell::env_ref::EnvRef;
use crate::mailbox::limits::MessageLimits;
use crate::message::Envelope;
use crate::panic::PanicReaction;
use crate::queue::{EventQueue, QueueArc};
use crate::runtime::env::EnvShared;
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::mailbox::MboxId;
use crate::mailbox::dead_letter::DeadLetter;
pub use crate::mailbox::dead_letter::DeliveryFailure;

/// Flag: `start` has run.
const STARTED: u8 = 1;
/// Flag: the agent value has been dropped (after `finish`, or when its registration failed).
const AGENT_DROPPED: u8 = 2;
/// Flag: the agent has spawned a future ([`Context::spawn`](crate::Context::spawn)), so its
/// start and finish look for its futures.
const SPAWNED: u8 = 4;

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
///
/// `repr(C)`: what a sender reads at every send (the status, the `limited` flag, the queue)
/// fills the first 16 bytes, and the environment word, which it reads only for an agent with
/// message limits, comes last, nearest the agent's fields (see `AgentBody`).
#[repr(C)]
pub(crate) struct Header {
    status: AtomicU8,
    /// `STARTED`, `AGENT_DROPPED` and `SPAWNED`. Each is touched only by the thread that has
    /// the agent at that moment (registering it, running its queue, or dropping it), so
    /// relaxed loads and stores suffice: the hand-offs between those threads order them, and
    /// no read-modify-write (a locked instruction per agent start) is needed. An atomic byte
    /// in the status word's padding keeps a cell within 128 bytes without `unsafe`.
    flags: AtomicU8,
    /// Whether the agent declared message limits: set in `define` (status `NEW`) after the
    /// environment word took them, so a sender to an agent without limits need not read that
    /// word.
    limited: AtomicBool,
    /// The agent's own panic reaction: written before registration, read-only after.
    pub(super) panic_reaction: UnsafeCell<Option<PanicReaction>>,
    /// Written once at registration, before the status becomes `ACTIVE` (release), and read
    /// only after observing `ACTIVE` or later (acquire).
    queue: UnsafeCell<Option<QueueArc>>,
    /// The environment, and the agent's message limits once it declared some (one word:
    /// see [`EnvRef`]).
    pub(crate) env: EnvRef<EnvShared, MessageLimits>,
}

impl Header {
    pub(crate) fn new(env: Arc<EnvShared>) -> Self {
        Self {
            status: AtomicU8::new(NEW),
            flags: AtomicU8::new(0),
            limited: AtomicBool::new(false),
            panic_reaction: UnsafeCell::new(None),
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
    pub(crate) unsafe fn bind_queue(&self, q: QueueArc) {
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

    /// Whether the agent declared message limits (see `limited`).
    #[inline(always)]
    pub(super) fn limited(&self) -> bool {
        self.limited.load(Ordering::Acquire)
    }

    /// Records that the environment word now holds the agent's limits.
    pub(super) fn set_limited(&self) {
        self.limited.store(true, Ordering::Release)
    }

    #[inline]
    fn flag(&self, flag: u8) -> bool {
        self.flags.load(Ordering::Relaxed) & flag != 0
    }

    /// Sets `flag`. Only the thread that has the agent writes its flags (see `flags`).
    fn set_flag(&self, flag: u8) {
        let flags = self.flags.load(Ordering::Relaxed);
        self.flags.store(flags | flag, Ordering::Relaxed);
    }

    /// Whether `start` has run.
    #[inline]
    pub(super) fn started(&self) -> bool {
        self.flag(STARTED)
    }

    pub(super) fn set_started(&self) {
        self.set_flag(STARTED)
    }

    /// Whether the agent value has been dropped.
    pub(super) fn agent_dropped(&self) -> bool {
        self.flag(AGENT_DROPPED)
    }

    /// Marks the agent value dropped; false if it already was (so it is dropped once by the
    /// thread that has exclusive access to the body, which every caller's contract requires).
    pub(super) fn mark_agent_dropped(&self) -> bool {
        if self.agent_dropped() {
            return false;
        }
        self.set_flag(AGENT_DROPPED);
        true
    }

    /// Whether the agent has spawned a future.
    pub(crate) fn spawned(&self) -> bool {
        self.flag(SPAWNED)
    }

    pub(crate) fn set_spawned(&self) {
        self.set_flag(SPAWNED)
    }

    pub(super) fn panic_reaction(&self) -> Option<PanicReaction> {
        // SAFETY: written only before registration (by the builder's owner), read-only after.
        unsafe { *self.panic_reaction.get() }
    }

    /// The bound queue's `Arc`.
    ///
    /// # Safety
    /// As for [`Header::queue`], or the caller bound it on this thread.
    pub(crate) unsafe fn queue_arc(&self) -> &QueueArc {
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

#[cfg(test)]
mod layout {
    use super::Header;
    use std::mem::{offset_of, size_of};

    #[test]
    fn what_a_sender_reads_fills_the_first_16_bytes_and_the_environment_word_comes_last() {
        assert_eq!(size_of::<Header>(), 24);
        assert!(offset_of!(Header, status) < 8);
        assert!(offset_of!(Header, limited) < 8);
        assert_eq!(offset_of!(Header, queue), 8);
        assert_eq!(offset_of!(Header, env), 16);
    }
}
