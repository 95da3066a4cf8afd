//! Every default and limit of `cohort-remote`, in one place: each builder setter of
//! [`NodeConfig`](crate::NodeConfig) names the constant it defaults to.

use std::time::Duration;

/// The wire protocol's version, sent in the handshake. A peer with another version is
/// refused ([`HandshakeError::VersionMismatch`](crate::HandshakeError::VersionMismatch)).
/// Version 2 added the `Ack` frame, version 3 the `Denied` frame (see [`frame`](crate::frame)).
pub const PROTOCOL_VERSION: u16 = 3;

/// A receiving node that has nothing to send writes an `Ack` alone once it has read this
/// many messages since its last one (4,096), instead of waiting for its next heartbeat: the
/// sender's count of messages in doubt stays bounded under a one-way stream.
pub const ACK_EVERY: u64 = 4096;

/// The largest frame a node accepts, in bytes (its declared length, kind byte included):
/// 1 MiB. A longer one closes the connection
/// ([`FrameError::TooLong`](crate::FrameError::TooLong)) before any of it is buffered.
pub const MAX_FRAME_BYTES: u32 = 1 << 20;

/// The most messages the writer puts in one write (adaptive batching): 1,024.
pub const MAX_BATCH_MESSAGES: usize = 1024;

/// The most bytes the writer puts in one write (adaptive batching): 64 KiB. A batch stops
/// growing once it holds that many bytes (the message that crosses the cap is still in it).
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// The fixed flush thresholds of Akka.NET's remoting (akka-remote-flush-batching): a write
/// once 20 messages
/// are queued...
pub const FIXED_BATCH_MESSAGES: usize = 20;
/// ... or 128 KB are queued...
pub const FIXED_BATCH_BYTES: usize = 128 * 1024;
/// ... or 40 ms after the batch's first message.
pub const FIXED_BATCH_DELAY: Duration = Duration::from_millis(40);

/// Capacity of the outbound queue to one peer, in messages: 65,536. What happens when it is
/// full is the [`Overflow`](crate::Overflow) reaction.
pub const OUTBOUND_CAPACITY: usize = 64 * 1024;

/// How long a handshake may take before the connection is dropped: 5 s.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A heartbeat is written when nothing else was written for this long: 1 s (Akka's
/// `heartbeat-interval`).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

/// The phi value above which a silent peer is declared down: 10 (Akka's remote watch
/// `threshold`).
pub const PHI_THRESHOLD: f64 = 10.0;

/// The phi-accrual detector keeps this many inter-arrival samples: 200 (Akka's
/// `max-sample-size`).
pub const PHI_MAX_SAMPLES: usize = 200;

/// The smallest standard deviation the detector assumes: 100 ms (Akka's
/// `min-std-deviation`), so that a perfectly regular peer is not declared down at its
/// first late heartbeat.
pub const PHI_MIN_STD_DEVIATION: Duration = Duration::from_millis(100);

/// A pause the detector tolerates on top of the mean interval: 3 s (Akka cluster's
/// `acceptable-heartbeat-pause`).
pub const ACCEPTABLE_HEARTBEAT_PAUSE: Duration = Duration::from_secs(3);

/// The first wait before reconnecting to a peer this node dialled: 100 ms; it doubles after
/// each failed attempt...
pub const RECONNECT_MIN_BACKOFF: Duration = Duration::from_millis(100);
/// ... up to 5 s.
pub const RECONNECT_MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The heartbeat interval of
/// [`NodeConfig::fast_failure_detection`](crate::NodeConfig::fast_failure_detection), a
/// preset for peers on one LAN: 100 ms. With the four settings below, a peer that falls
/// silent is declared down about 0.9 s after its last heartbeat (with the defaults above:
/// about 4.5 s).
pub const FAST_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);
/// The preset's phi threshold: 8 (a suspicion one in a hundred million times wrong), lower
/// than [`PHI_THRESHOLD`] because its other settings already allow for a late heartbeat.
pub const FAST_PHI_THRESHOLD: f64 = 8.0;
/// The preset's samples kept: 100, ten seconds of heartbeats.
pub const FAST_PHI_MAX_SAMPLES: usize = 100;
/// The preset's smallest standard deviation assumed: 50 ms, half a heartbeat interval.
pub const FAST_PHI_MIN_STD_DEVIATION: Duration = Duration::from_millis(50);
/// The preset's acceptable pause: 500 ms, room for a collector pause or a busy I/O thread.
pub const FAST_ACCEPTABLE_HEARTBEAT_PAUSE: Duration = Duration::from_millis(500);
/// The preset's handshake (and dial) timeout: 1 s; a LAN peer answers in far less.
pub const FAST_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(1);
/// The preset's first wait before dialling a lost peer again: 50 ms; it doubles after each
/// failed attempt...
pub const FAST_RECONNECT_MIN_BACKOFF: Duration = Duration::from_millis(50);
/// ... up to 1 s.
pub const FAST_RECONNECT_MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How long a graceful [`Node::shutdown`](crate::Node::shutdown) waits for the writers to
/// flush what is queued: 5 s; what is still queued after it is counted as undeliverable.
pub const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Threads of the node's I/O runtime (tokio): 1. Readers and writers are short async tasks;
/// on a small machine a second I/O thread competes with the agents' dispatchers.
pub const IO_THREADS: usize = 1;

/// A sender writes its message to the socket itself (on its own thread, no wake-up of the
/// writer task) when the writer sleeps, nothing was written for this long (40 µs), and the
/// last batch carried one message (sparse traffic; under load the writer keeps batching).
/// The first message after a pause leaves at once, without the writer's wake-up that would
/// make up most of a quiet round trip; the ones right behind it (a burst) go to the writer,
/// which batches them, because a write per message would cost throughput under load.
/// [`NodeConfig::direct_write`](crate::NodeConfig::direct_write) changes or disables it.
pub const DIRECT_WRITE_AFTER: Duration = Duration::from_micros(40);

/// The most type declarations, and the most mailbox declarations, a peer may make on one
/// connection, and the bound of their ids: 4,096 of each. A peer declares each type it sends
/// and each mailbox name it sends to once per connection, so this covers large applications
/// while it bounds what one connection's tables can hold (about 1 MiB with the longest
/// names). More, or an id at or over it, closes the connection with a counted protocol error
/// ([`FrameError::TooManyDeclarations`](crate::FrameError::TooManyDeclarations));
/// [`NodeConfig::max_declarations`](crate::NodeConfig::max_declarations) changes it.
pub const MAX_DECLARATIONS: u32 = 4096;

/// Frames a connection's reader acts on before it lets the I/O thread serve the node's other
/// connections (it then yields and goes on): 4,096. A peer that floods the node gets one such
/// turn in each round of the I/O thread over the ready connections, so the other peers'
/// messages wait for at most that, not for the flood. It is more than one read
/// ([`READ_BUFFER_BYTES`]) holds of ordinary messages, so under real traffic a turn is one
/// read and only a flood of the smallest frames (which the idle budget also slows) meets it:
/// a smaller budget split each read's messages over several turns and woke the agents'
/// threads once per piece.
/// [`NodeConfig::read_budget`](crate::NodeConfig::read_budget) changes it.
pub const READ_BUDGET_FRAMES: usize = 4096;

/// Bytes a connection's reader asks the socket for at a time, and so the most a turn of it
/// decodes: 64 KiB. A connection's receive buffer holds at most this or, while a longer
/// frame is arriving, that frame (its declared length, capped by
/// [`NodeConfig::max_frame_bytes`](crate::NodeConfig::max_frame_bytes), plus its 4 length
/// bytes); after such a frame it shrinks back to this size.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Accepted connections a node keeps open at once, handshaking or up: 1,024. One more is
/// closed at once and counted ([`NodeStats::connections_refused`](crate::NodeStats)), so a
/// flood of half-open connections cannot exhaust the process's file descriptors; 1,024 is
/// the usual per-process descriptor limit and far above the peers of a cluster.
/// [`NodeConfig::max_connections`](crate::NodeConfig::max_connections) changes it.
pub const MAX_CONNECTIONS: usize = 1024;

/// Handshakes a node starts per second for one source address (a burst of as many is
/// allowed): 64. Attempts over it are closed before the handshake and counted
/// ([`NodeStats::handshakes_rate_limited`](crate::NodeStats)): enough for every process of a
/// host to reconnect at once after a restart, while a loop of attempts from one address
/// costs the node an accept and a close each.
/// [`NodeConfig::handshakes_per_second`](crate::NodeConfig::handshakes_per_second) changes it.
pub const HANDSHAKES_PER_SECOND: u32 = 64;

/// Idle frames a connection may send per second (a burst of as many is allowed): 16,384.
/// Idle frames hand nothing to a local mailbox: heartbeats, `Ack`s with nothing new,
/// messages refused or undeliverable here. A well-behaved peer sends a heartbeat a second
/// and its dead letters only as fast as its senders make mistakes, so it never comes near;
/// a peer flooding them makes its reader pause (`NodeStats::idle_pauses`) and its socket
/// fill, so the flood costs the node little more than this many frames a second.
/// [`NodeConfig::idle_frames_per_second`](crate::NodeConfig::idle_frames_per_second)
/// changes it.
pub const IDLE_FRAMES_PER_SECOND: u32 = 16_384;

/// Source addresses whose handshake rate a node remembers: 4,096. Beyond that, addresses
/// not seen for [`SOURCE_FORGET_AFTER`] are forgotten; if none is, a new address is refused
/// as over its rate, so the table stays bounded under a flood from many addresses.
pub const MAX_SOURCES: usize = 4096;

/// How long a source address without a handshake stays in the rate table: 10 s, longer than
/// the one-second window its rate is counted in.
pub const SOURCE_FORGET_AFTER: Duration = Duration::from_secs(10);

/// Warnings a connection (or, before its handshake, a source address) may log per
/// [`WARNING_WINDOW`]: 10. Later ones in the window are counted
/// ([`NodeStats::warnings_suppressed`](crate::NodeStats)) and the next warning logged says how
/// many, so a peer repeating a mistake cannot fill the log.
pub const WARNINGS_PER_WINDOW: u32 = 10;

/// The window of [`WARNINGS_PER_WINDOW`]: 10 s.
pub const WARNING_WINDOW: Duration = Duration::from_secs(10);

/// Refusals of access ([`Access`](crate::Access)) a connection's reader keeps for its writer
/// to report to the sending peer, as runs of one mailbox and type: 4,096. A peer that makes
/// more pile up (it does not read what this node writes) is disconnected, a counted protocol
/// error, so the backlog stays bounded.
pub const MAX_PENDING_DENIALS: usize = 4096;

/// The longest node, type or mailbox name accepted on the wire, in bytes: 256.
pub const MAX_NAME_BYTES: usize = 256;
