//! [`NamedSubs`]: the subscriptions a cooperation's agents hold on multi-consumer mailboxes,
//! kept where any thread can reach them, so that deregistration drops them all at once
//! (step 3 of "Lifecycle" in docs/runtime-semantics.md) instead of leaving each agent in
//! the mailboxes' subscriber lists until its `finish` runs.
//!
//! An agent's subscription table lives in its body, which only the thread running its
//! queue touches; deregistration may start on any thread. So each registration with a
//! multi-consumer mailbox is also recorded here, under a lock, and the mailbox is told under
//! that same lock: once [`CoopInner::drop_named_subscriptions`] has closed the record and
//! taken it, no agent of the cooperation is, or can again become, a subscriber of any
//! multi-consumer mailbox (a later subscribe keeps its handler in the body and registers
//! nowhere). Lock order: this record, then a mailbox's table.

use super::registered::CoopInner;
use crate::agent::cell::DynCell;
use crate::error::SubscribeError;
use crate::mailbox::IndirectMbox;
use std::any::TypeId;
use std::sync::{Arc, Mutex, MutexGuard};
use thin_vec::ThinVec;

/// The record: one entry per (mailbox, type, agent) registered with a multi-consumer
/// mailbox; `None` once deregistration has closed it. Sixteen bytes with its lock (a thin
/// vector, `None` in its null niche): every cooperation has one, most never use it.
pub(crate) struct NamedSubs {
    entries: Mutex<Option<ThinVec<Entry>>>,
}

impl Default for NamedSubs {
    fn default() -> Self {
        Self {
            entries: Mutex::new(Some(ThinVec::new())),
        }
    }
}

struct Entry {
    mbox: Arc<IndirectMbox>,
    key: TypeId,
    /// The agent (the cooperation holds its cell).
    cell: CellPtr,
}

/// An agent's cell, by address.
#[derive(Clone, Copy)]
struct CellPtr(*const DynCell);

// SAFETY: only compared and handed to a mailbox's `unsubscribe`, which compares it too; the
// cell itself is `Sync`.
unsafe impl Send for CellPtr {}

impl Entry {
    fn is(&self, mbox: &IndirectMbox, key: TypeId, cell: *const DynCell) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.mbox), mbox)
            && self.key == key
            && std::ptr::addr_eq(self.cell.0, cell)
    }
}

impl NamedSubs {
    fn lock(&self) -> MutexGuard<'_, Option<ThinVec<Entry>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CoopInner {
    /// Registers `cell` (an agent of this cooperation) with `mbox` for messages keyed `key`,
    /// unless the cooperation's deregistration already dropped its multi-consumer
    /// subscriptions: then nothing is registered (the agent is finishing; no 1:N send will
    /// reach it). Errors are the mailbox's (a unique-subscribers mailbox already taken).
    pub(crate) fn subscribe_named(
        &self,
        mbox: &Arc<IndirectMbox>,
        key: TypeId,
        message_type: &'static str,
        cell: Arc<DynCell>,
    ) -> Result<(), SubscribeError> {
        let mut record = self.named_subs.lock();
        let Some(entries) = record.as_mut() else {
            return Ok(());
        };
        let ptr = CellPtr(Arc::as_ptr(&cell));
        // Under the record's lock: deregistration, which closes the record under it, either
        // finds this entry or comes before this registration and makes it none.
        mbox.subscribe(key, message_type, cell)?;
        if entries.is_empty() {
            // One allocation for the usual case: each agent subscribing once.
            entries.reserve(self.agents.len());
        }
        entries.push(Entry {
            mbox: mbox.clone(),
            key,
            cell: ptr,
        });
        Ok(())
    }

    /// Whether deregistration has dropped the agents' multi-consumer subscriptions.
    pub(crate) fn named_subscriptions_dropped(&self) -> bool {
        self.named_subs.lock().is_none()
    }

    /// Removes `cell`'s registration with `mbox` for `key`, if it still has one (an
    /// unsubscription, or the agent's subscriptions dropped after `finish`).
    pub(crate) fn unsubscribe_named(&self, mbox: &IndirectMbox, key: TypeId, cell: *const DynCell) {
        let found = {
            let mut record = self.named_subs.lock();
            let Some(entries) = record.as_mut() else {
                return;
            };
            let i = entries.iter().position(|e| e.is(mbox, key, cell));
            i.map(|i| entries.swap_remove(i))
        };
        // Outside the lock: only this agent's own thread registers it again, after this.
        if let Some(e) = found {
            e.mbox.unsubscribe(key, cell);
        }
    }

    /// Step 3 of deregistration: removes every agent of the cooperation from every
    /// multi-consumer mailbox it subscribed to, and closes the record, so none subscribes
    /// again. One edit per mailbox, whatever the number of its agents subscribed there.
    pub(super) fn drop_named_subscriptions(&self) {
        let Some(mut entries) = self.named_subs.lock().take() else {
            return;
        };
        if entries.is_empty() {
            return;
        }
        entries.sort_unstable_by_key(|e| Arc::as_ptr(&e.mbox) as *const () as usize);
        for same_mbox in entries.chunk_by(|a, b| Arc::ptr_eq(&a.mbox, &b.mbox)) {
            let pairs = same_mbox.iter().map(|e| (e.key, e.cell.0));
            same_mbox[0].mbox.unsubscribe_all(pairs);
        }
    }
}
