//! A node's settings: [`NodeConfig`], built from a name with every other setting defaulted
//! (each setter names its default in [`crate::defaults`]).

use crate::defaults;
use crate::phi::PhiConfig;
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;

/// When the writer of a connection writes what is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// The default: wait for a first message with no timer, then keep encoding while the
    /// queue is not empty, up to `max_messages` and `max_bytes`, and write the batch at once.
    /// Idle, a batch is one message (no added latency); under load, batches grow by
    /// themselves.
    Adaptive {
        /// At most this many messages per write
        /// ([`MAX_BATCH_MESSAGES`](defaults::MAX_BATCH_MESSAGES)).
        max_messages: usize,
        /// A batch stops growing past this many bytes
        /// ([`MAX_BATCH_BYTES`](defaults::MAX_BATCH_BYTES)).
        max_bytes: usize,
    },
    /// A write per message (what a flush per message does): for comparison.
    PerMessage,
    /// Fixed thresholds, as in Akka.NET's remoting settings: write once `messages` are
    /// batched, or
    /// `bytes`, or `delay` after the batch's first message, whichever comes first. For
    /// comparison: at low volume every message waits for the timer.
    Fixed {
        /// [`FIXED_BATCH_MESSAGES`](defaults::FIXED_BATCH_MESSAGES).
        messages: usize,
        /// [`FIXED_BATCH_BYTES`](defaults::FIXED_BATCH_BYTES).
        bytes: usize,
        /// [`FIXED_BATCH_DELAY`](defaults::FIXED_BATCH_DELAY).
        delay: Duration,
    },
}

impl Batching {
    /// Adaptive batching with its default caps.
    pub const fn adaptive() -> Self {
        Self::Adaptive {
            max_messages: defaults::MAX_BATCH_MESSAGES,
            max_bytes: defaults::MAX_BATCH_BYTES,
        }
    }

    /// Akka.NET's fixed thresholds: 20 messages, 128 KB, 40 ms.
    pub const fn fixed() -> Self {
        Self::Fixed {
            messages: defaults::FIXED_BATCH_MESSAGES,
            bytes: defaults::FIXED_BATCH_BYTES,
            delay: defaults::FIXED_BATCH_DELAY,
        }
    }
}

impl Default for Batching {
    fn default() -> Self {
        Self::adaptive()
    }
}

/// What a send does when the outbound queue to a peer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The sender waits until the writer has made room (back-pressure); the default. A send
    /// to a peer that goes down while waiting becomes a dead letter.
    #[default]
    Wait,
    /// The new message is dropped: a dead letter
    /// ([`DeliveryFailure::OutboundFull`](cohort::DeliveryFailure::OutboundFull)).
    DropNewest,
    /// The oldest queued message is dropped (a dead letter) to make room for the new one.
    DropOldest,
    /// As `DropNewest`, and logged as an error: for traffic that must never overflow.
    Error,
}

/// API misuse in a [`NodeConfig`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// The node's name is empty or over 256 bytes.
    #[error("node name {0:?} must be 1 to 256 bytes long")]
    BadName(String),
    /// A size or a count that must be positive is zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// The token is over 1,024 bytes.
    #[error("the authentication token is {0} bytes; at most 1024")]
    TokenTooLong(usize),
    /// The phi threshold is not a positive number.
    #[error("phi threshold {0} must be a positive number")]
    BadPhiThreshold(f64),
    /// The maximum frame size leaves no room for a message.
    #[error("max_frame_bytes {0} is below 64 (a frame header and a small message)")]
    FrameTooSmall(u32),
    /// The idle-frame budget would pause a reader on the heartbeats alone.
    #[error(
        "idle_frames_per_second {per_second} is below {needed}, four times the heartbeats a second at heartbeat_interval {interval:?}: raise it, or lengthen the interval"
    )]
    IdleBudgetBelowHeartbeats {
        /// The budget asked for.
        per_second: u32,
        /// The least budget for the heartbeat interval.
        needed: u32,
        /// The heartbeat interval.
        interval: Duration,
    },
}

/// A node's settings.
///
/// ```
/// use cohort_remote::{Batching, NodeConfig, Overflow};
///
/// let config = NodeConfig::new("pricing-1")
///     .token("s3cret")
///     .listen("127.0.0.1:0".parse().unwrap())
///     .batching(Batching::adaptive())
///     .overflow(Overflow::DropOldest);
/// assert!(config.validate().is_ok());
/// assert!(NodeConfig::new("").validate().is_err());
/// ```
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub(crate) name: String,
    pub(crate) token: Vec<u8>,
    pub(crate) listen: Option<SocketAddr>,
    pub(crate) batching: Batching,
    pub(crate) max_frame_bytes: u32,
    pub(crate) outbound_capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) handshake_timeout: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) phi: PhiConfig,
    pub(crate) reconnect_min: Duration,
    pub(crate) reconnect_max: Duration,
    pub(crate) io_threads: usize,
    pub(crate) direct_write: Option<Duration>,
    pub(crate) shutdown_flush_timeout: Duration,
    pub(crate) tls: Option<crate::tls::Tls>,
    pub(crate) read_budget: usize,
    pub(crate) max_declarations: u32,
    pub(crate) max_connections: usize,
    pub(crate) handshakes_per_second: u32,
    pub(crate) idle_frames_per_second: u32,
}

impl NodeConfig {
    /// A node named `name` (unique among the nodes that talk to each other), with every
    /// other setting at its default: no token (an empty one), not listening.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            token: Vec::new(),
            listen: None,
            batching: Batching::default(),
            max_frame_bytes: defaults::MAX_FRAME_BYTES,
            outbound_capacity: defaults::OUTBOUND_CAPACITY,
            overflow: Overflow::default(),
            handshake_timeout: defaults::HANDSHAKE_TIMEOUT,
            heartbeat_interval: defaults::HEARTBEAT_INTERVAL,
            phi: PhiConfig::default(),
            reconnect_min: defaults::RECONNECT_MIN_BACKOFF,
            reconnect_max: defaults::RECONNECT_MAX_BACKOFF,
            io_threads: defaults::IO_THREADS,
            direct_write: Some(defaults::DIRECT_WRITE_AFTER),
            shutdown_flush_timeout: defaults::SHUTDOWN_FLUSH_TIMEOUT,
            tls: None,
            read_budget: defaults::READ_BUDGET_FRAMES,
            max_declarations: defaults::MAX_DECLARATIONS,
            max_connections: defaults::MAX_CONNECTIONS,
            handshakes_per_second: defaults::HANDSHAKES_PER_SECOND,
            idle_frames_per_second: defaults::IDLE_FRAMES_PER_SECOND,
        }
    }

    /// The shared secret both sides present in the handshake (default: empty). A peer with
    /// another token is refused.
    pub fn token(mut self, token: impl AsRef<[u8]>) -> Self {
        self.token = token.as_ref().to_vec();
        self
    }

    /// Accept connections on `addr` (default: none; port 0 picks a free port, see
    /// [`Node::local_addr`](crate::Node::local_addr)).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = Some(addr);
        self
    }

    /// The writers' batching ([`Batching::adaptive`] by default).
    pub fn batching(mut self, batching: Batching) -> Self {
        self.batching = batching;
        self
    }

    /// The longest frame accepted and sent
    /// ([`MAX_FRAME_BYTES`](defaults::MAX_FRAME_BYTES)); set the same on both nodes.
    pub fn max_frame_bytes(mut self, bytes: u32) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// Messages queued per peer before [`NodeConfig::overflow`] applies
    /// ([`OUTBOUND_CAPACITY`](defaults::OUTBOUND_CAPACITY)). A bound, not a reservation: the
    /// queue's memory follows what it holds.
    pub fn outbound_capacity(mut self, messages: usize) -> Self {
        self.outbound_capacity = messages;
        self
    }

    /// What a send to a full outbound queue does ([`Overflow::Wait`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// How long a handshake may take, and a dial before it
    /// ([`HANDSHAKE_TIMEOUT`](defaults::HANDSHAKE_TIMEOUT)).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// How often heartbeats are written
    /// ([`HEARTBEAT_INTERVAL`](defaults::HEARTBEAT_INTERVAL)); also the detector's first
    /// assumed interval.
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self.phi.first_interval = interval;
        self
    }

    /// The failure detector's settings (Akka's defaults, see [`PhiConfig`]).
    pub fn failure_detector(mut self, phi: PhiConfig) -> Self {
        self.phi = phi;
        self
    }

    /// A preset for peers on one LAN that must notice a lost peer quickly: heartbeats every
    /// [`FAST_HEARTBEAT_INTERVAL`](defaults::FAST_HEARTBEAT_INTERVAL), a detector that
    /// declares a silent peer down about 0.9 s after its last heartbeat (the defaults take
    /// about 4.5 s), a [`FAST_HANDSHAKE_TIMEOUT`](defaults::FAST_HANDSHAKE_TIMEOUT) and a
    /// reconnection backoff of [`FAST_RECONNECT_MIN_BACKOFF`](defaults::FAST_RECONNECT_MIN_BACKOFF)
    /// to [`FAST_RECONNECT_MAX_BACKOFF`](defaults::FAST_RECONNECT_MAX_BACKOFF) (the detector's
    /// settings are the `FAST_PHI_*` constants in [`defaults`]). It sets
    /// these five settings only; a setter called after it changes one of them. Give both
    /// nodes the preset: each side judges the other's heartbeats. Across a WAN or on a
    /// loaded machine it declares live peers down; keep the defaults there.
    ///
    /// ```
    /// use cohort_remote::NodeConfig;
    /// use std::time::Duration;
    ///
    /// let config = NodeConfig::new("pricing-1")
    ///     .fast_failure_detection()
    ///     .handshake_timeout(Duration::from_millis(500)); // this one tighter still
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn fast_failure_detection(self) -> Self {
        self.heartbeat_interval(defaults::FAST_HEARTBEAT_INTERVAL)
            .failure_detector(PhiConfig {
                threshold: defaults::FAST_PHI_THRESHOLD,
                max_samples: defaults::FAST_PHI_MAX_SAMPLES,
                min_std_deviation: defaults::FAST_PHI_MIN_STD_DEVIATION,
                acceptable_pause: defaults::FAST_ACCEPTABLE_HEARTBEAT_PAUSE,
                first_interval: defaults::FAST_HEARTBEAT_INTERVAL,
            })
            .handshake_timeout(defaults::FAST_HANDSHAKE_TIMEOUT)
            .reconnect_backoff(
                defaults::FAST_RECONNECT_MIN_BACKOFF,
                defaults::FAST_RECONNECT_MAX_BACKOFF,
            )
    }

    /// Reconnection backoff to a dialled peer: first wait, and the most it doubles to
    /// ([`RECONNECT_MIN_BACKOFF`](defaults::RECONNECT_MIN_BACKOFF),
    /// [`RECONNECT_MAX_BACKOFF`](defaults::RECONNECT_MAX_BACKOFF)).
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.reconnect_min = min;
        self.reconnect_max = max.max(min);
        self
    }

    /// Threads of the I/O runtime ([`IO_THREADS`](defaults::IO_THREADS)).
    pub fn io_threads(mut self, threads: usize) -> Self {
        self.io_threads = threads;
        self
    }

    /// Under [`Batching::Adaptive`], let a sender write its message to the socket itself
    /// when the writer task sleeps, the connection was quiet for `quiet` and the last batch
    /// carried one message ([`DIRECT_WRITE_AFTER`](defaults::DIRECT_WRITE_AFTER)); `None` leaves every write to
    /// the writer task (more throughput under load, a thread wake-up more per sparse message).
    pub fn direct_write(mut self, quiet: Option<Duration>) -> Self {
        self.direct_write = quiet;
        self
    }

    /// How long [`Node::shutdown`](crate::Node::shutdown) waits for queued messages to be
    /// written ([`SHUTDOWN_FLUSH_TIMEOUT`](defaults::SHUTDOWN_FLUSH_TIMEOUT)).
    pub fn shutdown_flush_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_flush_timeout = timeout;
        self
    }

    /// Encrypts and authenticates every connection with TLS (default: none, plain TCP):
    /// accepted ones with `tls`'s server side, dialled ones with its client side. Both
    /// nodes of a connection must use TLS; a plain peer fails the handshake (counted in
    /// `handshakes_refused`, logged). The token is still checked, inside the TLS session.
    /// Under TLS senders never write to the socket themselves (see [`Tls`](crate::Tls)).
    pub fn tls(mut self, tls: crate::tls::Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Frames a connection's reader acts on before it yields the I/O thread to the node's
    /// other connections ([`READ_BUDGET_FRAMES`](defaults::READ_BUDGET_FRAMES)).
    pub fn read_budget(mut self, frames: usize) -> Self {
        self.read_budget = frames;
        self
    }

    /// The most type declarations and the most mailbox declarations a peer may make on one
    /// connection, and the bound of their ids ([`MAX_DECLARATIONS`](defaults::MAX_DECLARATIONS)).
    pub fn max_declarations(mut self, declarations: u32) -> Self {
        self.max_declarations = declarations;
        self
    }

    /// Accepted connections kept open at once, handshaking or up
    /// ([`MAX_CONNECTIONS`](defaults::MAX_CONNECTIONS)); one more is closed at once and
    /// counted in [`NodeStats::connections_refused`](crate::NodeStats::connections_refused).
    /// Connections this node dials are not counted.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// Handshakes started per second for one source address, with a burst of as many
    /// ([`HANDSHAKES_PER_SECOND`](defaults::HANDSHAKES_PER_SECOND)); attempts over it are
    /// closed before the handshake and counted in
    /// [`NodeStats::handshakes_rate_limited`](crate::NodeStats::handshakes_rate_limited).
    pub fn handshakes_per_second(mut self, handshakes: u32) -> Self {
        self.handshakes_per_second = handshakes;
        self
    }

    /// Idle frames a connection may send per second, with a burst of as many
    /// ([`IDLE_FRAMES_PER_SECOND`](defaults::IDLE_FRAMES_PER_SECOND)): frames that hand
    /// nothing to a local mailbox (heartbeats, `Ack`s with nothing new, messages refused or
    /// undeliverable here). Over it, the connection's reader pauses until the budget refills
    /// (counted in [`NodeStats::idle_pauses`](crate::NodeStats::idle_pauses)); nothing is
    /// dropped. At least four times the heartbeats a second of
    /// [`heartbeat_interval`](Self::heartbeat_interval)
    /// ([`ConfigError::IdleBudgetBelowHeartbeats`] otherwise).
    pub fn idle_frames_per_second(mut self, frames: u32) -> Self {
        self.idle_frames_per_second = frames;
        self
    }

    /// Checks every setting; [`Node::start`](crate::Node::start) calls it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.name.is_empty() || self.name.len() > defaults::MAX_NAME_BYTES {
            return Err(ConfigError::BadName(self.name.clone()));
        }
        if self.token.len() > 1024 {
            return Err(ConfigError::TokenTooLong(self.token.len()));
        }
        if self.max_frame_bytes < 64 {
            return Err(ConfigError::FrameTooSmall(self.max_frame_bytes));
        }
        if self.outbound_capacity == 0 {
            return Err(ConfigError::Zero("outbound_capacity"));
        }
        if self.io_threads == 0 {
            return Err(ConfigError::Zero("io_threads"));
        }
        if self.heartbeat_interval.is_zero() {
            return Err(ConfigError::Zero("heartbeat_interval"));
        }
        if self.read_budget == 0 {
            return Err(ConfigError::Zero("read_budget"));
        }
        if self.max_declarations == 0 {
            return Err(ConfigError::Zero("max_declarations"));
        }
        if self.max_connections == 0 {
            return Err(ConfigError::Zero("max_connections"));
        }
        if self.handshakes_per_second == 0 {
            return Err(ConfigError::Zero("handshakes_per_second"));
        }
        if self.idle_frames_per_second == 0 {
            return Err(ConfigError::Zero("idle_frames_per_second"));
        }
        // Peers usually share the interval: their heartbeats alone must stay far inside the
        // budget, or the failure detector would hear them late.
        let heartbeats = 1.0 / self.heartbeat_interval.as_secs_f64().max(1e-9);
        let needed = (4.0 * heartbeats).ceil().min(f64::from(u32::MAX)) as u32;
        if self.idle_frames_per_second < needed {
            return Err(ConfigError::IdleBudgetBelowHeartbeats {
                per_second: self.idle_frames_per_second,
                needed,
                interval: self.heartbeat_interval,
            });
        }
        if self.phi.threshold.is_nan() || self.phi.threshold <= 0.0 {
            return Err(ConfigError::BadPhiThreshold(self.phi.threshold));
        }
        if self.phi.max_samples == 0 {
            return Err(ConfigError::Zero("failure_detector.max_samples"));
        }
        match self.batching {
            Batching::Adaptive {
                max_messages,
                max_bytes,
            } if max_messages == 0 || max_bytes == 0 => {
                return Err(ConfigError::Zero("batching caps"));
            }
            Batching::Fixed {
                messages, bytes, ..
            } if messages == 0 || bytes == 0 => {
                return Err(ConfigError::Zero("batching thresholds"));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phi::PhiAccrual;
    use std::time::Instant;

    /// When a peer whose heartbeats came regularly at `config`'s interval is suspected.
    fn suspected_after(config: &NodeConfig) -> Duration {
        let t0 = Instant::now();
        let mut d = PhiAccrual::new(config.phi, t0);
        for i in 1..=50 {
            d.heartbeat(t0 + config.heartbeat_interval * i);
        }
        d.time_to_suspect()
    }

    #[test]
    fn the_fast_preset_suspects_a_silent_peer_within_a_second() {
        let fast = NodeConfig::new("n").fast_failure_detection();
        assert!(fast.validate().is_ok());
        // Interval + pause 600 ms, then 5.2 standard deviations at their 50 ms floor.
        let t = suspected_after(&fast);
        assert!(
            t > Duration::from_millis(800) && t < Duration::from_millis(950),
            "{t:?}"
        );
        let t = suspected_after(&NodeConfig::new("n"));
        assert!(
            t > Duration::from_secs(4) && t < Duration::from_secs(5),
            "{t:?}"
        );
        assert_eq!(fast.phi.first_interval, fast.heartbeat_interval);
        assert_eq!(
            (
                fast.reconnect_min,
                fast.reconnect_max,
                fast.handshake_timeout
            ),
            (
                defaults::FAST_RECONNECT_MIN_BACKOFF,
                defaults::FAST_RECONNECT_MAX_BACKOFF,
                defaults::FAST_HANDSHAKE_TIMEOUT
            )
        );
    }

    #[test]
    fn a_setter_after_the_preset_overrides_only_its_setting() {
        let c = NodeConfig::new("n")
            .fast_failure_detection()
            .reconnect_backoff(Duration::from_millis(50), Duration::from_millis(200));
        assert_eq!(c.reconnect_max, Duration::from_millis(200));
        assert_eq!(c.phi.threshold, defaults::FAST_PHI_THRESHOLD);
        assert_eq!(c.heartbeat_interval, defaults::FAST_HEARTBEAT_INTERVAL);
    }
}
