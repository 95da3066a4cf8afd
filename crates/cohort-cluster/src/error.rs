//! What joining and registering can fail with.

use crate::config::ConfigError;
use std::net::SocketAddr;
use thiserror::Error;

/// Why a [`Cluster`](crate::Cluster) call failed.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The node does not listen, so members could not reach it.
    #[error("node {0:?} does not listen (NodeConfig::listen): members could not reach it")]
    NodeNotListening(String),
    /// The remoting address members would dial is not one they can reach (the node
    /// listens on every interface, `0.0.0.0`): give one with
    /// [`ClusterConfig::advertise`](crate::ClusterConfig::advertise).
    #[error("members cannot dial {0}: give the address to advertise (ClusterConfig::advertise)")]
    Unroutable(SocketAddr),
    /// The gossip socket could not be bound.
    #[error("cannot bind the gossip socket to {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's reason.
        reason: String,
    },
    /// The gossip runtime could not start.
    #[error("cannot start the gossip runtime: {0}")]
    Runtime(std::io::Error),
    /// [`Gossiper::start`](crate::Gossiper::start) was awaited outside a tokio runtime
    /// (gossip runs as tokio tasks): await it on one, or call it through a runtime's
    /// `block_on`.
    #[error("Gossiper::start must be awaited on a tokio runtime")]
    NoRuntime,
    /// Chitchat refused to start.
    #[error("cannot start gossip: {0}")]
    Gossip(String),
    /// A registry key is empty or longer than the configured maximum.
    #[error("registry key of {len} bytes: keys are 1 to {max} bytes")]
    BadKey {
        /// The key's length.
        len: usize,
        /// [`ClusterConfig::max_key_bytes`](crate::ClusterConfig::max_key_bytes).
        max: usize,
    },
    /// This node already publishes the most registrations it may.
    #[error("this node already publishes {0} registrations (max_keys_per_node)")]
    TooManyRegistrations(usize),
}
