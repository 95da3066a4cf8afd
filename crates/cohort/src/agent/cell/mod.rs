//! [`AgentCell`]: where an agent lives once added to a cooperation.
//!
//! A cell is one allocation: a [`Header`] that any thread may read (the agent's status and
//! the queue it is bound to) and a body that only the thread running the agent's queue touches
//! (the agent itself, its subscriptions). Cells are type-erased as [`DynCell`]; the one dynamic
//! call per message goes from the worker into [`ErasedBody::handle`], which is monomorphised
//! per agent type.

mod body;
pub(crate) mod env_ref;
mod header;
mod reference;

pub(crate) use body::{AgentBody, DefineFailure, ErasedBody, dead_letter_here};
pub(crate) use header::{ABANDONED, ACTIVE, FINISHED, FINISHING, Header, NEW};
pub(crate) use reference::AgentRef;

use crate::agent::Agent;
use crate::agent::subscription::Subscriptions;
use crate::mailbox::MboxId;
use crate::mailbox::limits::MessageLimits;
use crate::panic::PanicReaction;
use crate::runtime::env::EnvShared;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::sync::Arc;

pub use crate::mailbox::dead_letter::DeliveryFailure;

/// An agent's home: header plus body.
pub(crate) struct AgentCell<B: ?Sized + ErasedBody> {
    pub(crate) header: Header,
    body: UnsafeCell<B>,
}

impl<B: ?Sized + ErasedBody> Drop for AgentCell<B> {
    fn drop(&mut self) {
        // An agent that never finished (its cooperation was never registered, or its
        // registration failed) still holds its value.
        if !self.header.agent_dropped() {
            // SAFETY: `&mut self`: exclusive access; the value has not been dropped yet.
            unsafe { self.body.get_mut().drop_agent() }
        }
    }
}

impl DynCell {
    /// The agent's message limits, if it declared any.
    #[inline(always)]
    pub(crate) fn limits(&self) -> Option<&MessageLimits> {
        if !self.header.limited() {
            return None;
        }
        self.header.env.limits()
    }

    /// Sets the agent's message limits; false if they were already set.
    ///
    /// # Safety
    /// Called by the registering thread, in `define`, while the status is `NEW`.
    pub(crate) unsafe fn set_limits(&self, limits: MessageLimits) -> bool {
        // SAFETY: only the registering thread calls it (caller); senders read the limits
        // after observing `ACTIVE`, published after `define`.
        let set = unsafe { self.header.env.set_limits(limits) };
        if set {
            self.header.set_limited();
        }
        set
    }

    /// Drops the agent value now (its cooperation will never run it): breaks the cycles that
    /// mailboxes held by agents form (an agent holding its own or a peer's mailbox).
    ///
    /// # Safety
    /// The caller has exclusive access to the body (not registered, or its `finish` ran on
    /// this thread) and the agent will not run again.
    pub(crate) unsafe fn release_agent(&self) {
        if self.header.spawned() {
            // Futures spawned in `define` of a cooperation that will never run.
            crate::future::cancel_all(self);
        }
        if self.header.mark_agent_dropped() {
            // SAFETY: exclusive access to the body (caller).
            unsafe {
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
        Self::mbox_id_at(self)
    }

    /// The direct mailbox id of the cell at `cell` (its address; nothing is read).
    #[inline(always)]
    pub(crate) fn mbox_id_at(cell: *const DynCell) -> MboxId {
        MboxId(cell.cast::<()>() as usize)
    }
}

#[cfg(test)]
mod layout {
    //! Where an agent's fields fall relative to the header that senders read.

    use super::{AgentBody, AgentCell, Header};
    use crate::agent::subscription::Subscriptions;
    use std::mem::{offset_of, size_of};

    /// An agent whose one field its handlers would write at every message.
    struct Counter {
        _left: u64,
    }
    impl crate::Agent for Counter {}

    #[test]
    fn the_agent_value_comes_after_the_subscriptions_and_the_cooperation_pointer() {
        let agent = offset_of!(AgentBody<Counter>, agent);
        assert_eq!(
            agent,
            size_of::<Subscriptions<Counter>>() + size_of::<usize>()
        );
        assert_eq!(
            agent,
            size_of::<AgentBody<Counter>>() - size_of::<Counter>()
        );
    }

    #[test]
    fn the_agent_value_begins_64_bytes_into_the_allocation() {
        // An `Arc`'s two counts come first: 16 + 24 (header) + 24 (subscriptions, cooperation)
        // puts the agent 64 bytes past the allocation's start, off the line of the header's
        // first 16 bytes unless the allocation starts 48 bytes into a line.
        assert_eq!(size_of::<Header>(), 24);
        let body = offset_of!(AgentCell<AgentBody<Counter>>, body);
        assert_eq!(body, size_of::<Header>());
        assert_eq!(16 + body + offset_of!(AgentBody<Counter>, agent), 64);
    }

    #[test]
    fn a_cache_line_aligned_agent_begins_192_bytes_in_on_a_line_of_its_own() {
        #[repr(align(64))]
        struct Hot {
            _left: u64,
        }
        impl crate::Agent for Hot {}
        let body = offset_of!(AgentCell<AgentBody<Hot>>, body);
        // The counts' line, then the header's with the subscriptions and the cooperation
        // pointer, then the agent's.
        assert_eq!(64 + body + offset_of!(AgentBody<Hot>, agent), 192);
        assert_eq!(size_of::<AgentCell<AgentBody<Hot>>>(), 192);
    }
}
