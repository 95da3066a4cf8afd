//! Errors of starting a node and of connecting to one.

use crate::config::ConfigError;
use crate::frame::FrameError;
use thiserror::Error;

/// Why a handshake failed. The connection is closed; the reason is logged on both sides
/// when it can be sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HandshakeError {
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: this node speaks {ours}, the peer {theirs}")]
    VersionMismatch {
        /// This node's version.
        ours: u16,
        /// The peer's.
        theirs: u16,
    },
    /// The peer presented another token.
    #[error("wrong authentication token (set the same NodeConfig::token on both nodes)")]
    WrongToken,
    /// The peer's name is this node's own name.
    #[error("the peer has this node's own name {0:?}; node names must be unique")]
    SameName(String),
    /// The listener refused the handshake, with its reason.
    #[error("refused by the peer: {0}")]
    Refused(String),
    /// The first frame was not the expected handshake frame.
    #[error("expected a {expected} frame, got {got}")]
    Unexpected {
        /// What was expected.
        expected: &'static str,
        /// What came.
        got: String,
    },
    /// The handshake took longer than the configured timeout.
    #[error("no handshake within {0:?}")]
    Timeout(std::time::Duration),
    /// The bytes were not a valid frame.
    #[error("malformed handshake frame: {0}")]
    Frame(#[from] FrameError),
    /// The connection closed during the handshake.
    #[error("connection closed during the handshake")]
    Closed,
    /// The TLS handshake failed (a certificate not trusted or not valid for the expected
    /// name, a peer without TLS, no common protocol version or cipher suite).
    #[error(
        "TLS handshake failed: {0} (check both nodes' NodeConfig::tls: certificates, trusted roots, server name)"
    )]
    Tls(String),
    /// The peer sent a TLS record where this node, without TLS, expected a handshake frame.
    #[error(
        "the peer speaks TLS and this node does not: set NodeConfig::tls on both nodes or on neither"
    )]
    PeerUsesTls,
}

/// Errors of [`Node`](crate::Node) operations.
#[derive(Debug, Error)]
pub enum RemoteError {
    /// A setting is invalid.
    #[error("invalid node config: {0}")]
    Config(#[from] ConfigError),
    /// The I/O runtime could not start.
    #[error("could not start the I/O runtime: {0}")]
    Runtime(std::io::Error),
    /// Binding the listening address failed.
    #[error("could not listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Connecting failed.
    #[error("could not connect to {addr}: {source}")]
    Connect {
        /// The address.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The handshake failed.
    #[error("handshake with {addr} failed: {source}")]
    Handshake {
        /// The address.
        addr: String,
        /// Why.
        source: HandshakeError,
    },
    /// The node is shut down.
    #[error("the node is shut down")]
    ShutDown,
    /// A reference to a mailbox this node does not export was asked for.
    #[error("no mailbox is exported as {0:?}: call Node::export({0:?}) first")]
    NotExported(String),
    /// The name given to [`Tls::new`](crate::Tls::new) is not a DNS name or an IP address.
    #[error(
        "invalid TLS server name {name:?}: {reason} (give the DNS name or IP address the listeners' certificates carry)"
    )]
    TlsServerName {
        /// The name.
        name: String,
        /// Why it is invalid.
        reason: String,
    },
}
