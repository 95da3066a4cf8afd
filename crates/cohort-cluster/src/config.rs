//! A cluster member's settings: [`ClusterConfig`], built from the cluster's name with every
//! other setting defaulted (each setter names its default in [`crate::defaults`]).

use crate::defaults;
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;

/// A setting of a [`ClusterConfig`] out of its range; each variant names the parameter.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// The cluster name is empty, over 256 bytes, or holds a `#` (the separator of the
    /// name and the token's fingerprint on the wire).
    #[error("cluster name {0:?} must be 1 to 256 bytes long, without '#'")]
    BadName(String),
    /// A duration or a count that must be positive is zero.
    #[error("{0} must be positive")]
    Zero(&'static str),
    /// The phi threshold is not a positive number.
    #[error("phi_threshold {0} must be a positive number")]
    BadPhiThreshold(f64),
    /// A role is empty or holds a `,` (the separator of roles in gossip).
    #[error("role {0:?} must be non-empty, without ','")]
    BadRole(String),
    /// A seed address does not parse as `host:port`.
    #[error("seed {0:?} is not a host:port address")]
    BadSeed(String),
    /// The datagram cap is below what a gossip round needs, or above a UDP payload.
    #[error("max_datagram_bytes {0} must be between 1024 and 65507")]
    BadDatagramCap(usize),
}

/// How a node joins and takes part in a cluster: see [`Cluster::join`](crate::Cluster::join).
///
/// ```
/// use cohort_cluster::ClusterConfig;
/// use std::time::Duration;
///
/// let config = ClusterConfig::new("shop")
///     .seeds(["127.0.0.1:7946", "127.0.0.1:7947"])
///     .gossip_listen("127.0.0.1:0".parse().unwrap())
///     .roles(["orders"])
///     .gossip_interval(Duration::from_millis(200))
///     // The node listens on 0.0.0.0: members dial this address instead.
///     .advertise("10.0.0.5:7000".parse().unwrap());
/// assert!(config.validate().is_ok());
/// assert!(ClusterConfig::new("").validate().is_err());
/// assert!(ClusterConfig::new("shop").gossip_interval(Duration::ZERO).validate().is_err());
/// ```
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub(crate) name: String,
    pub(crate) seeds: Vec<String>,
    pub(crate) gossip_listen: SocketAddr,
    pub(crate) token: Vec<u8>,
    pub(crate) roles: Vec<String>,
    pub(crate) gossip_interval: Duration,
    pub(crate) phi_threshold: f64,
    pub(crate) max_heartbeat_interval: Duration,
    pub(crate) dead_node_grace_period: Duration,
    pub(crate) leave_timeout: Duration,
    pub(crate) max_key_bytes: usize,
    pub(crate) max_keys_per_node: usize,
    pub(crate) max_datagram_bytes: usize,
    pub(crate) incarnation: Option<u64>,
    pub(crate) advertise: Option<SocketAddr>,
}

impl ClusterConfig {
    /// A member of the cluster named `name` (nodes of clusters with other names never see
    /// each other as members), with every other setting at its default: no seeds (the
    /// first node of a cluster), gossip on [`GOSSIP_LISTEN`](defaults::GOSSIP_LISTEN), an
    /// empty token, no roles.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            seeds: Vec::new(),
            gossip_listen: defaults::GOSSIP_LISTEN.parse().expect("a socket address"),
            token: Vec::new(),
            roles: Vec::new(),
            gossip_interval: defaults::GOSSIP_INTERVAL,
            phi_threshold: defaults::PHI_THRESHOLD,
            max_heartbeat_interval: defaults::MAX_HEARTBEAT_INTERVAL,
            dead_node_grace_period: defaults::DEAD_NODE_GRACE_PERIOD,
            leave_timeout: defaults::LEAVE_TIMEOUT,
            max_key_bytes: defaults::MAX_KEY_BYTES,
            max_keys_per_node: defaults::MAX_KEYS_PER_NODE,
            max_datagram_bytes: defaults::MAX_DATAGRAM_BYTES,
            incarnation: None,
            advertise: None,
        }
    }

    /// Gossip addresses (`host:port`) of members to join through (default: none). A seed
    /// that is down is tried again every gossip round.
    pub fn seeds<I, S>(mut self, seeds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.seeds = seeds.into_iter().map(Into::into).collect();
        self
    }

    /// The UDP address gossip listens on ([`GOSSIP_LISTEN`](defaults::GOSSIP_LISTEN); port
    /// 0 picks a free port, see [`Cluster::gossip_addr`](crate::Cluster::gossip_addr)).
    pub fn gossip_listen(mut self, addr: SocketAddr) -> Self {
        self.gossip_listen = addr;
        self
    }

    /// The remoting token of the node (default: empty); give the same as the node's
    /// [`NodeConfig::token`](cohort_remote::NodeConfig::token). Gossip carries a
    /// fingerprint of it beside the cluster name, so a node with another token is refused
    /// as a node of another cluster is. The fingerprint is a mismatch check, not a secret:
    /// the TCP handshake checks the token itself before any message flows.
    pub fn token(mut self, token: impl AsRef<[u8]>) -> Self {
        self.token = token.as_ref().to_vec();
        self
    }

    /// The roles this member announces (default: none), shown in
    /// [`Member::roles`](crate::Member::roles).
    pub fn roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.roles = roles.into_iter().map(Into::into).collect();
        self
    }

    /// How often this node gossips ([`GOSSIP_INTERVAL`](defaults::GOSSIP_INTERVAL)); set
    /// the same on every member: the failure detector learns the others' pace from it. A
    /// longer interval (large clusters) wants a [`max_heartbeat_interval`](Self::max_heartbeat_interval)
    /// as many times longer: a member's heartbeats reach another about once a round, and
    /// intervals over that maximum are never sampled, so such members are never seen live.
    pub fn gossip_interval(mut self, interval: Duration) -> Self {
        self.gossip_interval = interval;
        self
    }

    /// The failure detector's threshold ([`PHI_THRESHOLD`](defaults::PHI_THRESHOLD)): higher
    /// declares a crash later and a slow member down less often.
    pub fn phi_threshold(mut self, phi: f64) -> Self {
        self.phi_threshold = phi;
        self
    }

    /// The longest heartbeat interval the detector samples
    /// ([`MAX_HEARTBEAT_INTERVAL`](defaults::MAX_HEARTBEAT_INTERVAL)).
    pub fn max_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.max_heartbeat_interval = interval;
        self
    }

    /// How long a down member's state is kept before it is forgotten
    /// ([`DEAD_NODE_GRACE_PERIOD`](defaults::DEAD_NODE_GRACE_PERIOD)).
    pub fn dead_node_grace_period(mut self, period: Duration) -> Self {
        self.dead_node_grace_period = period;
        self
    }

    /// How long a leave waits for the members' acknowledgements
    /// ([`LEAVE_TIMEOUT`](defaults::LEAVE_TIMEOUT)).
    pub fn leave_timeout(mut self, timeout: Duration) -> Self {
        self.leave_timeout = timeout;
        self
    }

    /// The longest registry key ([`MAX_KEY_BYTES`](defaults::MAX_KEY_BYTES)).
    pub fn max_key_bytes(mut self, bytes: usize) -> Self {
        self.max_key_bytes = bytes;
        self
    }

    /// The most registrations a node may publish
    /// ([`MAX_KEYS_PER_NODE`](defaults::MAX_KEYS_PER_NODE)).
    pub fn max_keys_per_node(mut self, keys: usize) -> Self {
        self.max_keys_per_node = keys;
        self
    }

    /// The longest gossip datagram accepted
    /// ([`MAX_DATAGRAM_BYTES`](defaults::MAX_DATAGRAM_BYTES)). Chitchat fills datagrams up
    /// to that default when a member's state is large (many members or registrations), so
    /// a lower cap also refuses such peers' gossip: lower it only for clusters whose
    /// gossip stays small.
    pub fn max_datagram_bytes(mut self, bytes: usize) -> Self {
        self.max_datagram_bytes = bytes;
        self
    }

    /// This run's incarnation number (default: the time of the join in microseconds since
    /// the Unix epoch). A node that restarts under the same name must come back with a
    /// higher one: members then see a new member, not the old one.
    pub fn incarnation(mut self, incarnation: u64) -> Self {
        self.incarnation = Some(incarnation);
        self
    }

    /// The remoting address members dial to reach this node (default: the address its
    /// cohort-remote node listens on). Give it when the node listens on every interface
    /// (`0.0.0.0`) or behind a translated address. A member that advertises an address
    /// another node answers is never sent to (counted in
    /// [`ClusterStats::address_not_owned`](crate::ClusterStats::address_not_owned)).
    pub fn advertise(mut self, addr: SocketAddr) -> Self {
        self.advertise = Some(addr);
        self
    }

    /// Checks every setting; [`Cluster::join`](crate::Cluster::join) calls it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.name.is_empty() || self.name.len() > 256 || self.name.contains('#') {
            return Err(ConfigError::BadName(self.name.clone()));
        }
        if let Some(r) = self.roles.iter().find(|r| r.is_empty() || r.contains(',')) {
            return Err(ConfigError::BadRole(r.clone()));
        }
        if let Some(s) = self.seeds.iter().find(|s| s.rsplit_once(':').is_none()) {
            return Err(ConfigError::BadSeed(s.clone()));
        }
        let durations = [
            (self.gossip_interval, "gossip_interval"),
            (self.max_heartbeat_interval, "max_heartbeat_interval"),
            (self.dead_node_grace_period, "dead_node_grace_period"),
            (self.leave_timeout, "leave_timeout"),
        ];
        if let Some((_, name)) = durations.iter().find(|(d, _)| d.is_zero()) {
            return Err(ConfigError::Zero(name));
        }
        if self.phi_threshold.is_nan() || self.phi_threshold <= 0.0 {
            return Err(ConfigError::BadPhiThreshold(self.phi_threshold));
        }
        if self.max_key_bytes == 0 {
            return Err(ConfigError::Zero("max_key_bytes"));
        }
        if self.max_keys_per_node == 0 {
            return Err(ConfigError::Zero("max_keys_per_node"));
        }
        if !(1024..=defaults::MAX_DATAGRAM_BYTES).contains(&self.max_datagram_bytes) {
            return Err(ConfigError::BadDatagramCap(self.max_datagram_bytes));
        }
        Ok(())
    }

    /// The cluster id chitchat compares: the name and the token's fingerprint.
    pub(crate) fn cluster_id(&self) -> String {
        format!("{}#{:016x}", self.name, fnv1a(&self.token))
    }
}

/// FNV-1a, 64 bits: a stable fingerprint (the same in every build), not a secret.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
