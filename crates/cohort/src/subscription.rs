//! An agent's subscriptions: which handler runs for a (mailbox, message type) pair.
//!
//! The table is a small exact-size slice scanned linearly: agents typically subscribe to a
//! handful of message types, for which a scan of 24-byte keys beats hashing, and an exact-size
//! slice keeps a million agents small (skynet). Subscribing reallocates the slice; it happens
//! at definition time, not per message. Handlers are boxed closures; a plain method
//! (`Self::on_ping`) is a zero-sized closure and costs no allocation.

use crate::agent::{Agent, Context};
use crate::error::SubscribeError;
use crate::mbox::MboxId;
use crate::message::Envelope;
use std::any::TypeId;

/// A type-erased handler: unpacks the envelope as its message type and calls the user's code.
pub(crate) type Handler<A> = Box<dyn for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send>;

struct Entry<A: Agent> {
    key: TypeId,
    mbox: MboxId,
    type_name: fn() -> &'static str,
    handler: Handler<A>,
}

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

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The handler for `key` arriving through `mbox`.
    #[inline]
    pub(crate) fn find(&mut self, mbox: MboxId, key: TypeId) -> Option<&mut Handler<A>> {
        self.entries
            .iter_mut()
            .find(|e| e.key == key && e.mbox == mbox)
            .map(|e| &mut e.handler)
    }

    /// Adds a handler; a second one for the same (mailbox, type) is an error.
    pub(crate) fn add(
        &mut self,
        mbox: MboxId,
        key: TypeId,
        type_name: fn() -> &'static str,
        handler: Handler<A>,
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
            type_name,
            handler,
        });
        self.entries = v.into_boxed_slice();
        Ok(())
    }

    /// Removes the handler for (mailbox, type); true if there was one.
    pub(crate) fn remove(&mut self, mbox: MboxId, key: TypeId) -> bool {
        let before = self.entries.len();
        let mut v = std::mem::take(&mut self.entries).into_vec();
        v.retain(|e| !(e.key == key && e.mbox == mbox));
        let removed = before != v.len();
        self.entries = v.into_boxed_slice();
        removed
    }

    /// Moves subscriptions made while a handler ran into the table.
    pub(crate) fn merge(&mut self, other: Self) -> Result<(), SubscribeError> {
        let mut first_error = None;
        for e in other.entries.into_vec() {
            if let Err(err) = self.add(e.mbox, e.key, e.type_name, e.handler) {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
