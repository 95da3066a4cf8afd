//! One subscription: its key, what it does, its handler (and [`NewHandler`], a handler about
//! to become one), with the flags that say whether its handler can be copied.

use crate::agent::{Agent, Context};
use crate::mailbox::{IndirectMbox, MboxId};
use crate::message::Envelope;
use std::any::TypeId;
use std::sync::Arc;

/// A type-erased handler: unpacks the envelope as its message type and calls the user's code.
pub(crate) type Handler<A> = Box<dyn for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send>;

/// A handler about to enter the table, with what the table may do with it.
pub(crate) struct NewHandler<A: Agent> {
    pub(super) handler: Handler<A>,
    /// See [`COPYABLE`].
    pub(super) copyable: bool,
}

impl<A: Agent> NewHandler<A> {
    /// Boxes `f`, noting whether it captures nothing.
    pub(crate) fn new<F>(f: F) -> Self
    where
        F: for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send + 'static,
    {
        Self {
            copyable: size_of::<F>() == 0 && !std::mem::needs_drop::<F>(),
            handler: Box::new(f),
        }
    }

    /// The handler of an entry that transfers or suppresses (it never runs), and what stands
    /// in for a handler taken out of the table while it runs.
    pub(crate) fn placeholder() -> Self {
        Self::new(|_: &mut A, _: Envelope, _: &mut Context<'_, A>| {})
    }
}

/// What an entry does with its message: [`HANDLE`], [`SUPPRESS`], or else transfer to the
/// state of that index.
pub(crate) type Action = u16;
/// The entry's handler runs.
pub(crate) const HANDLE: Action = u16::MAX;
/// The message is ignored in this state (and its substates), even if a parent handles it.
pub(crate) const SUPPRESS: Action = u16::MAX - 1;

/// Entry flag: the handler is out of the table, running (see `Subscriptions::take`).
pub(super) const TAKEN: u8 = 1;
/// Entry flag: the handler is zero-sized and has nothing to drop, so a bitwise copy of its
/// box is the same handler and dropping either frees nothing: it runs through a copy, in
/// place (no taking out and putting back), and tables of such handlers can be shared.
pub(super) const COPYABLE: u8 = 2;

pub(super) struct Entry<A: Agent> {
    pub(super) key: TypeId,
    /// The mailbox, relative to the agent's own direct mailbox (see [`rel`]).
    pub(super) mbox: MboxId,
    /// The state this entry belongs to (high half) and its action (low half): the hot scan
    /// matches "handle, in the current state" with one comparison.
    pub(super) slot: u32,
    pub(super) handler: Handler<A>,
    /// [`TAKEN`], [`COPYABLE`].
    pub(super) flags: u8,
    /// What few entries have, in a box of its own: one word in every entry (seven words in
    /// all, where the two fields inline took eight).
    pub(super) extras: Option<Box<Extras<A>>>,
}

/// An entry's rare parts.
pub(super) struct Extras<A: Agent> {
    /// The multi-consumer mailbox this subscription is registered with, to unregister it.
    pub(super) named: Option<Arc<IndirectMbox>>,
    /// The same handler, thread-safe (`Context::on_thread_safe`).
    pub(super) shared: Option<SharedHandler<A>>,
}

/// An entry's `slot`.
#[inline(always)]
pub(super) fn slot(state: u16, action: Action) -> u32 {
    (u32::from(state) << 16) | u32::from(action)
}

/// `mbox` as an entry records it for the agent whose direct mailbox is `own`.
#[inline(always)]
pub(super) fn rel(own: MboxId, mbox: MboxId) -> MboxId {
    MboxId(own.0 ^ mbox.0)
}

impl<A: Agent> Entry<A> {
    pub(super) fn state(&self) -> u16 {
        (self.slot >> 16) as u16
    }

    pub(super) fn action(&self) -> Action {
        self.slot as u16
    }

    pub(super) fn named(&self) -> Option<&Arc<IndirectMbox>> {
        self.extras.as_ref()?.named.as_ref()
    }

    pub(super) fn copyable(&self) -> bool {
        self.flags & COPYABLE != 0
    }

    /// The handler, to run in place.
    #[inline(always)]
    pub(super) fn copy_handler(&self) -> Handler<A> {
        debug_assert!(self.copyable());
        // SAFETY: the handler is zero-sized with nothing to drop (`COPYABLE`): the copy reads
        // no bytes of it (its data pointer is dangling, only the vtable is used), and
        // dropping the copy runs no code and frees nothing (a box of size zero is no
        // allocation), so the entry's box and the copy never conflict.
        unsafe { std::ptr::read(&self.handler) }
    }

    /// A copy of an entry of a shared table (all of which are [`COPYABLE`] without extras:
    /// see `Subscriptions::share`; any other would lose its handler and extras).
    pub(super) fn copy(&self) -> Self {
        debug_assert!(self.copyable() && self.extras.is_none());
        Entry {
            key: self.key,
            mbox: self.mbox,
            slot: self.slot,
            handler: if self.copyable() {
                self.copy_handler()
            } else {
                placeholder()
            },
            flags: self.flags,
            extras: None,
        }
    }

    /// Whether two shareable entries are the same subscription.
    pub(super) fn same(&self, other: &Self) -> bool {
        self.key == other.key
            && self.mbox == other.mbox
            && self.slot == other.slot
            && self.flags == other.flags
            // The same closure type (a duplicated vtable only costs a missed share).
            && std::ptr::eq(&*self.handler, &*other.handler)
    }
}

/// A thread-safe handler (`Context::on_thread_safe`): shares the agent, so that
/// `adv_thread_pool` may run several at once.
pub(crate) type SharedHandler<A> = Box<dyn Fn(&A, &Envelope) + Send + Sync>;

/// Stands in for a handler while it runs; zero-sized, so boxing it allocates nothing.
pub(crate) fn placeholder<A: Agent>() -> Handler<A> {
    NewHandler::<A>::placeholder().handler
}
