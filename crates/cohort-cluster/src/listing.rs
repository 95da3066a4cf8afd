//! What the registry answers: [`Listing`], the mailboxes registered under one key.

use cohort::Mbox;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// One mailbox registered under a key.
#[derive(Debug, Clone)]
pub struct ListingEntry {
    /// The member that registered it.
    pub node: String,
    /// That member's incarnation.
    pub incarnation: u64,
    /// The mailbox: the registered one itself on its own node, a proxy (sending over
    /// cohort-remote, dialling the member when first used) elsewhere.
    pub mbox: Mbox,
    /// Whether it is on this node.
    pub local: bool,
    /// The name it is exported under on its node (stable for the registration's life).
    pub(crate) export: String,
}

/// The mailboxes registered under one key, ordered by node name then registration: what
/// [`Cluster::lookup`](crate::Cluster::lookup) returns and
/// [`Cluster::subscribe_key`](crate::Cluster::subscribe_key) delivers on every change.
///
/// ```no_run
/// # fn demo(cluster: &cohort_cluster::Cluster) {
/// let listing = cluster.lookup("orders");
/// for entry in &listing.entries {
///     println!("{} (incarnation {}, local: {})", entry.node, entry.incarnation, entry.local);
/// }
/// if let Some(first) = listing.mboxes().next() {
///     first.send(String::from("hello"));
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Listing {
    /// The key.
    pub key: String,
    /// Its mailboxes, on members that are up.
    pub entries: Vec<ListingEntry>,
}

impl Listing {
    pub(crate) fn empty(key: &str) -> Self {
        Self {
            key: key.to_string(),
            entries: Vec::new(),
        }
    }

    /// The mailboxes, in order.
    pub fn mboxes(&self) -> impl Iterator<Item = &Mbox> {
        self.entries.iter().map(|e| &e.mbox)
    }

    /// How many mailboxes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no mailbox is registered under the key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The names of the nodes, one per entry, in order.
    pub fn nodes(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.node.as_str()).collect()
    }
}

/// The current listing of one key. A group holds its key's slot, so that a send reads the
/// listing without looking the key up.
#[derive(Default)]
pub(crate) struct Slot(RwLock<Option<Arc<Listing>>>);

impl Slot {
    pub(crate) fn get(&self) -> Option<Arc<Listing>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the listing; returns the old one, to be dropped outside the map's lock (its
    /// mailboxes may include a group, whose drop takes that lock).
    fn replace(&self, listing: Option<Arc<Listing>>) -> Option<Arc<Listing>> {
        std::mem::replace(
            &mut *self.0.write().unwrap_or_else(|e| e.into_inner()),
            listing,
        )
    }
}

/// A member's listings by key: a slot per key with registrations or held by a group.
/// Slots are cloned only under the map's lock, so their reference counts are exact there.
#[derive(Default)]
pub(crate) struct Listings(Mutex<HashMap<String, Arc<Slot>>>);

impl Listings {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The listing of `key`, if it has registrations.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<Listing>> {
        self.map().get(key).and_then(|s| s.get())
    }

    /// The slot of `key`, for a group (made if the key has none).
    pub(crate) fn slot(&self, key: &str) -> Arc<Slot> {
        self.map().entry(key.to_string()).or_default().clone()
    }

    /// Sets `key`'s listing, `None` when it has no registration left; the slot goes with
    /// the last registration unless a group holds it.
    pub(crate) fn set(&self, key: &str, listing: Option<Arc<Listing>>) {
        let mut map = self.map();
        let _old = match listing {
            Some(listing) => map
                .entry(key.to_string())
                .or_default()
                .replace(Some(listing)),
            None => {
                let old = map.get(key).and_then(|slot| slot.replace(None));
                if map
                    .get(key)
                    .is_some_and(|slot| Arc::strong_count(slot) == 1)
                {
                    map.remove(key);
                }
                old
            }
        };
        drop(map);
    }

    /// A group of `key` lets go of `slot`: the slot goes if nothing else holds it and the key
    /// has no registration.
    pub(crate) fn release(&self, key: &str, slot: &Arc<Slot>) {
        let mut map = self.map();
        let only_ours =
            map.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) && Arc::strong_count(slot) == 2;
        if only_ours && slot.get().is_none() {
            map.remove(key);
        }
    }

    /// Empties every listing (this member left); the slots groups hold stay, empty.
    pub(crate) fn clear(&self) {
        let mut map = self.map();
        let _old: Vec<_> = map.values().filter_map(|slot| slot.replace(None)).collect();
        map.retain(|_, slot| Arc::strong_count(slot) > 1);
        drop(map);
    }

    #[cfg(test)]
    fn keys(&self) -> usize {
        self.map().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(key: &str) -> Option<Arc<Listing>> {
        Some(Arc::new(Listing::empty(key)))
    }

    #[test]
    fn a_slot_lives_while_its_key_has_registrations_or_a_group() {
        let l = Listings::default();
        l.set("a", listing("a"));
        let held = l.slot("a");
        let fresh = l.slot("b");
        assert!(held.get().is_some() && fresh.get().is_none());
        assert_eq!(l.keys(), 2);

        // The group's slot sees every change of its key's listing.
        l.set("b", listing("b"));
        assert!(fresh.get().is_some());
        l.set("a", None);
        assert!(held.get().is_none() && l.get("a").is_none());
        assert_eq!(l.keys(), 2, "held by groups");

        l.release("a", &held);
        drop(held);
        assert_eq!(l.keys(), 1, "no registration, no group");
        l.release("b", &fresh);
        drop(fresh);
        assert_eq!(l.keys(), 1, "registrations keep it");
        l.set("b", None);
        assert_eq!(l.keys(), 0);

        let kept = l.slot("c");
        l.set("c", listing("c"));
        l.set("d", listing("d"));
        l.clear();
        assert!(kept.get().is_none());
        assert_eq!(l.keys(), 1, "only the slot a group holds");
    }
}
