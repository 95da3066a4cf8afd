//! A node's counters: what it wrote and read, and what went wrong.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of a node, all connections together (relaxed atomics; the writers add a
/// batch's figures once per write).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) writes: AtomicU64,
    pub(crate) messages_out: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) messages_in: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) heartbeats_in: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) handshakes_refused: AtomicU64,
    pub(crate) protocol_errors: AtomicU64,
    pub(crate) nodes_down: AtomicU64,
    pub(crate) undeliverable: AtomicU64,
    pub(crate) in_doubt: AtomicU64,
    pub(crate) connections_refused: AtomicU64,
    pub(crate) handshakes_rate_limited: AtomicU64,
    pub(crate) access_refused: AtomicU64,
    pub(crate) access_denied: AtomicU64,
    pub(crate) declarations_refused: AtomicU64,
    pub(crate) warnings_suppressed: AtomicU64,
    pub(crate) idle_pauses: AtomicU64,
    pub(crate) receive_buffer_bytes: AtomicU64,
}

impl Counters {
    #[inline]
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> NodeStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        NodeStats {
            writes: g(&self.writes),
            messages_out: g(&self.messages_out),
            bytes_out: g(&self.bytes_out),
            messages_in: g(&self.messages_in),
            bytes_in: g(&self.bytes_in),
            heartbeats_in: g(&self.heartbeats_in),
            connections: g(&self.connections),
            handshakes_refused: g(&self.handshakes_refused),
            protocol_errors: g(&self.protocol_errors),
            nodes_down: g(&self.nodes_down),
            undeliverable: g(&self.undeliverable),
            in_doubt: g(&self.in_doubt),
            asks_waiting: 0,
            connections_refused: g(&self.connections_refused),
            handshakes_rate_limited: g(&self.handshakes_rate_limited),
            access_refused: g(&self.access_refused),
            access_denied: g(&self.access_denied),
            declarations_refused: g(&self.declarations_refused),
            warnings_suppressed: g(&self.warnings_suppressed),
            idle_pauses: g(&self.idle_pauses),
            receive_buffer_bytes: g(&self.receive_buffer_bytes),
            // Filled in by the node, which keeps them.
            connections_open: 0,
            peers: 0,
            outbound_queued: 0,
        }
    }
}

/// A snapshot of a node's counters ([`Node::stats`](crate::Node::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Socket writes (batches) made by the writers and senders, a heartbeat, `Ack` or `Bye`
    /// alone included.
    pub writes: u64,
    /// Messages written.
    pub messages_out: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Messages read and handed to a local mailbox (or counted as dead letters).
    pub messages_in: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Heartbeats read.
    pub heartbeats_in: u64,
    /// Connections that completed their handshake (both directions, reconnections too).
    pub connections: u64,
    /// Handshakes refused (wrong token, version, name, malformed, timeout), either side.
    pub handshakes_refused: u64,
    /// Connections closed for a protocol error (malformed frame, unknown id, ...).
    pub protocol_errors: u64,
    /// Times a peer was declared down (connection lost, failure detector, protocol error).
    pub nodes_down: u64,
    /// Messages to remote nodes that were not sent: counted as dead letters too.
    pub undeliverable: u64,
    /// Of those, messages written to a peer whose connection ended before the peer
    /// acknowledged them: each may or may not have been handled there
    /// ([`DeliveryFailure::InDoubt`](cohort::DeliveryFailure::InDoubt)).
    pub in_doubt: u64,
    /// Requests written to peers that wait for their reply now (registered with
    /// [`Registry::register_request`](crate::Registry::register_request)).
    pub asks_waiting: u64,
    /// Accepted connections closed at once because
    /// [`NodeConfig::max_connections`](crate::NodeConfig::max_connections) were open.
    pub connections_refused: u64,
    /// Accepted connections closed before their handshake because their source address was
    /// over [`NodeConfig::handshakes_per_second`](crate::NodeConfig::handshakes_per_second).
    pub handshakes_rate_limited: u64,
    /// Messages from peers this node refused because the exported mailbox they were sent to
    /// does not admit the sending node ([`Access`](crate::Access)); each is reported back to
    /// the sender, which counts it.
    pub access_refused: u64,
    /// Messages this node sent that a peer refused by its [`Access`](crate::Access): dead
    /// letters here ([`DeliveryFailure::AccessDenied`](cohort::DeliveryFailure::AccessDenied)),
    /// counted in `undeliverable` too.
    pub access_denied: u64,
    /// Connections closed because the peer declared more types or mailboxes than
    /// [`NodeConfig::max_declarations`](crate::NodeConfig::max_declarations) (counted in
    /// `protocol_errors` too).
    pub declarations_refused: u64,
    /// Warnings about peers' input not logged because their connection or source address
    /// was over [`WARNINGS_PER_WINDOW`](crate::defaults::WARNINGS_PER_WINDOW).
    pub warnings_suppressed: u64,
    /// Times a connection's reader paused because its peer sent more idle frames (frames
    /// that hand nothing to a local mailbox: heartbeats, `Ack`s with nothing new, messages
    /// refused or undeliverable here) than
    /// [`NodeConfig::idle_frames_per_second`](crate::NodeConfig::idle_frames_per_second).
    /// Nothing is dropped: the frames are acted on after the pause.
    pub idle_pauses: u64,
    /// Bytes the connections' receive buffers hold now (their capacity), all connections
    /// together: at most [`READ_BUFFER_BYTES`](crate::defaults::READ_BUFFER_BYTES) per
    /// connection, or the frame it is receiving when that is longer.
    pub receive_buffer_bytes: u64,
    /// Accepted connections open now, handshaking or up (what
    /// [`NodeConfig::max_connections`](crate::NodeConfig::max_connections) caps).
    pub connections_open: u64,
    /// Peers this node keeps an entry (and an outbound queue) for now: those it dialled,
    /// those connected, and those that dialled it and left while a
    /// [`RemoteNode`](crate::RemoteNode) or a proxy of theirs was held.
    pub peers: u64,
    /// Messages in the outbound queues now, all peers together. A queue's memory follows
    /// it: blocks of 31 messages, taken as it fills and given back as the writer empties
    /// them, at most one block when empty.
    pub outbound_queued: u64,
}

impl NodeStats {
    /// Mean messages per socket write (0 before the first write).
    pub fn mean_batch(&self) -> f64 {
        if self.writes == 0 {
            0.0
        } else {
            self.messages_out as f64 / self.writes as f64
        }
    }
}
