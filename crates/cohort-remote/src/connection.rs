//! One TCP connection to a peer: its writer task (adaptive batching), its reader task
//! (frame decoding, delivery to exported mailboxes, failure detection), and what happens
//! when it ends (node-down, undeliverable messages, reconnection).

use crate::config::Batching;
use crate::frame::{self, Frame, FrameError};
use crate::node::NodeShared;
use crate::peer::{CLOSED, DOWN, PeerShared, UP};
use crate::phi::PhiAccrual;
use crate::stats::Counters;
use crate::{NodeDown, NodeUp};
use cohort::{DeliveryFailure, Mbox};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Shared by a connection's reader and writer: whether it ended.
pub(crate) struct ConnState {
    dead: AtomicBool,
    ended: watch::Sender<bool>,
}

impl ConnState {
    fn new() -> Self {
        Self {
            dead: AtomicBool::new(false),
            ended: watch::Sender::new(false),
        }
    }

    /// Marks the connection ended; true for the first caller only.
    fn end(&self) -> bool {
        if self.dead.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.ended.send_replace(true);
        true
    }
}

/// Makes `stream` the peer's connection: starts its writer and reader, marks the peer up
/// and publishes [`NodeUp`]. `leftover` holds bytes read past the handshake.
pub(crate) fn install(peer: &Arc<PeerShared>, stream: TcpStream, leftover: Vec<u8>) {
    let node = &peer.node;
    let conn = Arc::new(ConnState::new());
    let previous = peer
        .conn
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .replace(conn.clone());
    if let Some(old) = previous {
        // The peer dialled again while an older connection looked alive: the new one wins.
        lost(
            peer,
            &old,
            "replaced by a new connection from the same node".into(),
        );
    }
    peer.status.store(UP, Ordering::Release);
    Counters::add(&node.counters.connections, 1);
    node.handle.spawn(run(peer.clone(), conn, stream, leftover));
    tracing::info!(node = %node.config.name, peer = %peer.name, "node up");
    if node.events.has_subscribers::<NodeUp>() {
        node.events.send(NodeUp {
            node: peer.name.clone(),
        });
    }
    node.peer_changed();
}

/// Ends `conn` (once): the peer is down, its queued messages are undeliverable, subscribers
/// hear [`NodeDown`], and a peer this node dialled is dialled again with backoff.
pub(crate) fn lost(peer: &Arc<PeerShared>, conn: &Arc<ConnState>, reason: String) {
    if !conn.end() {
        return;
    }
    let node = &peer.node;
    {
        let mut current = peer.conn.lock().unwrap_or_else(|e| e.into_inner());
        match &*current {
            Some(c) if Arc::ptr_eq(c, conn) => *current = None,
            // A newer connection took over: this one's end changes nothing else.
            _ => return,
        }
    }
    let closed = peer.status.load(Ordering::Acquire) == CLOSED;
    if !closed {
        peer.status.store(DOWN, Ordering::Release);
    }
    let undeliverable = peer.drain_undeliverable(DeliveryFailure::NodeDown);
    Counters::add(&node.counters.nodes_down, 1);
    tracing::warn!(node = %node.config.name, peer = %peer.name, %reason, undeliverable, "node down");
    if node.events.has_subscribers::<NodeDown>() {
        node.events.send(NodeDown {
            node: peer.name.clone(),
            reason,
            undeliverable,
        });
    }
    node.peer_changed();
    if !closed
        && !node.shutting_down.load(Ordering::Acquire)
        && let Some(addr) = peer.dial_addr.clone()
    {
        node.handle.spawn(reconnect(peer.clone(), addr));
    }
}

/// Dials `addr` again until it answers as the same node, doubling the wait each time.
async fn reconnect(peer: Arc<PeerShared>, addr: String) {
    let node = peer.node.clone();
    let mut backoff = node.config.reconnect_min;
    loop {
        tokio::time::sleep(backoff).await;
        if node.shutting_down.load(Ordering::Acquire) || peer.is_up() {
            return;
        }
        match crate::node::dial(&node, &addr).await {
            Ok((stream, name, leftover)) if name == peer.name => {
                install(&peer, stream, leftover);
                return;
            }
            Ok((_, name, _)) => {
                tracing::warn!(peer = %peer.name, %addr, other = %name,
                    "reconnect reached another node at the same address; retrying");
            }
            Err(e) => {
                tracing::debug!(peer = %peer.name, %addr, error = %e, "reconnect failed");
            }
        }
        backoff = (backoff * 2).min(node.config.reconnect_max);
    }
}

/// The writer's per-connection state: which types and mailboxes it declared.
struct Declared {
    types: Vec<bool>,
    mboxes: Vec<bool>,
}

impl Declared {
    fn mark(v: &mut Vec<bool>, i: u32) -> bool {
        let i = i as usize;
        if v.len() <= i {
            v.resize(i + 1, false);
        }
        !std::mem::replace(&mut v[i], true)
    }
}

/// Appends one queued message to `buf` (with its declarations the first time); returns
/// whether it went in (a codec failure or an oversized frame is a dead letter instead).
fn encode_one(
    peer: &PeerShared,
    declared: &mut Declared,
    buf: &mut Vec<u8>,
    o: crate::outbound::Outbound,
) -> bool {
    let node = &*peer.node;
    let entry = node.registry.entry(o.entry);
    if Declared::mark(&mut declared.types, o.entry) {
        frame::encode_declare(buf, false, o.entry, &entry.name);
    }
    if Declared::mark(&mut declared.mboxes, o.mbox) {
        let name = peer
            .mbox_names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .names[o.mbox as usize]
            .clone();
        frame::encode_declare(buf, true, o.mbox, &name);
    }
    let start = frame::begin_message(buf, o.mbox, o.entry);
    let encoded = (entry.encode)(&o.msg, buf);
    let len = frame::finish(buf, start);
    match encoded {
        Ok(()) if len <= node.config.max_frame_bytes as usize => true,
        Ok(()) => {
            buf.truncate(start);
            tracing::warn!(peer = %peer.name, message_type = entry.type_name, len,
                max = node.config.max_frame_bytes, "message over the maximum frame size: not sent");
            node.undeliverable(entry.type_name, DeliveryFailure::RemoteCodec);
            false
        }
        Err(e) => {
            buf.truncate(start);
            tracing::warn!(peer = %peer.name, message_type = entry.type_name, error = %e,
                "message did not encode: not sent");
            node.undeliverable(entry.type_name, DeliveryFailure::RemoteCodec);
            false
        }
    }
}

/// A connection's view of what the peer declared.
#[derive(Default)]
struct Inbound {
    /// Peer type id -> local registry entry (`None`: a name this node does not know).
    types: Vec<Option<Option<u32>>>,
    /// Peer mailbox id -> (name, the exported mailbox once resolved).
    mboxes: Vec<Option<(Box<str>, Option<Mbox>)>>,
}

/// A reason to close the connection.
#[derive(Debug)]
enum ProtocolError {
    Frame(FrameError),
    UnknownTypeId(u32),
    UnknownMboxId(u32),
    Unexpected(&'static str),
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::Frame(e) => write!(f, "{e}"),
            ProtocolError::UnknownTypeId(id) => {
                write!(
                    f,
                    "message with type id {id}, never declared on this connection"
                )
            }
            ProtocolError::UnknownMboxId(id) => {
                write!(
                    f,
                    "message to mailbox id {id}, never declared on this connection"
                )
            }
            ProtocolError::Unexpected(k) => write!(f, "unexpected {k} frame after the handshake"),
        }
    }
}

fn declare<T>(v: &mut Vec<Option<T>>, id: u32, value: T) -> Result<(), ProtocolError> {
    let max = crate::defaults::MAX_DECLARATIONS;
    if id >= max {
        return Err(ProtocolError::Frame(FrameError::TooManyDeclarations {
            id,
            max,
        }));
    }
    let i = id as usize;
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(value);
    Ok(())
}

/// Acts on one frame; `Ok(false)` when the peer said Bye.
fn handle(
    node: &NodeShared,
    inbound: &mut Inbound,
    detector: &mut PhiAccrual,
    f: Frame<'_>,
) -> Result<bool, ProtocolError> {
    match f {
        Frame::Message { mbox, ty, payload } => {
            Counters::add(&node.counters.messages_in, 1);
            let entry = match inbound.types.get(ty as usize) {
                Some(Some(e)) => *e,
                _ => return Err(ProtocolError::UnknownTypeId(ty)),
            };
            let slot = match inbound.mboxes.get_mut(mbox as usize) {
                Some(Some(s)) => s,
                _ => return Err(ProtocolError::UnknownMboxId(mbox)),
            };
            let Some(entry) = entry else {
                node.env.report_dead_letter(
                    "<type unknown to this node>",
                    DeliveryFailure::NotRegisteredForRemote,
                );
                return Ok(true);
            };
            let entry = node.registry.entry(entry);
            if slot.1.is_none() {
                slot.1 = node.exported(&slot.0);
            }
            let Some(target) = &slot.1 else {
                node.env
                    .report_dead_letter(entry.type_name, DeliveryFailure::NotExported);
                return Ok(true);
            };
            match (entry.decode)(payload) {
                Ok(msg) => {
                    // A refusal here is counted by the runtime itself.
                    let _ = msg.forward(target);
                }
                Err(e) => {
                    tracing::warn!(message_type = entry.type_name, error = %e, "message did not decode");
                    node.env
                        .report_dead_letter(entry.type_name, DeliveryFailure::RemoteCodec);
                }
            }
        }
        Frame::DeclareType { id, name } => {
            let local = node.registry.index_of_name(name);
            if local.is_none() {
                tracing::warn!(
                    type_name = name,
                    "peer declared a type this node has not registered; its messages will be dead letters"
                );
            }
            declare(&mut inbound.types, id, local)?;
        }
        Frame::DeclareMbox { id, name } => {
            let mbox = node.exported(name);
            declare(&mut inbound.mboxes, id, (name.into(), mbox))?;
        }
        Frame::Heartbeat => {
            Counters::add(&node.counters.heartbeats_in, 1);
            detector.heartbeat(Instant::now());
        }
        Frame::Bye => return Ok(false),
        Frame::Hello { .. } => return Err(ProtocolError::Unexpected("Hello")),
        Frame::Welcome { .. } => return Err(ProtocolError::Unexpected("Welcome")),
        Frame::Refuse { .. } => return Err(ProtocolError::Unexpected("Refuse")),
    }
    Ok(true)
}

/// What the connection task owes the socket: encoded bytes not yet written, and the batch
/// being built under fixed thresholds.
struct Outgoing {
    buf: Vec<u8>,
    /// Bytes of `buf` already written.
    written: usize,
    declared: Declared,
    /// Fixed thresholds: messages in the open batch, and when its first one came.
    open: usize,
    opened: Option<tokio::time::Instant>,
}

impl Outgoing {
    fn pending(&self) -> bool {
        self.written < self.buf.len()
    }
}

/// Takes messages from the queue into `out` as the batching policy says; returns how many
/// and whether the batch is ready to be written.
fn fill(peer: &PeerShared, out: &mut Outgoing, batching: Batching) -> (u64, bool) {
    let mut n = 0u64;
    match batching {
        Batching::Adaptive {
            max_messages,
            max_bytes,
        } => {
            while (n as usize) < max_messages && out.buf.len() - out.written < max_bytes {
                match peer.queue.pop() {
                    Some(o) => n += encode_one(peer, &mut out.declared, &mut out.buf, o) as u64,
                    None => break,
                }
            }
            (n, true)
        }
        Batching::PerMessage => {
            // One message per write: only when the previous one is out.
            if !out.pending()
                && let Some(o) = peer.queue.pop()
            {
                n += encode_one(peer, &mut out.declared, &mut out.buf, o) as u64;
            }
            (n, true)
        }
        Batching::Fixed {
            messages,
            bytes,
            delay,
        } => {
            while out.open < messages && out.buf.len() - out.written < bytes {
                match peer.queue.pop() {
                    Some(o) => {
                        if encode_one(peer, &mut out.declared, &mut out.buf, o) {
                            n += 1;
                            out.open += 1;
                            out.opened.get_or_insert_with(tokio::time::Instant::now);
                        }
                    }
                    None => break,
                }
            }
            let due = out.open >= messages
                || out.buf.len() - out.written >= bytes
                || out.opened.is_some_and(|t| t.elapsed() >= delay);
            if due {
                out.open = 0;
                out.opened = None;
            }
            (n, due)
        }
    }
}

/// The connection's task: reads and decodes frames and hands each message to the exported
/// mailbox it names; takes queued messages, encodes them in batches and writes them; writes
/// heartbeats and watches the peer's. One task owns the socket, so frames leave in queue
/// order.
///
/// After the last bit of work it keeps polling (socket and queue) for
/// [`NodeConfig::io_spin`](crate::NodeConfig::io_spin) before it sleeps: request/response
/// traffic then finds it awake, with no thread wake-up on the way.
async fn run(peer: Arc<PeerShared>, conn: Arc<ConnState>, stream: TcpStream, mut rbuf: Vec<u8>) {
    let reason = match io_loop(&peer, &conn, &stream, &mut rbuf).await {
        Ok(()) if peer.closing.load(Ordering::Acquire) => "this node shut down".to_string(),
        Ok(()) => return,
        Err(reason) => reason,
    };
    lost(&peer, &conn, reason);
}

async fn io_loop(
    peer: &Arc<PeerShared>,
    conn: &ConnState,
    stream: &TcpStream,
    rbuf: &mut Vec<u8>,
) -> Result<(), String> {
    let node = &*peer.node;
    let max = node.config.max_frame_bytes;
    let batching = node.config.batching;
    let spin = node.config.io_spin;
    let hb_every = node.config.heartbeat_interval;
    let check_every = (hb_every / 2).max(std::time::Duration::from_millis(10));
    let mut ended = conn.ended.subscribe();
    let mut inbound = Inbound::default();
    let mut detector = PhiAccrual::new(node.config.phi, Instant::now());
    let mut out = Outgoing {
        buf: Vec::with_capacity(64 * 1024),
        written: 0,
        declared: Declared {
            types: Vec::new(),
            mboxes: Vec::new(),
        },
        open: 0,
        opened: None,
    };
    let mut next_hb = Instant::now() + hb_every;
    let mut next_check = Instant::now() + check_every;
    let mut last_work = Instant::now();
    let mut bye_written = false;
    rbuf.reserve(64 * 1024);
    loop {
        if conn.dead.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut worked = false;

        // Read what the socket has.
        reserve_for_next(rbuf);
        match stream.try_read_buf(rbuf) {
            Ok(0) => return Err("connection closed by the peer".into()),
            Ok(got) => {
                Counters::add(&node.counters.bytes_in, got as u64);
                worked = true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(format!("read failed: {e}")),
        }
        if worked || !rbuf.is_empty() {
            match decode_all(node, &mut inbound, &mut detector, rbuf, max) {
                Ok(true) => {}
                Ok(false) => return Err("the peer shut down (Bye)".into()),
                Err(e) => {
                    Counters::add(&node.counters.protocol_errors, 1);
                    tracing::warn!(node = %node.config.name, peer = %peer.name, error = %e,
                        "protocol error: closing the connection");
                    return Err(format!("protocol error: {e}"));
                }
            }
        }

        // Write what is queued (or still pending).
        let (n, due) = fill(peer, &mut out, batching);
        if n > 0 {
            Counters::add(&node.counters.writes, 1);
            Counters::add(&node.counters.messages_out, n);
            peer.queue.signal_space();
            worked = true;
        }
        let now = Instant::now();
        if now >= next_hb {
            frame::encode_heartbeat(&mut out.buf);
            next_hb = now + hb_every;
        }
        if !bye_written
            && !out.pending()
            && out.open == 0
            && peer.closing.load(Ordering::Acquire)
            && peer.queue.len() == 0
        {
            frame::encode_bye(&mut out.buf);
            bye_written = true;
        }
        if out.pending() && (due || out.open == 0) {
            match stream.try_write(&out.buf[out.written..]) {
                Ok(w) => {
                    Counters::add(&node.counters.bytes_out, w as u64);
                    out.written += w;
                    if out.written == out.buf.len() {
                        out.buf.clear();
                        out.written = 0;
                        if bye_written {
                            return Ok(());
                        }
                    }
                    worked = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("write failed: {e}")),
            }
        }

        // The failure detector.
        if now >= next_check {
            next_check = now + check_every;
            if !detector.is_available(now) {
                return Err(format!(
                    "failure detector: no heartbeat for {:?} (phi {:.1} over {})",
                    detector.since_last(now),
                    detector.phi(now),
                    node.config.phi.threshold
                ));
            }
        }

        if worked {
            last_work = now;
            continue;
        }
        if now.duration_since(last_work) < spin {
            // Still within the spin window: let the runtime poll its I/O driver (which
            // refreshes the socket's readiness), then look again.
            tokio::task::yield_now().await;
            continue;
        }

        // Sleep until the socket, the queue, a timer or the end says there is work.
        let wake_at = {
            let mut t = next_hb.min(next_check);
            if let Some(opened) = out.opened
                && let Batching::Fixed { delay, .. } = batching
            {
                t = t.min((opened + delay).into_std());
            }
            t
        };
        let writable_needed = out.pending() && (due || out.open == 0);
        let queue_can_help =
            !writable_needed && !matches!(batching, Batching::PerMessage if out.pending());
        tokio::select! {
            r = stream.readable() => r.map_err(|e| format!("read failed: {e}"))?,
            r = stream.writable(), if writable_needed => r.map_err(|e| format!("write failed: {e}"))?,
            _ = peer.queue.park(), if queue_can_help => {}
            _ = tokio::time::sleep_until(wake_at.into()) => {}
            _ = ended.wait_for(|d| *d) => return Ok(()),
        }
        last_work = Instant::now();
    }
}

/// Makes room in `rbuf` for the next frame: its declared size (the decoder already refused
/// one over the maximum), or 16 KiB of whatever comes.
fn reserve_for_next(rbuf: &mut Vec<u8>) {
    let want = match rbuf.first_chunk::<4>() {
        Some(l) => (u32::from_le_bytes(*l) as usize + 4).saturating_sub(rbuf.len()),
        None => 0,
    }
    .max(16 * 1024);
    if rbuf.capacity() - rbuf.len() < want {
        rbuf.reserve(want);
    }
}

/// Decodes and handles every complete frame in `rbuf`, then drops them from it. `Ok(false)`
/// when the peer said Bye.
fn decode_all(
    node: &NodeShared,
    inbound: &mut Inbound,
    detector: &mut PhiAccrual,
    rbuf: &mut Vec<u8>,
    max: u32,
) -> Result<bool, ProtocolError> {
    let mut at = 0;
    let result = loop {
        match frame::decode(&rbuf[at..], max) {
            Ok(Some((f, n))) => {
                at += n;
                match handle(node, inbound, detector, f) {
                    Ok(true) => {}
                    other => break other,
                }
            }
            Ok(None) => break Ok(true),
            Err(e) => break Err(ProtocolError::Frame(e)),
        }
    };
    rbuf.drain(..at);
    result
}
