//! Multi-producer, multi-consumer mailboxes: named (the same name gives the same mailbox)
//! and anonymous. One send reaches every agent subscribed to the message's type, with one
//! shared allocation (none for payloads of one word without drop glue, copied per receiver).
//!
//! Subscribers are kept per message type, so a send looks up its type once and then walks
//! exactly the agents that want it. Subscribing and unsubscribing (rare) take the write lock;
//! sends take the read lock, so concurrent senders do not contend with each other.
//!
//! A queue with a single subscriber of the type gets the message as a direct send would
//! deliver it (one message demand, no broadcast targets to share): a named mailbox with one
//! subscriber costs about what a direct mailbox does.

use crate::cell::DynCell;
use crate::dead_letter::DeliveryFailure;
use crate::demand::{BroadcastTargets, Demand};
use crate::env::EnvShared;
use crate::mbox::MboxId;
use crate::message::{Envelope, is_inline};
use crate::queue::EventQueue;
use std::any::TypeId;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, RwLock, Weak};

/// Hashes a `TypeId`, which is already a hash: keeps its bits rather than hashing them again
/// (the default SipHash costs more than the rest of a one-subscriber send).
#[derive(Default)]
struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_ne_bytes(word);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(5) ^ n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type ByType = HashMap<TypeId, TypeSubscribers, BuildHasherDefault<TypeIdHasher>>;

/// The subscribers of one message type, grouped by the queue they are bound to. A change
/// (rare) edits one group in place, copying it only if a send in flight still holds it.
#[derive(Default)]
struct TypeSubscribers {
    groups: Vec<(Arc<EventQueue>, Arc<BroadcastTargets>)>,
}

impl TypeSubscribers {
    fn add(&mut self, mbox: MboxId, cell: Arc<DynCell>) {
        // SAFETY: subscribing happens in `define` or later, after the agent was bound.
        let q = unsafe { cell.header.queue_arc() }.clone();
        match self.groups.iter_mut().find(|(g, _)| Arc::ptr_eq(g, &q)) {
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

    fn remove(&mut self, cell: *const DynCell) {
        for (_, t) in self.groups.iter_mut() {
            if t.cells
                .iter()
                .any(|c| std::ptr::addr_eq(Arc::as_ptr(c), cell))
            {
                Arc::make_mut(t)
                    .cells
                    .retain(|c| !std::ptr::addr_eq(Arc::as_ptr(c), cell));
            }
        }
        self.groups.retain(|(_, t)| !t.cells.is_empty());
    }
}

/// A multi-consumer mailbox.
pub(crate) struct NamedMbox {
    name: Option<Arc<str>>,
    env: Weak<EnvShared>,
    subscribers: RwLock<ByType>,
}

impl NamedMbox {
    pub(crate) fn new(name: Option<Arc<str>>, env: Weak<EnvShared>) -> Self {
        Self {
            name,
            env,
            subscribers: RwLock::new(ByType::default()),
        }
    }

    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Adds `cell` as a subscriber of `key`; `mbox` is this mailbox's id (the address of the
    /// [`IndirectMbox`](crate::mbox::IndirectMbox) that holds it).
    pub(crate) fn subscribe(&self, mbox: MboxId, key: TypeId, cell: Arc<DynCell>) {
        let mut subs = self.subscribers.write().unwrap_or_else(|e| e.into_inner());
        subs.entry(key).or_default().add(mbox, cell);
    }

    /// Removes `cell` from the subscribers of `key`.
    pub(crate) fn unsubscribe(&self, key: TypeId, cell: *const DynCell) {
        let mut subs = self.subscribers.write().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = subs.get_mut(&key) {
            t.remove(cell);
            if t.groups.is_empty() {
                subs.remove(&key);
            }
        }
    }

    /// Delivers `msg` to every subscriber of `M`: one demand per receiving queue, the
    /// payload shared (or, for one word without drop glue, copied).
    #[inline]
    pub(crate) fn publish<M: Send + Sync + 'static>(&self, msg: M) {
        let subs = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        let groups = match subs.get(&TypeId::of::<M>()) {
            Some(t) => &t.groups[..],
            None => &[],
        };
        if groups.is_empty() {
            drop(subs);
            self.no_subscriber(std::any::type_name::<M>());
            return crate::request::drop_with_reason(msg, DeliveryFailure::NoSubscriber);
        }
        let envelope = if is_inline::<M>() && !std::mem::needs_drop::<M>() {
            Envelope::immutable(msg)
        } else {
            Envelope::shared(Arc::new(msg))
        };
        push_to_groups(groups, envelope)
    }

    /// Delivers an already built immutable envelope (a forwarded message) like `publish`.
    pub(crate) fn publish_envelope(&self, msg: Envelope) {
        let subs = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        let groups = match subs.get(&msg.key()) {
            Some(t) => &t.groups[..],
            None => &[],
        };
        if groups.is_empty() {
            drop(subs);
            self.no_subscriber(msg.type_name());
            return crate::request::drop_with_reason(msg, DeliveryFailure::NoSubscriber);
        }
        push_to_groups(groups, msg.into_shareable())
    }

    #[cold]
    fn no_subscriber(&self, message_type: &'static str) {
        if let Some(env) = self.env.upgrade() {
            env.dead_letter(message_type, DeliveryFailure::NoSubscriber);
        }
    }
}

/// One demand per receiving queue, the envelope duplicated for all but the last.
#[inline]
fn push_to_groups(groups: &[(Arc<EventQueue>, Arc<BroadcastTargets>)], envelope: Envelope) {
    {
        let mut envelope = Some(envelope);
        let n = groups.len();
        for (i, (queue, targets)) in groups.iter().enumerate() {
            let msg = if i + 1 == n {
                envelope.take()
            } else {
                envelope.as_ref().and_then(Envelope::duplicate)
            };
            let Some(msg) = msg else { return };
            if let [cell] = &targets.cells[..] {
                crate::mbox::deliver_to(cell, targets.mbox, msg);
                continue;
            }
            let d = Demand::broadcast(targets.clone(), msg);
            if queue.is_running_here() {
                // SAFETY: checked just above; a broadcast demand holds no borrowed reference.
                unsafe { queue.push_local(d) }
            } else {
                queue.push_remote(d)
            }
        }
    }
}
