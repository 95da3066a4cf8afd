//! Multi-producer, multi-consumer mailboxes: named (the same name gives the same mailbox)
//! and anonymous. One send reaches every agent subscribed to the message's type, with one
//! shared allocation (none for payloads of one word without drop glue, copied per receiver).
//!
//! Subscribers are kept per message type, so a send looks up its type once and then walks
//! exactly the agents that want it. Subscribing and unsubscribing (rare) take the write lock;
//! sends take the read lock, so concurrent senders do not contend with each other.

use crate::cell::DynCell;
use crate::dead_letter::DeliveryFailure;
use crate::env::EnvShared;
use crate::mbox::{MboxId, deliver_batched};
use crate::message::{Envelope, is_inline};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};

/// One subscriber of one message type.
struct Subscriber {
    cell: Arc<DynCell>,
}

/// A multi-consumer mailbox.
pub(crate) struct NamedMbox {
    name: Option<Arc<str>>,
    env: Weak<EnvShared>,
    subscribers: RwLock<HashMap<TypeId, Vec<Subscriber>>>,
}

impl NamedMbox {
    pub(crate) fn new(name: Option<Arc<str>>, env: Weak<EnvShared>) -> Self {
        Self {
            name,
            env,
            subscribers: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The mailbox id: its address.
    pub(crate) fn id(&self) -> MboxId {
        MboxId(self as *const Self as usize)
    }

    /// Adds `cell` as a subscriber of `key`.
    pub(crate) fn subscribe(&self, key: TypeId, cell: Arc<DynCell>) {
        let mut subs = self.subscribers.write().unwrap_or_else(|e| e.into_inner());
        subs.entry(key).or_default().push(Subscriber { cell });
    }

    /// Removes `cell` from the subscribers of `key`.
    pub(crate) fn unsubscribe(&self, key: TypeId, cell: *const DynCell) {
        let mut subs = self.subscribers.write().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = subs.get_mut(&key) {
            list.retain(|s| !std::ptr::addr_eq(Arc::as_ptr(&s.cell), cell));
            if list.is_empty() {
                subs.remove(&key);
            }
        }
    }

    /// Delivers `msg` to every subscriber of `M`.
    #[inline]
    pub(crate) fn publish<M: Send + Sync + 'static>(&self, msg: M) {
        let subs = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        let Some(list) = subs.get(&TypeId::of::<M>()).filter(|l| !l.is_empty()) else {
            drop(subs);
            return self.no_subscriber::<M>();
        };
        let id = self.id();
        let mut pending = None;
        if is_inline::<M>() && !std::mem::needs_drop::<M>() {
            // One word without drop glue: every receiver gets its own copy of the bits.
            let msg = std::mem::ManuallyDrop::new(msg);
            for s in list {
                // SAFETY: `M` has no drop glue, so bitwise copies are never dropped twice;
                // receivers only read them by reference (immutable messages).
                let copy = unsafe { std::ptr::read(&*msg) };
                deliver_batched(&s.cell, id, Envelope::immutable(copy), &mut pending);
            }
        } else {
            let shared = Arc::new(msg);
            for s in list {
                deliver_batched(&s.cell, id, Envelope::shared(shared.clone()), &mut pending);
            }
        }
        if let Some(q) = pending {
            q.announce();
        }
    }

    #[cold]
    fn no_subscriber<M>(&self) {
        if let Some(env) = self.env.upgrade() {
            env.dead_letter(std::any::type_name::<M>(), DeliveryFailure::NoSubscriber);
        }
    }
}
