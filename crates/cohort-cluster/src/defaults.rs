//! Default settings of a [`ClusterConfig`](crate::ClusterConfig), each named by the setter
//! that changes it.

use std::time::Duration;

/// How often a node gossips with a random peer (and with a seed it has not heard from):
/// [`gossip_interval`](crate::ClusterConfig::gossip_interval). Each round also increments the
/// node's heartbeat, which is what the failure detector samples.
pub const GOSSIP_INTERVAL: Duration = Duration::from_millis(400);

/// The failure detector's threshold ([`phi_threshold`](crate::ClusterConfig::phi_threshold)).
/// Chitchat's phi is the silence divided by the mean interval between a member's heartbeat
/// updates (not Akka's log-scale phi): 16 declares a crashed member down after about 16
/// such intervals, a few seconds at the default gossip interval, and tolerates stalls of
/// the same length without a false down.
pub const PHI_THRESHOLD: f64 = 16.0;

/// Heartbeat intervals longer than this are not sampled by the detector, so one long pause
/// does not teach it to wait forever
/// ([`max_heartbeat_interval`](crate::ClusterConfig::max_heartbeat_interval)).
pub const MAX_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);

/// How long the state of a down member is kept before it is forgotten
/// ([`dead_node_grace_period`](crate::ClusterConfig::dead_node_grace_period)); while kept,
/// a late gossip about it cannot bring its registrations back.
pub const DEAD_NODE_GRACE_PERIOD: Duration = Duration::from_secs(3600);

/// How long [`Cluster::leave`](crate::Cluster::leave) waits for every member to acknowledge
/// the leave before stopping anyway ([`leave_timeout`](crate::ClusterConfig::leave_timeout)).
pub const LEAVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest registry key, in bytes ([`max_key_bytes`](crate::ClusterConfig::max_key_bytes)).
pub const MAX_KEY_BYTES: usize = 128;

/// The most registrations one node may publish; a peer's extra ones are ignored, counted
/// and logged ([`max_keys_per_node`](crate::ClusterConfig::max_keys_per_node)).
pub const MAX_KEYS_PER_NODE: usize = 1024;

/// The longest gossip datagram accepted: a UDP payload's maximum over IPv4
/// ([`max_datagram_bytes`](crate::ClusterConfig::max_datagram_bytes)).
pub const MAX_DATAGRAM_BYTES: usize = 65_507;

/// Where gossip listens unless told: loopback, a port picked by the system
/// ([`gossip_listen`](crate::ClusterConfig::gossip_listen)).
pub const GOSSIP_LISTEN: &str = "127.0.0.1:0";
