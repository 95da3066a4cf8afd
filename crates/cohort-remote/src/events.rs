//! Node-up and node-down notifications, published to a node's events mailbox
//! ([`Node::events_mbox`](crate::Node::events_mbox)), a named mailbox agents subscribe to.

/// A peer completed its handshake (first connection or reconnection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUp {
    /// The peer's node name.
    pub node: String,
}

/// A peer's connection ended: lost, closed by the peer, refused a frame, or declared
/// down by the failure detector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDown {
    /// The peer's node name.
    pub node: String,
    /// Why, in words.
    pub reason: String,
    /// Messages still queued for it, now counted as dead letters
    /// ([`DeliveryFailure::NodeDown`](cohort::DeliveryFailure::NodeDown)).
    pub undeliverable: u64,
    /// Messages written to it on that connection that it did not acknowledge before the
    /// end, now counted as dead letters in doubt
    /// ([`DeliveryFailure::InDoubt`](cohort::DeliveryFailure::InDoubt)): each may or may
    /// not have been handled there.
    pub in_doubt: u64,
}
