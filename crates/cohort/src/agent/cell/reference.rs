//! [`AgentRef`]: what a message demand holds of its agent, borrowed or owned.

use super::{ABANDONED, DynCell, Header};
use crate::mailbox::MboxId;
use crate::message::Envelope;
use std::ptr::NonNull;
use std::sync::Arc;

pub use crate::mailbox::dead_letter::DeliveryFailure;

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
    /// the demand goes to the agent's queue through a reservation made before the agent's
    /// finish step (`EventQueue::push_remote_with` says when), which moves it ahead of
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
        let mbox = MboxId(self.mbox_and_flags & !FLAGS);
        // SAFETY: the cell is alive while this reference exists (see constructors).
        let agent = unsafe { self.ptr.as_ref() }.mbox_id();
        self.header().dead_letter_at(msg, why, mbox, agent)
    }

    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the cell is alive while this reference exists (see constructors).
        unsafe { &self.ptr.as_ref().header }
    }

    /// Runs a message on the agent. Called by the thread that runs the agent's queue.
    ///
    /// A message for an agent whose `start` has not run is kept on the queue and replayed
    /// right after `start` (see [`before_start`]), without touching the agent's body: while
    /// its cooperation registers, the body belongs to the registering thread.
    #[inline(always)]
    pub(crate) fn handle(self, msg: Envelope) {
        self.release_limit(&msg);
        let mbox = MboxId(self.mbox_and_flags & !FLAGS);
        // SAFETY: the cell is alive (constructors).
        let cell = unsafe { self.ptr.as_ref() };
        if !cell.header.started() {
            return before_start(cell, self.ptr, mbox, msg);
        }
        // SAFETY: demands run on the thread that runs the agent's queue, one at a time; the
        // agent has started, so its registration is over and the body is this thread's.
        unsafe { cell.body() }.handle(self.ptr, mbox, msg);
    }
}

impl AgentRef {
    /// Whether `msg` goes to a thread-safe handler of a started agent. Called by the thread
    /// that runs the agent's queue.
    #[inline]
    pub(crate) fn is_thread_safe(&self, msg: &Envelope) -> bool {
        let mbox = MboxId(self.mbox_and_flags & !FLAGS);
        // SAFETY: the cell is alive (constructors).
        let cell = unsafe { self.ptr.as_ref() };
        // SAFETY: called by the queue's runner. An agent not started is not asked (its body
        // may still belong to the registering thread); once started, no exclusive handler
        // overlaps this call.
        cell.header.started() && unsafe { cell.body_shared() }.is_thread_safe(self.ptr, mbox, msg)
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

/// A message for an agent whose `start` has not run, on the thread that runs its queue:
/// kept on the queue, by the cell's address, and replayed right after `start`, in the order
/// it arrived (an agent that is `NEW` gets here only by a 1:N delivery while its cooperation
/// registers); a `NotRegistered` dead letter if the registration failed.
#[cold]
fn before_start(cell: &DynCell, ptr: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
    let header = &cell.header;
    if header.status() == ABANDONED {
        return header.dead_letter_at(msg, DeliveryFailure::NotRegistered, mbox, cell.mbox_id());
    }
    // SAFETY: this demand came out of the agent's queue, so that queue is bound, and the
    // push that queued it ordered the binding before this read.
    let queue = unsafe { header.queue() };
    let local = queue.local().expect("a message runs on its queue's worker");
    local.stash_early(ptr.as_ptr() as *const () as usize, (mbox, msg));
}

#[inline(never)]
fn release_limit(cell: &DynCell, msg: &Envelope) {
    if let Some(limits) = cell.limits() {
        limits.release(msg.key());
    }
}
