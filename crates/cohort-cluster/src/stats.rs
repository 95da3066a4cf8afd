//! Counters of a cluster member: gossip traffic and every input it refused.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) datagrams_in: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) datagrams_out: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) oversized: AtomicU64,
    pub(crate) foreign_cluster: AtomicU64,
    pub(crate) keys_too_long: AtomicU64,
    pub(crate) keys_over_cap: AtomicU64,
    pub(crate) group_empty: AtomicU64,
    pub(crate) broadcast_unregistered: AtomicU64,
    pub(crate) dials_failed: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ClusterStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClusterStats {
            datagrams_in: g(&self.datagrams_in),
            bytes_in: g(&self.bytes_in),
            datagrams_out: g(&self.datagrams_out),
            bytes_out: g(&self.bytes_out),
            oversized_datagrams: g(&self.oversized),
            foreign_cluster: g(&self.foreign_cluster),
            keys_too_long: g(&self.keys_too_long),
            keys_over_cap: g(&self.keys_over_cap),
            group_empty: g(&self.group_empty),
            broadcast_unregistered: g(&self.broadcast_unregistered),
            dials_failed: g(&self.dials_failed),
        }
    }
}

/// A snapshot of a member's counters: [`Cluster::stats`](crate::Cluster::stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Gossip datagrams received (well-formed ones, of any cluster).
    pub datagrams_in: u64,
    /// Bytes of gossip received.
    pub bytes_in: u64,
    /// Gossip datagrams sent.
    pub datagrams_out: u64,
    /// Bytes of gossip sent.
    pub bytes_out: u64,
    /// Datagrams over [`max_datagram_bytes`](crate::ClusterConfig::max_datagram_bytes)
    /// (dropped unread, logged).
    pub oversized_datagrams: u64,
    /// Gossip from a node of another cluster or with another token, and refusals of ours
    /// by such a node: it never becomes a member (logged).
    pub foreign_cluster: u64,
    /// Peers' registry keys over [`max_key_bytes`](crate::ClusterConfig::max_key_bytes),
    /// ignored (counted once per key seen, logged).
    pub keys_too_long: u64,
    /// Peers' registrations past
    /// [`max_keys_per_node`](crate::ClusterConfig::max_keys_per_node), ignored.
    pub keys_over_cap: u64,
    /// Messages sent to a group with no member: dead letters.
    pub group_empty: u64,
    /// Messages broadcast whose type was not declared with
    /// [`Cluster::broadcastable`](crate::Cluster::broadcastable): dead letters.
    pub broadcast_unregistered: u64,
    /// Dials to a member that failed (its messages are dead letters).
    pub dials_failed: u64,
}
