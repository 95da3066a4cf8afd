//! An agent's subscriptions: which handler runs for a (mailbox, message type) pair.
//!
//! The table is a small exact-size slice scanned linearly: agents typically subscribe to a
//! handful of message types, for which a scan of 24-byte keys beats hashing, and an exact-size
//! slice keeps a million agents small (skynet). Subscribing reallocates the slice; it happens
//! at definition time, not per message. Handlers are boxed closures; a plain method
//! (`Self::on_ping`) is a zero-sized closure and costs no allocation.

use crate::agent::{Agent, Context};
use crate::cell::DynCell;
use crate::error::SubscribeError;
use crate::mbox::MboxId;
use crate::message::Envelope;
use crate::named::NamedMbox;
use std::any::TypeId;
use std::sync::Arc;

/// A type-erased handler: unpacks the envelope as its message type and calls the user's code.
pub(crate) type Handler<A> = Box<dyn for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send>;

struct Entry<A: Agent> {
    key: TypeId,
    mbox: MboxId,
    handler: Handler<A>,
    /// The multi-consumer mailbox this subscription is registered with, to unregister it.
    named: Option<Arc<NamedMbox>>,
    /// The handler is out of the table, running (see [`Subscriptions::take`]).
    taken: bool,
    /// The same handler, thread-safe (`Context::on_thread_safe`); boxed twice to keep an
    /// entry small (one word, most entries have none).
    shared: Option<Box<SharedHandler<A>>>,
}

/// Stands in for a handler while it runs; zero-sized, so boxing it allocates nothing.
fn placeholder<A: Agent>() -> Handler<A> {
    Box::new(|_: &mut A, _: Envelope, _: &mut Context<'_, A>| {})
}

/// A thread-safe handler (`Context::on_thread_safe`): shares the agent, so that
/// `adv_thread_pool` may run several at once.
pub(crate) type SharedHandler<A> = Box<dyn Fn(&A, &Envelope) + Send + Sync>;

/// The subscription table of one agent.
pub(crate) struct Subscriptions<A: Agent> {
    entries: Box<[Entry<A>]>,
}

impl<A: Agent> Subscriptions<A> {
    pub(crate) fn new() -> Self {
        Self {
            entries: Box::new([]),
        }
    }

    /// Gives the handler just added for (mailbox, type) its thread-safe form.
    pub(crate) fn add_shared(&mut self, mbox: MboxId, key: TypeId, handler: SharedHandler<A>) {
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.key == key && e.mbox == mbox)
        {
            e.shared = Some(Box::new(handler));
        }
    }

    /// The thread-safe handler for (mailbox, type), if any.
    #[inline]
    pub(crate) fn shared(&self, mbox: MboxId, key: TypeId) -> Option<&SharedHandler<A>> {
        self.entries
            .iter()
            .find(|e| e.key == key && e.mbox == mbox)?
            .shared
            .as_deref()
    }

    /// Takes the handler for `key` arriving through `mbox` out of the table while it runs,
    /// so that the handler can change the table (subscribe, unsubscribe) through its context.
    /// Returns the handler and its index for [`Subscriptions::put_back`].
    #[inline]
    pub(crate) fn take(&mut self, mbox: MboxId, key: TypeId) -> Option<(usize, Handler<A>)> {
        let i = self
            .entries
            .iter()
            .position(|e| e.key == key && e.mbox == mbox)?;
        let e = &mut self.entries[i];
        e.taken = true;
        Some((i, std::mem::replace(&mut e.handler, placeholder())))
    }

    /// Returns a handler taken by [`Subscriptions::take`]; drops it if the handler
    /// unsubscribed itself meanwhile.
    #[inline]
    pub(crate) fn put_back(&mut self, i: usize, mbox: MboxId, key: TypeId, handler: Handler<A>) {
        if let Some(e) = self.entries.get_mut(i)
            && e.taken
            && e.key == key
            && e.mbox == mbox
        {
            e.handler = handler;
            e.taken = false;
            return;
        }
        self.put_back_moved(mbox, key, handler)
    }

    #[cold]
    fn put_back_moved(&mut self, mbox: MboxId, key: TypeId, handler: Handler<A>) {
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.taken && e.key == key && e.mbox == mbox)
        {
            e.handler = handler;
            e.taken = false;
        }
    }

    /// Adds a handler; a second one for the same (mailbox, type) is an error.
    pub(crate) fn add(
        &mut self,
        mbox: MboxId,
        key: TypeId,
        type_name: fn() -> &'static str,
        handler: Handler<A>,
        named: Option<Arc<NamedMbox>>,
    ) -> Result<(), SubscribeError> {
        if self.entries.iter().any(|e| e.key == key && e.mbox == mbox) {
            return Err(SubscribeError::AlreadySubscribed {
                message_type: type_name(),
            });
        }
        let mut v = std::mem::take(&mut self.entries).into_vec();
        v.reserve_exact(1);
        v.push(Entry {
            key,
            mbox,
            handler,
            named,
            taken: false,
            shared: None,
        });
        self.entries = v.into_boxed_slice();
        Ok(())
    }

    /// Removes the handler for (mailbox, type); true if there was one.
    pub(crate) fn remove(&mut self, mbox: MboxId, key: TypeId, cell: *const DynCell) -> bool {
        let before = self.entries.len();
        let mut v = std::mem::take(&mut self.entries).into_vec();
        v.retain(|e| {
            let hit = e.key == key && e.mbox == mbox;
            if hit && let Some(n) = &e.named {
                n.unsubscribe(key, cell);
            }
            !hit
        });
        let removed = before != v.len();
        self.entries = v.into_boxed_slice();
        removed
    }

    /// Drops every subscription, unregistering from multi-consumer mailboxes.
    pub(crate) fn clear(&mut self, cell: *const DynCell) {
        for e in std::mem::take(&mut self.entries).into_vec() {
            if let Some(n) = &e.named {
                n.unsubscribe(e.key, cell);
            }
        }
    }
}
