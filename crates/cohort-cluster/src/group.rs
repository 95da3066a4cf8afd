//! Routing groups: one [`Mbox`] whose sends reach the current registrations of a key.

use crate::cluster::Shared;
use crate::config::fnv1a;
use crate::listing::Slot;
use crate::stats::Counters;
use cohort::{AnyMessage, CustomMbox, DeliveryFailure, Mbox};
use std::any::TypeId;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a [group](crate::Cluster::group) picks the registrations a message goes to.
///
/// ```no_run
/// # fn demo(cluster: &cohort_cluster::Cluster) {
/// use cohort::AnyMessage;
/// use cohort_cluster::Routing;
///
/// struct Order { customer: u64 }
///
/// /// Orders of one customer always go to the same registration.
/// fn by_customer(msg: &AnyMessage) -> u64 {
///     msg.downcast_ref::<Order>().map_or(0, |o| o.customer)
/// }
/// let orders = cluster.group("orders", Routing::ConsistentHash(by_customer));
/// orders.send(Order { customer: 42 });
/// let any = cluster.group("orders", Routing::RoundRobin);
/// # let _ = any;
/// # }
/// ```
#[derive(Clone, Copy)]
pub enum Routing {
    /// Each message to the next registration, in turn.
    RoundRobin,
    /// Each message to every registration. Messages are cloned: their types must be
    /// declared with [`Cluster::broadcastable`](crate::Cluster::broadcastable) (with a
    /// single registration no clone is needed).
    Broadcast,
    /// Each message to the registration chosen by the message's hash (the function's
    /// result) by rendezvous hashing: the same hash goes to the same registration while it
    /// is listed, and a change of membership moves only the hashes of the registrations
    /// that came or went.
    ConsistentHash(fn(&AnyMessage) -> u64),
}

impl std::fmt::Debug for Routing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Routing::RoundRobin => "RoundRobin",
            Routing::Broadcast => "Broadcast",
            Routing::ConsistentHash(_) => "ConsistentHash",
        })
    }
}

/// Sends a clone of a type-erased message to a mailbox (see [`Cluster::broadcastable`]).
pub(crate) type Cloner = fn(&AnyMessage, &Mbox);

pub(crate) fn cloner<M: Clone + Send + Sync + 'static>() -> (TypeId, Cloner) {
    fn send_clone<M: Clone + Send + Sync + 'static>(msg: &AnyMessage, to: &Mbox) {
        if let Some(m) = msg.downcast_ref::<M>() {
            to.send(m.clone());
        }
    }
    (TypeId::of::<M>(), send_clone::<M>)
}

pub(crate) struct Group {
    /// The key's listing, read at every send.
    pub(crate) slot: Arc<Slot>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) key: String,
    pub(crate) routing: Routing,
    pub(crate) next: AtomicUsize,
    pub(crate) label: String,
}

impl Group {
    fn dead_letter(&self, msg: &AnyMessage, counter: &std::sync::atomic::AtomicU64, why: &str) {
        Counters::add(counter, 1);
        tracing::debug!(key = %self.key, message = msg.type_name(), why, "group dead letter");
        // No DeliveryFailure names an empty group: the closest is "nobody subscribed";
        // the group's own counter tells the two apart.
        self.shared
            .env
            .report_dead_letter(msg.type_name(), DeliveryFailure::NoSubscriber);
    }
}

impl CustomMbox for Group {
    fn deliver(&self, msg: AnyMessage) {
        let counters = &self.shared.counters;
        let Some(listing) = self.slot.get() else {
            return self.dead_letter(&msg, &counters.group_empty, "no registration");
        };
        let n = listing.entries.len();
        let pick = match self.routing {
            Routing::RoundRobin => self.next.fetch_add(1, Ordering::Relaxed) % n,
            Routing::ConsistentHash(hash) => {
                let h = hash(&msg);
                let score = |i: usize| {
                    let e = &listing.entries[i];
                    let id = format!("{}#{}#{}", e.node, e.incarnation, e.export);
                    fnv1a(id.as_bytes()) ^ h.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                };
                (0..n).max_by_key(|&i| mix(score(i))).unwrap_or(0)
            }
            Routing::Broadcast if n == 1 => 0,
            Routing::Broadcast => {
                let cloner = self.shared.cloner(msg.type_id());
                let Some(cloner) = cloner else {
                    return self.dead_letter(
                        &msg,
                        &counters.broadcast_unregistered,
                        "type not broadcastable",
                    );
                };
                for e in &listing.entries {
                    cloner(&msg, &e.mbox);
                }
                return;
            }
        };
        let _ = msg.forward(&listing.entries[pick].mbox);
    }

    fn name(&self) -> Option<&str> {
        Some(&self.label)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.shared.listings.release(&self.key, &self.slot);
    }
}

/// A 64-bit finaliser (splitmix64's), so that rendezvous scores of close inputs spread.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
