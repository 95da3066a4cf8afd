//! An agent's subscriptions: which handler runs for a (mailbox, message type, state) triple.
//!
//! The table is a small exact-size vector scanned linearly: agents typically subscribe to a
//! handful of message types, for which a scan of 24-byte keys beats hashing, and an
//! exact-size block behind one pointer (`table.rs`) keeps a million agents small (skynet).
//! Subscribing reallocates it; it happens at definition time, not per message. Handlers are
//! boxed closures; a plain method (`Self::on_ping`) is a zero-sized closure and costs no
//! allocation. An entry and its flags are in `entry.rs`, the sharing of tables in `share.rs`.
//!
//! Each entry carries the index of the agent state it belongs to (0, the default state, for
//! agents that never declare one) and what it does there: handle, transfer to another state
//! or suppress. The per-message scan looks in the current state only; the ancestors are
//! walked on a miss (`state::dispatch`), so switching state costs no re-subscription.
//!
//! Entries record their mailbox relative to the agent's own direct mailbox (the two ids
//! xor-ed: the own mailbox is 0), so agents of one type that subscribed alike in `define`
//! have equal tables, and once `define` has run they share one ([`Subscriptions::share`]):
//! a million idle agents of one type hold one table, not a million. A shared table holds only
//! handlers that capture nothing (zero-sized, nothing to drop), which run in place through a
//! copy of their pointer; the first change an agent makes to its subscriptions gives it its
//! own copy again.

use crate::agent::Agent;
use crate::agent::cell::DynCell;
use crate::agent::state::{DEFAULT_STATE, StateMachine};
use crate::error::SubscribeError;
use crate::mailbox::IndirectMbox;
use crate::mailbox::MboxId;
use crate::runtime::coop::CoopInner;
use std::any::TypeId;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use table::Table;

mod entry;
mod share;
mod table;

pub(crate) use entry::{Action, HANDLE, Handler, NewHandler, SUPPRESS, SharedHandler, placeholder};
use entry::{COPYABLE, Entry, Extras, TAKEN, rel, slot};

/// A handler found for a message: run it, then give it back with [`Subscriptions::put_back`].
pub(crate) struct Taken<A: Agent> {
    /// Its index in the table.
    index: usize,
    /// Never dropped here: a copy needs no drop (it would only call an empty drop through
    /// the vtable), and a moved handler goes back to its entry in `put_back`.
    handler: ManuallyDrop<Handler<A>>,
    /// Taken out of the table (its entry holds a placeholder until it is put back); else a
    /// copy of a [`COPYABLE`] handler, which stays in the table.
    moved: bool,
}

impl<A: Agent> Taken<A> {
    /// The handler, to call.
    #[inline(always)]
    pub(crate) fn handler(&mut self) -> &mut Handler<A> {
        &mut self.handler
    }
}

/// The subscription table of one agent, with its states.
///
/// Two words: a stateless agent pays no memory for states, and an agent sharing its table
/// (see [`Subscriptions::share`]) holds only a counted pointer to it.
pub(crate) struct Subscriptions<A: Agent> {
    /// The entries: the agent's own, or a block shared with agents of its type.
    table: Table<Entry<A>>,
    /// States, hooks and the dead-letter handler; `None` until the agent uses one.
    pub(crate) machine: Option<Box<StateMachine<A>>>,
}

impl<A: Agent> Subscriptions<A> {
    pub(crate) fn new() -> Self {
        Self {
            table: Table::new(),
            machine: None,
        }
    }

    /// The entries.
    #[inline(always)]
    fn table(&self) -> &[Entry<A>] {
        self.table.as_slice()
    }

    /// Gives the handler just added for (mailbox, type) in `state` its thread-safe form.
    pub(crate) fn add_shared(
        &mut self,
        own: MboxId,
        mbox: MboxId,
        key: TypeId,
        state: u16,
        handler: SharedHandler<A>,
    ) {
        let (mbox, want) = (rel(own, mbox), slot(state, HANDLE));
        if let Some(e) = self
            .table
            .unique(Entry::copy)
            .as_mut_slice()
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
    pub(crate) fn shared(
        &self,
        own: MboxId,
        mbox: MboxId,
        key: TypeId,
    ) -> Option<&SharedHandler<A>> {
        let (mbox, want) = (rel(own, mbox), slot(self.current(), HANDLE));
        self.table()
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

    /// The handler for `key` arriving through `mbox` in the current state of the agent whose
    /// direct mailbox is `own`. A handler that captures something is taken out of the table
    /// while it runs, so that it can change the table (subscribe, unsubscribe) through its
    /// context; a [`COPYABLE`] one runs through a copy and stays. `None` when the current
    /// state has no handler of its own (the caller then walks the ancestors, see
    /// `state::dispatch`).
    #[inline]
    pub(crate) fn take(&mut self, own: MboxId, mbox: MboxId, key: TypeId) -> Option<Taken<A>> {
        let (mbox, want) = (rel(own, mbox), slot(self.current(), HANDLE));
        let index = self
            .table()
            .iter()
            .position(|e| e.key == key && e.mbox == mbox && e.slot == want)?;
        self.take_found(index)
    }

    /// Takes the handler of entry `index`.
    #[inline(always)]
    fn take_found(&mut self, index: usize) -> Option<Taken<A>> {
        let e = &self.table()[index];
        if e.copyable() {
            return Some(Taken {
                index,
                handler: ManuallyDrop::new(e.copy_handler()),
                moved: false,
            });
        }
        // A handler that captures something is in no shared table (`share` leaves such a
        // table the agent's own), so this finds the table unshared.
        let mut table = self.table.unique_if_not_shared()?;
        let e = &mut table.as_mut_slice()[index];
        e.flags |= TAKEN;
        Some(Taken {
            index,
            handler: ManuallyDrop::new(std::mem::replace(&mut e.handler, placeholder())),
            moved: true,
        })
    }

    /// Takes the handler of entry `i` (see [`Subscriptions::take`]); `None` if the entry
    /// transfers or suppresses rather than handles.
    #[inline]
    pub(crate) fn take_at(&mut self, i: usize) -> Option<Taken<A>> {
        if self.table()[i].action() != HANDLE {
            return None;
        }
        self.take_found(i)
    }

    /// The entry for (mailbox, type) in exactly `state`: its index and action.
    pub(crate) fn find(
        &self,
        own: MboxId,
        mbox: MboxId,
        key: TypeId,
        state: u16,
    ) -> Option<(usize, Action)> {
        let mbox = rel(own, mbox);
        let table = self.table();
        table
            .iter()
            .position(|e| e.key == key && e.mbox == mbox && e.state() == state)
            .map(|i| (i, table[i].action()))
    }

    /// Whether any state has an entry for (mailbox, type).
    pub(crate) fn has_any(&self, own: MboxId, mbox: MboxId, key: TypeId) -> bool {
        let mbox = rel(own, mbox);
        self.table().iter().any(|e| e.key == key && e.mbox == mbox)
    }

    /// Returns a handler found by [`Subscriptions::take`]: puts it back if it was taken out
    /// (dropping it if it unsubscribed itself meanwhile); a copy just goes. Always inlined:
    /// for a copy (a plain method, the usual handler) it is one test, where a call was 5 % of
    /// a self-send's samples.
    #[inline(always)]
    pub(crate) fn put_back(&mut self, own: MboxId, mbox: MboxId, key: TypeId, taken: Taken<A>) {
        if taken.moved {
            self.put_back_taken(own, mbox, key, taken)
        }
    }

    /// [`Subscriptions::put_back`] of a handler taken out of the table.
    fn put_back_taken(&mut self, own: MboxId, mbox: MboxId, key: TypeId, taken: Taken<A>) {
        let handler = ManuallyDrop::into_inner(taken.handler);
        let mbox = rel(own, mbox);
        // A moved handler came from the agent's own entries, which stay its own until it
        // is back: sharing happens only once `define` has run, when nothing is taken.
        let Some(mut table) = self.table.unique_if_not_shared() else {
            return;
        };
        if let Some(e) = table.as_mut_slice().get_mut(taken.index)
            && e.flags & TAKEN != 0
            && e.key == key
            && e.mbox == mbox
        {
            e.handler = handler;
            e.flags &= !TAKEN;
            return;
        }
        self.put_back_moved(mbox, key, handler)
    }

    #[cold]
    fn put_back_moved(&mut self, mbox: MboxId, key: TypeId, handler: Handler<A>) {
        if let Some(e) = self
            .table
            .unique(Entry::copy)
            .as_mut_slice()
            .iter_mut()
            .find(|e| e.flags & TAKEN != 0 && e.key == key && e.mbox == mbox)
        {
            e.handler = handler;
            e.flags &= !TAKEN;
        }
    }

    /// Adds an entry; a second one for the same (mailbox, type, state) is an error.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        own: MboxId,
        state: u16,
        action: Action,
        mbox: MboxId,
        key: TypeId,
        type_name: fn() -> &'static str,
        handler: NewHandler<A>,
        named: Option<Arc<IndirectMbox>>,
    ) -> Result<(), SubscribeError> {
        if self.find(own, mbox, key, state).is_some() {
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
        self.table.unique(Entry::copy).push(Entry {
            key,
            mbox: rel(own, mbox),
            slot: slot(state, action),
            handler: handler.handler,
            flags: if handler.copyable { COPYABLE } else { 0 },
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
        let own = DynCell::mbox_id_at(cell);
        let Some((i, _)) = self.find(own, mbox, key, state) else {
            return false;
        };
        let Some(e) = self.table.unique(Entry::copy).remove(i) else {
            return false;
        };
        if let Some(n) = e.named()
            && !self.has_any(own, mbox, key)
        {
            unregister(coop, n, key, cell);
        }
        true
    }

    /// Removes the handler for (mailbox, type) without unregistering it from its mailbox
    /// (it was never registered there).
    pub(crate) fn forget(&mut self, own: MboxId, mbox: MboxId, key: TypeId) {
        let mbox = rel(own, mbox);
        self.table
            .unique(Entry::copy)
            .retain(|e| !(e.key == key && e.mbox == mbox));
    }

    /// The multi-consumer and unique-subscribers mailboxes subscribed to.
    pub(crate) fn named_mboxes(&self) -> impl Iterator<Item = &Arc<IndirectMbox>> {
        self.table().iter().filter_map(Entry::named)
    }

    /// Drops every subscription, unregistering from multi-consumer mailboxes (those its
    /// cooperation `coop` has not dropped already).
    pub(crate) fn clear(&mut self, cell: *const DynCell, coop: *const CoopInner) {
        // Hooks, pending time limits and the dead-letter handler go with the subscriptions.
        self.machine = None;
        let table = std::mem::replace(&mut self.table, Table::new());
        for e in table.as_slice() {
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
    use super::*;
    use crate::agent::Context;
    use crate::message::Envelope;

    struct Idle;
    impl crate::Agent for Idle {}

    struct Ping;

    /// An agent with one subscription holds one 72-byte block for it (the thin vector's
    /// two-word header and one entry), unless it shares its table.
    #[test]
    fn an_entry_is_seven_words() {
        assert_eq!(std::mem::size_of::<Entry<Idle>>(), 56);
    }

    /// A table with one plain-function handler for the direct mailbox `own`.
    fn defined(own: usize, handler: NewHandler<Idle>) -> Subscriptions<Idle> {
        let mut subs = Subscriptions::new();
        let own = MboxId(own);
        subs.add(
            own,
            DEFAULT_STATE,
            HANDLE,
            own,
            TypeId::of::<Ping>(),
            std::any::type_name::<Ping>,
            handler,
            None,
        )
        .unwrap();
        subs.share();
        subs
    }

    fn plain() -> NewHandler<Idle> {
        NewHandler::new(|_: &mut Idle, _: Envelope, _: &mut Context<'_, Idle>| {})
    }

    #[test]
    fn agents_that_subscribed_alike_share_one_table() {
        let a = defined(0x1000, plain());
        let b = defined(0x2000, plain());
        assert!(a.table.same_block(&b.table));
        // Each finds its handler through its own mailbox only.
        let key = TypeId::of::<Ping>();
        assert!(a.has_any(MboxId(0x1000), MboxId(0x1000), key));
        assert!(!a.has_any(MboxId(0x1000), MboxId(0x2000), key));
        assert!(b.has_any(MboxId(0x2000), MboxId(0x2000), key));
    }

    #[test]
    fn a_handler_that_captures_keeps_its_table_its_own() {
        let n = Arc::new(0u64);
        let captured = NewHandler::new(
            move |_: &mut Idle, _: Envelope, _: &mut Context<'_, Idle>| {
                let _ = &n;
            },
        );
        assert!(!captured.copyable);
        let a = defined(0x1000, captured);
        assert!(!a.table.is_shared());
        assert_eq!(a.table().len(), 1);
    }

    #[test]
    fn a_change_gives_the_agent_its_own_copy() {
        let key = TypeId::of::<Ping>();
        let mut a = defined(0x1000, plain());
        let b = defined(0x2000, plain());
        assert!(a.table.same_block(&b.table));
        a.forget(MboxId(0x1000), MboxId(0x1000), key);
        assert!(!a.table.same_block(&b.table));
        assert!(!a.has_any(MboxId(0x1000), MboxId(0x1000), key));
        // The other agent still has its subscription.
        assert!(b.has_any(MboxId(0x2000), MboxId(0x2000), key));
        let found = {
            let mut b = b;
            b.take(MboxId(0x2000), MboxId(0x2000), key).map(|t| t.moved)
        };
        assert_eq!(found, Some(false), "a shared handler runs through a copy");
    }

    #[test]
    fn different_handlers_for_the_same_type_are_not_shared() {
        let a = defined(0x1000, plain());
        let other = NewHandler::new(|_: &mut Idle, _: Envelope, _: &mut Context<'_, Idle>| {
            std::hint::black_box(1);
        });
        let b = defined(0x2000, other);
        assert!(!a.table.same_block(&b.table));
        assert_eq!(a.table().len(), 1);
        assert_eq!(b.table().len(), 1);
    }
}
