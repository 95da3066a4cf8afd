//! An agent's subscriptions: which handler runs for a (mailbox, message type, state) triple.
//!
//! Most agents subscribe one handler, to their own direct mailbox, and never declare a state:
//! that handler is kept inline in the agent's cell ([`Table::One`], two words, its message
//! type named by its [`Handler`]'s static table), so such an agent's subscriptions cost no
//! allocation of their own and a message finds its handler without leaving the cell. Any other
//! table (a second subscription, a multi-consumer mailbox, a thread-safe form, a state) spills
//! to one box ([`Spilled`]): a small exact-size vector scanned linearly, since agents typically
//! subscribe to a handful of message types, for which a scan of 24-byte keys beats hashing,
//! and the agent's states. Subscribing reallocates it; it happens at definition time, not per
//! message. Handlers are boxed closures; a plain method (`Self::on_ping`) is a zero-sized
//! closure and costs no allocation.
//!
//! Each spilled entry carries the index of the agent state it belongs to (0, the default
//! state, for agents that never declare one) and what it does there: handle, transfer to
//! another state or suppress. The per-message scan looks in the current state only; the
//! ancestors are walked on a miss (`state::dispatch`), so switching state costs no
//! re-subscription.

use crate::agent::cell::DynCell;
pub(crate) use crate::agent::handler::Handler;
use crate::agent::state::{DEFAULT_STATE, StateMachine};
use crate::agent::{Agent, Context};
use crate::error::SubscribeError;
use crate::mailbox::IndirectMbox;
use crate::mailbox::MboxId;
use crate::message::Envelope;
use crate::runtime::coop::CoopInner;
use std::any::TypeId;
use std::sync::Arc;

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
    /// The multi-consumer mailbox this subscription is registered with, to unregister it.
    named: Option<Arc<IndirectMbox>>,
    /// The handler is out of the table, running (see [`Subscriptions::take`]).
    taken: bool,
    /// The same handler, thread-safe (`Context::on_thread_safe`); boxed twice to keep an
    /// entry small (one word, most entries have none).
    shared: Option<Box<SharedHandler<A>>>,
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

    fn is(&self, mbox: MboxId, key: TypeId) -> bool {
        self.key == key && self.mbox == mbox
    }
}

/// Stands in for the handler of a transfer or a suppression, which never runs; zero-sized, so
/// boxing it allocates nothing.
pub(crate) fn placeholder<A: Agent>() -> Handler<A> {
    Handler::new::<(), _>(|_: &mut A, _: Envelope, _: &mut Context<'_, A>| {})
}

/// A thread-safe handler (`Context::on_thread_safe`): shares the agent, so that
/// `adv_thread_pool` may run several at once.
pub(crate) type SharedHandler<A> = Box<dyn Fn(&A, &Envelope) + Send + Sync>;

/// Every table but the inline one: the entries and the states.
struct Spilled<A: Agent> {
    entries: Vec<Entry<A>>,
    /// States, hooks and the dead-letter handler; `None` until the agent uses one.
    machine: Option<Box<StateMachine<A>>>,
}

/// The table's two shapes, in two words (the spilled box sits in the inline handler's niche).
enum Table<A: Agent> {
    /// One handler, for its message type on the agent's own direct mailbox, in the default
    /// state, with no thread-safe form, and no state declared: the common agent.
    One(Handler<A>),
    /// Anything else; `None` for no subscription and no state.
    Spilled(Option<Box<Spilled<A>>>),
}

/// The subscription table of one agent, with its states.
///
/// Two words: a stateless agent with one subscription to its own mailbox keeps it inline.
pub(crate) struct Subscriptions<A: Agent> {
    table: Table<A>,
}

impl<A: Agent> Subscriptions<A> {
    pub(crate) fn new() -> Self {
        Self {
            table: Table::Spilled(None),
        }
    }

    fn spilled(&self) -> Option<&Spilled<A>> {
        match &self.table {
            Table::Spilled(Some(s)) => Some(&**s),
            _ => None,
        }
    }

    fn spilled_mut(&mut self) -> Option<&mut Spilled<A>> {
        match &mut self.table {
            Table::Spilled(Some(s)) => Some(&mut **s),
            _ => None,
        }
    }

    /// The spilled table, made from the inline one if needed; `own` is the agent's direct
    /// mailbox (the inline handler's).
    fn spill(&mut self, own: MboxId) -> &mut Spilled<A> {
        if !matches!(self.table, Table::Spilled(Some(_))) {
            let mut spilled = Box::new(Spilled {
                entries: Vec::new(),
                machine: None,
            });
            if let Table::One(handler) = std::mem::replace(&mut self.table, Table::Spilled(None)) {
                spilled.entries.reserve_exact(1);
                spilled.entries.push(Entry {
                    key: handler.key(),
                    mbox: own,
                    slot: slot(DEFAULT_STATE, HANDLE),
                    taken: handler.is_stand_in(),
                    handler,
                    named: None,
                    shared: None,
                });
            }
            self.table = Table::Spilled(Some(spilled));
        }
        match &mut self.table {
            Table::Spilled(Some(s)) => s,
            _ => unreachable!("spilled just above"),
        }
    }

    /// The inline handler, if it is the one for (mailbox, type) on the agent's own mailbox
    /// `own`.
    #[inline(always)]
    fn one(&mut self, own: MboxId, mbox: MboxId, key: TypeId) -> Option<&mut Handler<A>> {
        match &mut self.table {
            Table::One(h) if mbox == own && h.key() == key => Some(h),
            _ => None,
        }
    }

    /// The agent's states, if it declared any.
    #[inline(always)]
    pub(crate) fn machine(&self) -> Option<&StateMachine<A>> {
        self.spilled()?.machine.as_deref()
    }

    /// As [`Subscriptions::machine`], mutable.
    #[inline(always)]
    pub(crate) fn machine_mut(&mut self) -> Option<&mut StateMachine<A>> {
        self.spilled_mut()?.machine.as_deref_mut()
    }

    /// The agent's states, created (with the table spilled) on first use; `own` is the
    /// agent's direct mailbox.
    pub(crate) fn machine_or_new(&mut self, own: MboxId) -> &mut StateMachine<A> {
        self.spill(own)
            .machine
            .get_or_insert_with(|| Box::new(StateMachine::new()))
    }

    /// Gives the handler just added for (mailbox, type) in `state` its thread-safe form;
    /// `own` is the agent's direct mailbox.
    pub(crate) fn add_shared(
        &mut self,
        own: MboxId,
        mbox: MboxId,
        key: TypeId,
        state: u16,
        handler: SharedHandler<A>,
    ) {
        let want = slot(state, HANDLE);
        if let Some(e) = self
            .spill(own)
            .entries
            .iter_mut()
            .find(|e| e.is(mbox, key) && e.slot == want)
        {
            e.shared = Some(Box::new(handler));
        }
    }

    /// The thread-safe handler for (mailbox, type) in the current state, if any. (A message
    /// that only an ancestor state handles runs its exclusive form.)
    #[inline]
    pub(crate) fn shared(&self, mbox: MboxId, key: TypeId) -> Option<&SharedHandler<A>> {
        let want = slot(self.current(), HANDLE);
        self.spilled()?
            .entries
            .iter()
            .find(|e| e.is(mbox, key) && e.slot == want)?
            .shared
            .as_deref()
    }

    /// The current (innermost) state.
    #[inline(always)]
    pub(crate) fn current(&self) -> u16 {
        match self.machine() {
            None => DEFAULT_STATE,
            Some(m) => m.current,
        }
    }

    /// Whether a state switch left hooks or time limits to run.
    #[inline(always)]
    pub(crate) fn pending(&self) -> bool {
        match &self.table {
            Table::Spilled(Some(s)) => s.machine.as_ref().is_some_and(|m| m.has_pending),
            _ => false,
        }
    }

    /// Takes the handler for `key` arriving through `mbox` in the current state out of the
    /// table while it runs, so that the handler can change the table (subscribe, unsubscribe)
    /// through its context; `own` is the agent's direct mailbox. Returns the handler and its
    /// index for [`Subscriptions::put_back`]. `None` when the current state has no handler of
    /// its own (the caller then walks the ancestors, see `state::dispatch`).
    #[inline]
    pub(crate) fn take(
        &mut self,
        own: MboxId,
        mbox: MboxId,
        key: TypeId,
    ) -> Option<(usize, Handler<A>)> {
        match &mut self.table {
            Table::One(h) => {
                if mbox == own && h.key() == key && !h.is_stand_in() {
                    Some((0, h.take()))
                } else {
                    None
                }
            }
            Table::Spilled(None) => None,
            Table::Spilled(Some(s)) => {
                let current = s.machine.as_ref().map_or(DEFAULT_STATE, |m| m.current);
                let want = slot(current, HANDLE);
                let i = s
                    .entries
                    .iter()
                    .position(|e| e.is(mbox, key) && e.slot == want)?;
                let e = &mut s.entries[i];
                e.taken = true;
                Some((i, e.handler.take()))
            }
        }
    }

    /// Takes the handler of entry `i` (see [`Subscriptions::take`]); `None` if the entry
    /// transfers or suppresses rather than handles.
    #[inline]
    pub(crate) fn take_at(&mut self, i: usize) -> Option<(usize, Handler<A>)> {
        match &mut self.table {
            Table::One(h) if i == 0 && !h.is_stand_in() => Some((0, h.take())),
            Table::One(_) | Table::Spilled(None) => None,
            Table::Spilled(Some(s)) => {
                let e = &mut s.entries[i];
                if e.action() != HANDLE {
                    return None;
                }
                e.taken = true;
                Some((i, e.handler.take()))
            }
        }
    }

    /// The entry for (mailbox, type) in exactly `state`: its index and action; `own` is the
    /// agent's direct mailbox.
    pub(crate) fn find(
        &self,
        own: MboxId,
        mbox: MboxId,
        key: TypeId,
        state: u16,
    ) -> Option<(usize, Action)> {
        match &self.table {
            Table::One(h) => {
                (mbox == own && h.key() == key && state == DEFAULT_STATE).then_some((0, HANDLE))
            }
            Table::Spilled(None) => None,
            Table::Spilled(Some(s)) => s
                .entries
                .iter()
                .position(|e| e.is(mbox, key) && e.state() == state)
                .map(|i| (i, s.entries[i].action())),
        }
    }

    /// Whether any state has an entry for (mailbox, type); `own` is the agent's direct
    /// mailbox.
    pub(crate) fn has_any(&self, own: MboxId, mbox: MboxId, key: TypeId) -> bool {
        match &self.table {
            Table::One(h) => mbox == own && h.key() == key,
            Table::Spilled(None) => false,
            Table::Spilled(Some(s)) => s.entries.iter().any(|e| e.is(mbox, key)),
        }
    }

    /// Returns a handler taken by [`Subscriptions::take`] (`own` is the agent's direct
    /// mailbox); drops it if the handler unsubscribed itself meanwhile.
    #[inline]
    pub(crate) fn put_back(
        &mut self,
        own: MboxId,
        i: usize,
        mbox: MboxId,
        key: TypeId,
        handler: Handler<A>,
    ) {
        if let Some(h) = self.one(own, mbox, key) {
            if h.is_stand_in() {
                h.restore(handler);
            }
            return;
        }
        if let Some(s) = self.spilled_mut()
            && let Some(e) = s.entries.get_mut(i)
            && e.taken
            && e.is(mbox, key)
        {
            e.handler.restore(handler);
            e.taken = false;
            return;
        }
        self.put_back_moved(mbox, key, handler)
    }

    #[cold]
    fn put_back_moved(&mut self, mbox: MboxId, key: TypeId, handler: Handler<A>) {
        if let Some(s) = self.spilled_mut()
            && let Some(e) = s.entries.iter_mut().find(|e| e.taken && e.is(mbox, key))
        {
            e.handler.restore(handler);
            e.taken = false;
        }
    }

    /// Adds an entry; a second one for the same (mailbox, type, state) is an error. `own` is
    /// the agent's direct mailbox.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        own: MboxId,
        state: u16,
        action: Action,
        mbox: MboxId,
        key: TypeId,
        type_name: fn() -> &'static str,
        handler: Handler<A>,
        named: Option<Arc<IndirectMbox>>,
    ) -> Result<(), SubscribeError> {
        if self.find(own, mbox, key, state).is_some() {
            return Err(match self.machine() {
                Some(m) if state != DEFAULT_STATE => SubscribeError::AlreadySubscribedInState {
                    message_type: type_name(),
                    state: m.name(state).to_string(),
                },
                _ => SubscribeError::AlreadySubscribed {
                    message_type: type_name(),
                },
            });
        }
        if matches!(self.table, Table::Spilled(None))
            && mbox == own
            && state == DEFAULT_STATE
            && action == HANDLE
            && named.is_none()
            && handler.key() == key
        {
            self.table = Table::One(handler);
            return Ok(());
        }
        let entries = &mut self.spill(own).entries;
        entries.reserve_exact(1);
        entries.push(Entry {
            key,
            mbox,
            slot: slot(state, action),
            handler,
            named,
            taken: false,
            shared: None,
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
        let own = MboxId(cell.cast::<()>() as usize);
        let Some((i, _)) = self.find(own, mbox, key, state) else {
            return false;
        };
        let Some(s) = self.spilled_mut() else {
            // The inline handler (a running one is dropped when it returns).
            self.table = Table::Spilled(None);
            return true;
        };
        let e = s.entries.remove(i);
        s.entries.shrink_to_fit();
        if let Some(n) = &e.named
            && !self.has_any(own, mbox, key)
        {
            unregister(coop, n, key, cell);
        }
        true
    }

    /// Removes the handler for (mailbox, type) without unregistering it from its mailbox
    /// (it was never registered there); `own` is the agent's direct mailbox.
    pub(crate) fn forget(&mut self, own: MboxId, mbox: MboxId, key: TypeId) {
        if self.one(own, mbox, key).is_some() {
            self.table = Table::Spilled(None);
        } else if let Some(s) = self.spilled_mut() {
            s.entries.retain(|e| !e.is(mbox, key));
            s.entries.shrink_to_fit();
        }
    }

    /// The multi-consumer and unique-subscribers mailboxes subscribed to.
    pub(crate) fn named_mboxes(&self) -> impl Iterator<Item = &Arc<IndirectMbox>> {
        self.spilled()
            .into_iter()
            .flat_map(|s| s.entries.iter().filter_map(|e| e.named.as_ref()))
    }

    /// Drops every subscription, unregistering from multi-consumer mailboxes (those its
    /// cooperation `coop` has not dropped already).
    pub(crate) fn clear(&mut self, cell: *const DynCell, coop: *const CoopInner) {
        // Hooks, pending time limits and the dead-letter handler go with the subscriptions.
        let Table::Spilled(Some(s)) = std::mem::replace(&mut self.table, Table::Spilled(None))
        else {
            return;
        };
        let Spilled { entries, machine } = *s;
        drop(machine);
        for e in entries {
            if let Some(n) = &e.named {
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
