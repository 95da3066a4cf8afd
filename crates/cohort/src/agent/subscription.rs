//! An agent's subscriptions: which handler runs for a (mailbox, message type, state) triple.
//!
//! The table is a small exact-size vector scanned linearly: agents typically subscribe to a
//! handful of message types, for which a scan of 24-byte keys beats hashing, and an exact-size
//! thin vector (one pointer; its length lives in the allocation) keeps a million agents small
//! (skynet). Subscribing reallocates it; it happens at definition time, not per message. Handlers are boxed closures; a plain method
//! (`Self::on_ping`) is a zero-sized closure and costs no allocation.
//!
//! Each entry carries the index of the agent state it belongs to (0, the default state, for
//! agents that never declare one) and what it does there: handle, transfer to another state
//! or suppress. The per-message scan looks in the current state only; the ancestors are
//! walked on a miss (`state::dispatch`), so switching state costs no re-subscription.

use crate::agent::cell::DynCell;
use crate::agent::state::{DEFAULT_STATE, StateMachine};
use crate::agent::{Agent, Context};
use crate::error::SubscribeError;
use crate::mailbox::IndirectMbox;
use crate::mailbox::MboxId;
use crate::message::Envelope;
use crate::runtime::coop::CoopInner;
use std::any::TypeId;
use std::sync::Arc;
use thin_vec::ThinVec;

/// A type-erased handler: unpacks the envelope as its message type and calls the user's code.
pub(crate) type Handler<A> = Box<dyn for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send>;

/// What an entry does with its message: [`HANDLE`], [`SUPPRESS`], or else transfer to the
/// state of that index.
pub(crate) type Action = u16;
/// The entry's handler runs.
pub(crate) const HANDLE: Action = u16::MAX;
/// The message is ignored in this state (and its substates), even if a parent handles it.
pub(crate) const SUPPRESS: Action = u16::MAX - 1;

struct Entry<A: Agent> {
    key: TypeId,
    mbox: MboxId,
    /// The state this entry belongs to (high half) and its action (low half): the hot scan
    /// matches "handle, in the current state" with one comparison.
    slot: u32,
    handler: Handler<A>,
    /// The handler is out of the table, running (see [`Subscriptions::take`]).
    taken: bool,
    /// What few entries have, in a box of its own: one word in every entry (seven words in
    /// all, where the two fields inline took eight).
    extras: Option<Box<Extras<A>>>,
}

/// An entry's rare parts.
struct Extras<A: Agent> {
    /// The multi-consumer mailbox this subscription is registered with, to unregister it.
    named: Option<Arc<IndirectMbox>>,
    /// The same handler, thread-safe (`Context::on_thread_safe`).
    shared: Option<SharedHandler<A>>,
}

/// An entry's `slot`.
#[inline(always)]
fn slot(state: u16, action: Action) -> u32 {
    (u32::from(state) << 16) | u32::from(action)
}

impl<A: Agent> Entry<A> {
    fn state(&self) -> u16 {
        (self.slot >> 16) as u16
    }

    fn action(&self) -> Action {
        self.slot as u16
    }

    fn named(&self) -> Option<&Arc<IndirectMbox>> {
        self.extras.as_ref()?.named.as_ref()
    }
}

/// Stands in for a handler while it runs; zero-sized, so boxing it allocates nothing.
pub(crate) fn placeholder<A: Agent>() -> Handler<A> {
    Box::new(|_: &mut A, _: Envelope, _: &mut Context<'_, A>| {})
}

/// A thread-safe handler (`Context::on_thread_safe`): shares the agent, so that
/// `adv_thread_pool` may run several at once.
pub(crate) type SharedHandler<A> = Box<dyn Fn(&A, &Envelope) + Send + Sync>;

/// The subscription table of one agent, with its states.
///
/// Two words: a stateless agent pays no memory for states.
pub(crate) struct Subscriptions<A: Agent> {
    entries: ThinVec<Entry<A>>,
    /// States, hooks and the dead-letter handler; `None` until the agent uses one.
    pub(crate) machine: Option<Box<StateMachine<A>>>,
}

impl<A: Agent> Subscriptions<A> {
    pub(crate) fn new() -> Self {
        Self {
            entries: ThinVec::new(),
            machine: None,
        }
    }

    /// Gives the handler just added for (mailbox, type) in `state` its thread-safe form.
    pub(crate) fn add_shared(
        &mut self,
        mbox: MboxId,
        key: TypeId,
        state: u16,
        handler: SharedHandler<A>,
    ) {
        let want = slot(state, HANDLE);
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.key == key && e.mbox == mbox && e.slot == want)
        {
            let extras = e.extras.get_or_insert_with(|| {
                Box::new(Extras {
                    named: None,
                    shared: None,
                })
            });
            extras.shared = Some(handler);
        }
    }

    /// The thread-safe handler for (mailbox, type) in the current state, if any. (A message
    /// that only an ancestor state handles runs its exclusive form.)
    #[inline]
    pub(crate) fn shared(&self, mbox: MboxId, key: TypeId) -> Option<&SharedHandler<A>> {
        let want = slot(self.current(), HANDLE);
        self.entries
            .iter()
            .find(|e| e.key == key && e.mbox == mbox && e.slot == want)?
            .extras
            .as_ref()?
            .shared
            .as_ref()
    }

    /// The current (innermost) state.
    #[inline(always)]
    pub(crate) fn current(&self) -> u16 {
        match &self.machine {
            None => DEFAULT_STATE,
            Some(m) => m.current,
        }
    }

    /// Whether a state switch left hooks or time limits to run.
    #[inline(always)]
    pub(crate) fn pending(&self) -> bool {
        match &self.machine {
            None => false,
            Some(m) => m.has_pending,
        }
    }

    /// Takes the handler for `key` arriving through `mbox` in the current state out of the
    /// table while it runs, so that the handler can change the table (subscribe, unsubscribe)
    /// through its context. Returns the handler and its index for
    /// [`Subscriptions::put_back`]. `None` when the current state has no handler of its own
    /// (the caller then walks the ancestors, see `state::dispatch`).
    #[inline]
    pub(crate) fn take(&mut self, mbox: MboxId, key: TypeId) -> Option<(usize, Handler<A>)> {
        let want = slot(self.current(), HANDLE);
        let i = self
            .entries
            .iter()
            .position(|e| e.key == key && e.mbox == mbox && e.slot == want)?;
        let e = &mut self.entries[i];
        e.taken = true;
        Some((i, std::mem::replace(&mut e.handler, placeholder())))
    }

    /// Takes the handler of entry `i` (see [`Subscriptions::take`]); `None` if the entry
    /// transfers or suppresses rather than handles.
    #[inline]
    pub(crate) fn take_at(&mut self, i: usize) -> Option<(usize, Handler<A>)> {
        let e = &mut self.entries[i];
        if e.action() != HANDLE {
            return None;
        }
        e.taken = true;
        Some((i, std::mem::replace(&mut e.handler, placeholder())))
    }

    /// The entry for (mailbox, type) in exactly `state`: its index and action.
    pub(crate) fn find(&self, mbox: MboxId, key: TypeId, state: u16) -> Option<(usize, Action)> {
        self.entries
            .iter()
            .position(|e| e.key == key && e.mbox == mbox && e.state() == state)
            .map(|i| (i, self.entries[i].action()))
    }

    /// Whether any state has an entry for (mailbox, type).
    pub(crate) fn has_any(&self, mbox: MboxId, key: TypeId) -> bool {
        self.entries.iter().any(|e| e.key == key && e.mbox == mbox)
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

    /// Adds an entry; a second one for the same (mailbox, type, state) is an error.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        state: u16,
        action: Action,
        mbox: MboxId,
        key: TypeId,
        type_name: fn() -> &'static str,
        handler: Handler<A>,
        named: Option<Arc<IndirectMbox>>,
    ) -> Result<(), SubscribeError> {
        if self.find(mbox, key, state).is_some() {
            return Err(match &self.machine {
                Some(m) if state != DEFAULT_STATE => SubscribeError::AlreadySubscribedInState {
                    message_type: type_name(),
                    state: m.name(state).to_string(),
                },
                _ => SubscribeError::AlreadySubscribed {
                    message_type: type_name(),
                },
            });
        }
        self.entries.reserve_exact(1);
        self.entries.push(Entry {
            key,
            mbox,
            slot: slot(state, action),
            handler,
            taken: false,
            extras: named.map(|n| {
                Box::new(Extras {
                    named: Some(n),
                    shared: None,
                })
            }),
        });
        Ok(())
    }

    /// Removes the entry for (mailbox, type, state); true if there was one. A multi-consumer
    /// mailbox forgets the agent when no state has an entry for that type on it any more.
    /// `coop` is the agent's cooperation, which records its multi-consumer registrations.
    pub(crate) fn remove(
        &mut self,
        mbox: MboxId,
        key: TypeId,
        state: u16,
        cell: *const DynCell,
        coop: *const CoopInner,
    ) -> bool {
        let Some((i, _)) = self.find(mbox, key, state) else {
            return false;
        };
        let e = self.entries.remove(i);
        self.entries.shrink_to_fit();
        if let Some(n) = e.named()
            && !self.has_any(mbox, key)
        {
            unregister(coop, n, key, cell);
        }
        true
    }

    /// Removes the handler for (mailbox, type) without unregistering it from its mailbox
    /// (it was never registered there).
    pub(crate) fn forget(&mut self, mbox: MboxId, key: TypeId) {
        self.entries.retain(|e| !(e.key == key && e.mbox == mbox));
        self.entries.shrink_to_fit();
    }

    /// The multi-consumer and unique-subscribers mailboxes subscribed to.
    pub(crate) fn named_mboxes(&self) -> impl Iterator<Item = &Arc<IndirectMbox>> {
        self.entries.iter().filter_map(Entry::named)
    }

    /// Drops every subscription, unregistering from multi-consumer mailboxes (those its
    /// cooperation `coop` has not dropped already).
    pub(crate) fn clear(&mut self, cell: *const DynCell, coop: *const CoopInner) {
        // Hooks, pending time limits and the dead-letter handler go with the subscriptions.
        self.machine = None;
        for e in std::mem::take(&mut self.entries) {
            if let Some(n) = e.named() {
                unregister(coop, n, e.key, cell);
            }
        }
    }
}

/// Unregisters agent `cell` of cooperation `coop` from the multi-consumer mailbox `n` for
/// `key`, through the cooperation's record of such registrations (which deregistration may
/// have emptied already: then there is nothing left to do).
fn unregister(coop: *const CoopInner, n: &IndirectMbox, key: TypeId, cell: *const DynCell) {
    if coop.is_null() {
        // Never attached to a cooperation, so never registered anywhere through one.
        return n.unsubscribe(key, cell);
    }
    // SAFETY: an agent's cooperation outlives its agent's hooks and its release (see
    // `AgentBody::coop`); the callers run one of those.
    unsafe { &*coop }.unsubscribe_named(n, key, cell)
}

#[cfg(test)]
mod tests {
    /// An agent with one subscription holds one 72-byte block for it (the thin vector's
    /// two-word header and one entry): glibc's 80-byte chunk, where an eight-word entry took
    /// a 96-byte one (the idle-agents and skynet budgets).
    #[test]
    fn an_entry_is_seven_words() {
        struct Idle;
        impl crate::Agent for Idle {}
        assert_eq!(std::mem::size_of::<super::Entry<Idle>>(), 56);
    }
}
