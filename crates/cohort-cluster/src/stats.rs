//! Counters of a cluster member: gossip traffic and every input it refused, and the rate
//! limit of the warnings about refused input.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One warning per reason at most this often: a peer flooding bad input must not flood
/// the log (the counters still count every datagram).
const LOG_EVERY: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) datagrams_in: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) datagrams_out: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) oversized: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) foreign_cluster: AtomicU64,
    pub(crate) keys_too_long: AtomicU64,
    pub(crate) keys_over_cap: AtomicU64,
    pub(crate) group_empty: AtomicU64,
    pub(crate) broadcast_unregistered: AtomicU64,
    pub(crate) dials_failed: AtomicU64,
    pub(crate) address_not_owned: AtomicU64,
    pub(crate) member_downs: AtomicU64,
    pub(crate) receive_buffer: AtomicU64,
    /// Per reason: when it was last logged, and how many were not logged since.
    logged: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether a warning about `reason` may be logged now; if so, how many occurrences
    /// were left unlogged since the last one.
    pub(crate) fn may_log(&self, reason: &'static str) -> Option<u64> {
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match logged.get_mut(reason) {
            Some((last, skipped)) if now.duration_since(*last) < LOG_EVERY => {
                *skipped += 1;
                None
            }
            Some((last, skipped)) => {
                *last = now;
                Some(std::mem::take(skipped))
            }
            None => {
                logged.insert(reason, (now, 0));
                Some(0)
            }
        }
    }

    pub(crate) fn snapshot(&self) -> ClusterStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClusterStats {
            datagrams_in: g(&self.datagrams_in),
            bytes_in: g(&self.bytes_in),
            datagrams_out: g(&self.datagrams_out),
            bytes_out: g(&self.bytes_out),
            oversized_datagrams: g(&self.oversized),
            malformed_datagrams: g(&self.malformed),
            foreign_cluster: g(&self.foreign_cluster),
            keys_too_long: g(&self.keys_too_long),
            keys_over_cap: g(&self.keys_over_cap),
            group_empty: g(&self.group_empty),
            broadcast_unregistered: g(&self.broadcast_unregistered),
            dials_failed: g(&self.dials_failed),
            address_not_owned: g(&self.address_not_owned),
            member_downs: g(&self.member_downs),
            receive_buffer_bytes: g(&self.receive_buffer),
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
    /// Datagrams that are not gossip: a header chitchat does not know, or a body its
    /// decoder refuses (dropped, logged).
    pub malformed_datagrams: u64,
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
    /// Dials to a member's advertised remoting address that another node answered: the
    /// member advertises an address it does not own; its messages are dead letters.
    pub address_not_owned: u64,
    /// Members this node declared down ([`MemberDown`](crate::MemberDown) events, whether
    /// or not anyone listens to them).
    pub member_downs: u64,
    /// The gossip socket's receive buffer in bytes as the system granted it (Linux reports
    /// twice what was asked, for its own bookkeeping). A few MiB are asked for, so that a
    /// burst of gossip is not lost; a lower system maximum (`net.core.rmem_max` on Linux)
    /// caps it, and a warning says so once per process.
    pub receive_buffer_bytes: u64,
}
