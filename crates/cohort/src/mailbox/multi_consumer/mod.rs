//! Multi-producer mailboxes that are not an agent's own: multi-consumer ones, named (the
//! same name gives the same mailbox) and anonymous, and unique-subscribers ones (one
//! subscriber per message type, so they can carry mutable messages). One send reaches every
//! agent subscribed to the message's type, with one shared allocation (none for payloads of
//! one word without drop glue, copied per receiver).
//!
//! Subscribers are kept per message type, so a send looks up its type once and then walks
//! exactly the agents that want it. The table is an immutable snapshot behind a lock:
//! subscribing and unsubscribing (rare) take the write lock and edit it (in place, or on a
//! copy if a sender still holds it); a send from a worker thread uses the snapshot it kept
//! from its previous send to the same mailbox when it is still current ([`cache`]), and
//! takes the read lock only when it is not (and sends from plain threads always do).
//!
//! Plain subscribers are grouped by queue and get one broadcast demand per queue. A
//! subscriber with a delivery filter or message limits (and every subscriber of a
//! unique-subscribers mailbox) is served one by one: its filter runs on the sender's thread,
//! and its message is queued (and counted by its limits) like a direct send.
//!
//! A queue with a single plain subscriber of the type gets the message as a direct send
//! would deliver it (one message demand, no broadcast targets to share): a named mailbox
//! with one subscriber costs about what a direct mailbox does.

use crate::agent::cell::DynCell;
use crate::agent::demand::{BroadcastTargets, Demand};
use crate::error::SubscribeError;
use crate::mailbox::dead_letter::{DeadLetter, DeliveryFailure};
use crate::mailbox::{MboxId, deliver};
use crate::message::Envelope;
use crate::queue::QueueArc;
use crate::runtime::coop::finish_epoch;
use crate::runtime::env::EnvShared;
use crate::trace::{self, TraceStep};
use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockWriteGuard, Weak};

mod cache;
mod last_append;
mod log;
mod queue_group;
// Its one caller (`queue/wakeup.rs`) is compiled out under loom.
#[cfg(not(cohort_loom))]
pub(crate) use cache::release as release_thread_tables;
pub(crate) use log::Marker;
pub(crate) use queue_group::QueueGroup;

use log::BroadcastLog;

/// The subscribers of a mailbox by message type: a vector sorted by type, searched by
/// bisection. A mailbox carries a handful of types, where this beats hashing (a hash map
/// lookup cost a named send more than the rest of a one-subscriber delivery).
#[derive(Default, Clone)]
pub(crate) struct ByType {
    types: Vec<(TypeId, TypeSubscribers)>,
    /// The mailbox's one type and its one plain subscriber, when that is all it has (a
    /// named mailbox used as a well-known address): kept here, next to the table's
    /// reference count, so such a send reads no further.
    only: Option<(TypeId, Arc<DynCell>)>,
}

impl ByType {
    #[inline]
    fn get(&self, key: &TypeId) -> Option<&TypeSubscribers> {
        match &self.types[..] {
            // The common case: a mailbox used for one type.
            [(k, t)] => (k == key).then_some(t),
            all => all
                .binary_search_by(|(k, _)| k.cmp(key))
                .ok()
                .map(|i| &all[i].1),
        }
    }

    fn get_mut(&mut self, key: &TypeId) -> Option<&mut TypeSubscribers> {
        let i = self.types.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
        Some(&mut self.types[i].1)
    }

    fn entry_or_default(&mut self, key: TypeId) -> &mut TypeSubscribers {
        let i = match self.types.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => i,
            Err(i) => {
                self.types.insert(i, (key, TypeSubscribers::default()));
                i
            }
        };
        &mut self.types[i].1
    }

    fn remove(&mut self, key: &TypeId) {
        if let Ok(i) = self.types.binary_search_by(|(k, _)| k.cmp(key)) {
            self.types.remove(i);
        }
    }

    /// Recomputes what is derived from the subscribers after a change.
    fn refresh(&mut self) {
        for (_, t) in self.types.iter_mut() {
            t.refresh_sole();
        }
        self.only = match &self.types[..] {
            [(k, t)] => t.sole.as_ref().map(|c| (*k, c.clone())),
            _ => None,
        };
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut TypeSubscribers> {
        self.types.iter_mut().map(|(_, t)| t)
    }
}

/// The subscribers of one message type, grouped by the queue they are bound to. A change
/// (rare) edits one group in place, copying it only if a send in flight still holds it.
#[derive(Default, Clone)]
struct TypeSubscribers {
    groups: Vec<(QueueArc, Arc<BroadcastTargets>)>,
    /// Subscribers served one by one (a filter, message limits, or a unique-subscribers
    /// mailbox). Shared so that a send delivers to them after releasing the lock (a limit
    /// may redirect back into this mailbox); copied on change if a send still holds it.
    singles: Arc<Vec<Single>>,
    /// The one subscriber, when there is exactly one and it is plain (the common case of a
    /// named mailbox used as a well-known address): the send delivers to it directly.
    sole: Option<Arc<DynCell>>,
    /// The type's name (for dead letters counted without a message at hand).
    type_name: &'static str,
    /// The broadcast log over `groups`, when they are at least
    /// [`LOG_MIN_QUEUES`](crate::defaults::LOG_MIN_QUEUES): built by the first send after a
    /// change (a change makes a new one), so that subscribing many agents costs no log each.
    log: OnceLock<Arc<BroadcastLog<QueueGroup>>>,
}

/// A delivery filter: whether a message goes to one subscriber.
pub(crate) type Filter = Arc<dyn Fn(&Envelope) -> bool + Send + Sync>;

/// A subscriber served one by one.
#[derive(Clone)]
struct Single {
    cell: Arc<DynCell>,
    filter: Option<Filter>,
}

/// Whether the current thread runs one of `groups`' queues.
#[inline]
fn runs_one_of(groups: &[(QueueArc, Arc<BroadcastTargets>)]) -> bool {
    let running = crate::queue::running_queue();
    !running.is_null()
        && groups
            .iter()
            .any(|(q, _)| std::ptr::addr_eq(QueueArc::as_ptr(q), running))
}

fn is_cell(c: &Arc<DynCell>, cell: *const DynCell) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(c), cell)
}

impl TypeSubscribers {
    fn add(&mut self, mbox: MboxId, cell: Arc<DynCell>) {
        // SAFETY: subscribing happens in `define` or later, after the agent was bound.
        let q = unsafe { cell.header.queue_arc() }.clone();
        match self
            .groups
            .iter_mut()
            .find(|(g, _)| QueueArc::ptr_eq(g, &q))
        {
            Some((_, t)) => Arc::make_mut(t).cells.push(cell),
            None => self.groups.push((
                q,
                Arc::new(BroadcastTargets {
                    mbox,
                    cells: vec![cell],
                }),
            )),
        }
    }

    /// Removes `cell`; returns its `Arc` if it was there.
    fn remove(&mut self, cell: *const DynCell) -> Option<Arc<DynCell>> {
        let mut found = None;
        for (_, t) in self.groups.iter_mut() {
            if let Some(c) = t.cells.iter().find(|c| is_cell(c, cell)) {
                found = Some(c.clone());
                Arc::make_mut(t).cells.retain(|c| !is_cell(c, cell));
            }
        }
        self.groups.retain(|(_, t)| !t.cells.is_empty());
        if let Some(i) = self.singles.iter().position(|s| is_cell(&s.cell, cell)) {
            found = Some(Arc::make_mut(&mut self.singles).remove(i).cell);
        }
        found
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.singles.is_empty()
    }

    /// The broadcast log over the groups, if they are many enough.
    #[inline]
    fn log(&self) -> Option<&Arc<BroadcastLog<QueueGroup>>> {
        if self.groups.len() < crate::defaults::LOG_MIN_QUEUES {
            return None;
        }
        Some(self.log.get_or_init(|| {
            Arc::new(BroadcastLog::new(self.groups.iter().map(|(q, t)| {
                QueueGroup {
                    queue: q.clone(),
                    targets: t.clone(),
                    type_name: self.type_name,
                }
            })))
        }))
    }

    /// Recomputes [`TypeSubscribers::sole`] (and forgets the log) after a change.
    fn refresh_sole(&mut self) {
        self.log = OnceLock::new();
        self.sole = match &self.groups[..] {
            [(_, t)] if self.singles.is_empty() && t.cells.len() == 1 => Some(t.cells[0].clone()),
            _ => None,
        };
    }

    /// How many agents receive a message of this type (before filters).
    fn receivers(&self) -> usize {
        let grouped: usize = self.groups.iter().map(|(_, t)| t.cells.len()).sum();
        grouped + self.singles.len()
    }
}

/// A multi-consumer mailbox.
pub(crate) struct NamedMbox {
    name: Option<Arc<str>>,
    env: Weak<EnvShared>,
    /// A unique-subscribers mailbox: one subscriber per message type.
    single_consumer: bool,
    /// The current table. Sends clone it (or use a clone they kept); changes edit it.
    subscribers: RwLock<Arc<ByType>>,
    /// The current table's stamp (see [`cache`]): changes with every edit, under the lock.
    stamp: AtomicU64,
    /// This mailbox's slot in a worker thread's cache.
    slot: u8,
}

/// What a send does after it let go of the table: what must not run while it is held (a
/// dead-letter hook or a limit's redirect may send to this mailbox again).
enum Rest {
    Done,
    NoSubscriber(Envelope),
    NotShareable(Envelope),
    OneByOne(Arc<Vec<Single>>, Envelope),
}

impl NamedMbox {
    pub(crate) fn new(name: Option<Arc<str>>, env: Weak<EnvShared>) -> Self {
        Self {
            name,
            env,
            single_consumer: false,
            subscribers: RwLock::new(Arc::default()),
            stamp: AtomicU64::new(cache::next_stamp()),
            slot: cache::next_slot(),
        }
    }

    /// A unique-subscribers mailbox.
    pub(crate) fn new_single_consumer(name: Option<Arc<str>>, env: Weak<EnvShared>) -> Self {
        Self {
            single_consumer: true,
            ..Self::new(name, env)
        }
    }

    /// Whether it allows one subscriber per message type (and so mutable messages).
    pub(crate) fn is_single_consumer(&self) -> bool {
        self.single_consumer
    }

    /// The environment, if it is still alive.
    pub(crate) fn env(&self) -> Option<Arc<EnvShared>> {
        self.env.upgrade()
    }

    /// The name for errors: the name, or `<anonymous>`.
    pub(crate) fn display_name(&self) -> String {
        self.name().unwrap_or("<anonymous>").to_string()
    }

    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The mailbox id: its address.
    pub(crate) fn id(&self) -> MboxId {
        MboxId(self as *const Self as usize)
    }

    /// The table, for an edit that [`Edit`]'s drop publishes under a new stamp.
    fn edit(&self) -> Edit<'_> {
        Edit {
            guard: self.subscribers.write().unwrap_or_else(|e| e.into_inner()),
            stamp: &self.stamp,
        }
    }

    /// Adds `cell` as a subscriber of `key`; on a unique-subscribers mailbox, a second
    /// subscriber of one type is an error.
    pub(crate) fn subscribe(
        &self,
        key: TypeId,
        message_type: &'static str,
        cell: Arc<DynCell>,
    ) -> Result<(), SubscribeError> {
        let mut edit = self.edit();
        let subs = edit.table();
        let t = subs.entry_or_default(key);
        t.type_name = message_type;
        if self.single_consumer {
            if !t.is_empty() {
                return Err(SubscribeError::UniqueSubscriberTaken {
                    message_type,
                    mailbox: self.display_name(),
                });
            }
            Arc::make_mut(&mut t.singles).push(Single { cell, filter: None });
        } else if cell.limits().is_some() {
            Arc::make_mut(&mut t.singles).push(Single { cell, filter: None });
        } else {
            t.add(self.id(), cell);
        }
        Ok(())
    }

    /// Removes `cell` from the subscribers of `key`.
    pub(crate) fn unsubscribe(&self, key: TypeId, cell: *const DynCell) {
        let mut edit = self.edit();
        let subs = edit.table();
        if let Some(t) = subs.get_mut(&key) {
            t.remove(cell);
            if t.is_empty() {
                subs.remove(&key);
            }
        }
    }

    /// Removes each `(key, cell)` pair's subscription, in one edit (the agents of a
    /// cooperation whose deregistration began: see `runtime/coop/named_subs.rs`).
    pub(crate) fn unsubscribe_all(&self, pairs: impl Iterator<Item = (TypeId, *const DynCell)>) {
        let mut edit = self.edit();
        let subs = edit.table();
        for (key, cell) in pairs {
            if let Some(t) = subs.get_mut(&key) {
                t.remove(cell);
                if t.is_empty() {
                    subs.remove(&key);
                }
            }
        }
    }

    /// Sets (or with `None` removes) `cell`'s delivery filter for `key`; false if `cell` is
    /// not subscribed to `key` here.
    pub(crate) fn set_filter(&self, key: TypeId, cell: *const DynCell, f: Option<Filter>) -> bool {
        let mut edit = self.edit();
        let subs = edit.table();
        let Some(t) = subs.get_mut(&key) else {
            return false;
        };
        if let Some(i) = t.singles.iter().position(|s| is_cell(&s.cell, cell)) {
            Arc::make_mut(&mut t.singles)[i].filter = f;
            return true;
        }
        match t.remove(cell) {
            Some(cell) => {
                Arc::make_mut(&mut t.singles).push(Single { cell, filter: f });
                true
            }
            None => false,
        }
    }

    /// Serves `cell` one by one from now on (it declared message limits after subscribing).
    pub(crate) fn serve_one_by_one(&self, cell: *const DynCell) {
        let mut edit = self.edit();
        let subs = edit.table();
        for t in subs.values_mut() {
            if t.groups
                .iter()
                .any(|(_, g)| g.cells.iter().any(|c| is_cell(c, cell)))
                && let Some(cell) = t.remove(cell)
            {
                Arc::make_mut(&mut t.singles).push(Single { cell, filter: None });
            }
        }
    }

    /// Delivers `msg` to every subscriber of `M`: one demand per receiving queue, the
    /// payload shared (or, for one word without drop glue, copied).
    #[inline]
    pub(crate) fn publish<M: Send + Sync + 'static>(&self, msg: M) {
        let envelope = if self.single_consumer {
            Envelope::immutable(msg)
        } else {
            Envelope::for_many(msg)
        };
        self.route(envelope, 0)
    }

    /// Whether any agent is subscribed to messages keyed `key`.
    pub(crate) fn has_subscribers(&self, key: &TypeId) -> bool {
        let subs = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        subs.get(key).is_some_and(|t| !t.is_empty())
    }

    /// Delivers an envelope to every subscriber of its type; `depth` counts the redirects
    /// by message limits so far. An envelope built for one receiver (a forwarded,
    /// redirected or transformed message) is moved into a shared one first if several
    /// subscribers want it.
    #[inline]
    pub(crate) fn route(&self, msg: Envelope, depth: u8) {
        let stamp = self.stamp.load(Ordering::Acquire);
        match cache::with_table(self.slot, stamp, msg, |t, msg| self.route_through(t, msg)) {
            Ok(rest) => self.finish(rest, depth),
            Err(msg) => self.route_locked(msg, depth),
        }
    }

    /// As [`NamedMbox::route`] through the lock: a worker thread keeps a clone of the
    /// table for its next send, a plain thread reads it under the lock.
    #[inline(never)]
    fn route_locked(&self, msg: Envelope, depth: u8) {
        let subs = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        let rest = if crate::queue::runs_a_queue() {
            let (stamp, table) = (self.stamp.load(Ordering::Relaxed), Arc::clone(&subs));
            drop(subs);
            let rest = self.route_through(&table, msg);
            cache::put(self.slot, stamp, table);
            rest
        } else {
            let rest = self.route_through(&subs, msg);
            drop(subs);
            rest
        };
        self.finish(rest, depth)
    }

    /// Delivers to the subscribers grouped by queue; returns what must wait until the table
    /// is let go.
    #[inline]
    fn route_through(&self, subs: &ByType, msg: Envelope) -> Rest {
        if let Some((key, cell)) = &subs.only
            && *key == msg.key()
        {
            deliver(cell, self.id(), msg, 0);
            return Rest::Done;
        }
        let Some(t) = subs.get(&msg.key()).filter(|t| !t.is_empty()) else {
            return Rest::NoSubscriber(msg);
        };
        if let Some(cell) = &t.sole {
            deliver(cell, self.id(), msg, 0);
            return Rest::Done;
        }
        let mut msg = msg;
        if !msg.can_duplicate() && t.receivers() > 1 {
            if msg.is_mutable() {
                return Rest::NotShareable(msg);
            }
            msg = msg.into_shareable();
        }
        if t.singles.is_empty() {
            self.broadcast(t, msg);
            return Rest::Done;
        }
        if !t.groups.is_empty() {
            match msg.duplicate() {
                Some(copy) => self.broadcast(t, copy),
                None => return Rest::NotShareable(msg),
            }
        }
        Rest::OneByOne(t.singles.clone(), msg)
    }

    #[inline]
    fn finish(&self, rest: Rest, depth: u8) {
        match rest {
            Rest::Done => {}
            Rest::NoSubscriber(msg) => {
                self.no_subscriber(&msg);
                crate::mailbox::request::drop_with_reason(msg, DeliveryFailure::NoSubscriber)
            }
            Rest::NotShareable(msg) => self.not_shareable(msg),
            Rest::OneByOne(singles, msg) => self.deliver_one_by_one(&singles, msg, depth),
        }
    }

    /// Delivers to the plain subscribers of a type: through its broadcast log when it has
    /// one and the sender runs none of its queues (a queue's own sends go to its local
    /// half), else one demand per queue.
    #[inline]
    fn broadcast(&self, t: &TypeSubscribers, msg: Envelope) {
        // The log only when it would be used: built on first use, after the cheap checks.
        if t.groups.len() >= crate::defaults::LOG_MIN_QUEUES
            && !trace::on()
            && !runs_one_of(&t.groups)
            && let Some(log) = t.log()
        {
            let id = Arc::as_ptr(log) as usize;
            log.append((msg, finish_epoch()), !last_append::is(id));
            last_append::set(id);
            return;
        }
        self.broadcast_per_queue(&t.groups, msg)
    }

    #[inline]
    fn broadcast_per_queue(&self, groups: &[(QueueArc, Arc<BroadcastTargets>)], msg: Envelope) {
        let mut envelope = Some(msg);
        let n = groups.len();
        for (i, (queue, targets)) in groups.iter().enumerate() {
            let msg = if i + 1 == n {
                envelope.take()
            } else {
                envelope.as_ref().and_then(Envelope::duplicate)
            };
            let Some(msg) = msg else { return };
            if let [cell] = &targets.cells[..] {
                deliver(cell, targets.mbox, msg, 0);
                continue;
            }
            if trace::on() {
                self.trace_queued(targets, &msg);
            }
            let d = Demand::broadcast(targets.clone(), msg, finish_epoch());
            // A broadcast demand holds no borrowed reference: either half will do.
            queue.push(d)
        }
    }

    /// Delivers to the subscribers served one by one, through their filters (outside the
    /// lock: a limit's redirect may come back to this mailbox).
    fn deliver_one_by_one(&self, singles: &[Single], msg: Envelope, depth: u8) {
        let n = singles.len();
        let mut msg = Some(msg);
        for (i, s) in singles.iter().enumerate() {
            let Some(m) = msg.as_ref() else { return };
            if let Some(f) = &s.filter {
                match catch_unwind(AssertUnwindSafe(|| f(m))) {
                    Ok(true) => {}
                    Ok(false) => {
                        if trace::on() {
                            self.trace_filtered(&s.cell, m);
                        }
                        continue;
                    }
                    Err(_) => {
                        self.filter_panicked(&s.cell, m);
                        continue;
                    }
                }
            }
            let m = if i + 1 == n {
                msg.take()
            } else {
                m.duplicate()
            };
            let Some(m) = m else { return };
            deliver(&s.cell, self.id(), m, depth);
        }
    }

    #[cold]
    fn trace_queued(&self, targets: &BroadcastTargets, msg: &Envelope) {
        if let Some(env) = self.env.upgrade() {
            for c in &targets.cells {
                env.trace_step(TraceStep::Queued, msg, Some(self.id()), Some(c.mbox_id()));
            }
        }
    }

    #[cold]
    fn trace_filtered(&self, cell: &DynCell, msg: &Envelope) {
        if let Some(env) = self.env.upgrade() {
            env.trace_step(
                TraceStep::FilteredOut,
                msg,
                Some(self.id()),
                Some(cell.mbox_id()),
            );
        }
    }

    #[cold]
    fn filter_panicked(&self, cell: &DynCell, msg: &Envelope) {
        tracing::error!(
            message_type = msg.type_name(),
            mailbox = %self.display_name(),
            "a delivery filter panicked: the message is not delivered to that subscriber"
        );
        if let Some(env) = self.env.upgrade() {
            env.count_panic();
            let (mbox, agent) = (Some(self.id()), Some(cell.mbox_id()));
            env.dead_letter_with(&DeadLetter::of(
                msg,
                DeliveryFailure::FilterPanicked,
                mbox,
                agent,
            ));
        }
    }

    #[cold]
    fn not_shareable(&self, msg: Envelope) {
        if let Some(env) = self.env.upgrade() {
            let why = DeliveryFailure::MutableToMultiConsumer;
            env.dead_letter_with(&DeadLetter::of(&msg, why, Some(self.id()), None));
        }
    }

    #[cold]
    fn no_subscriber(&self, msg: &Envelope) {
        if let Some(env) = self.env.upgrade() {
            let why = DeliveryFailure::NoSubscriber;
            env.dead_letter_with(&DeadLetter::of(msg, why, Some(self.id()), None));
        }
    }
}

/// The write lock on a mailbox's table; dropping it publishes the edit under a new stamp.
struct Edit<'a> {
    guard: RwLockWriteGuard<'a, Arc<ByType>>,
    stamp: &'a AtomicU64,
}

impl Edit<'_> {
    /// The table to edit: in place if no sender holds it, else a copy.
    fn table(&mut self) -> &mut ByType {
        Arc::make_mut(&mut self.guard)
    }
}

impl Drop for Edit<'_> {
    fn drop(&mut self) {
        // Not unique: nothing was edited (the table is still shared with senders).
        if let Some(table) = Arc::get_mut(&mut self.guard) {
            table.refresh();
        }
        // Under the write lock still: a reader that takes the read lock next sees this stamp
        // with this table.
        self.stamp.store(cache::next_stamp(), Ordering::Release);
    }
}
