//! A connection's write side: the writer task, which takes what the senders queued and
//! writes it in batches (and the heartbeats), and the senders' direct writes.
//!
//! The writer task is not the only writer: a sender whose message finds the writer asleep,
//! the connection quiet and the last batch a single message writes it to the socket itself
//! (`try_direct_write`), saving the writer's wake-up (see [`DIRECT_WRITE_AFTER`](crate::defaults::DIRECT_WRITE_AFTER)).
//! Whoever holds the write state (a mutex, taken with `try_lock` by senders) pops, encodes
//! and writes, so bytes still leave in queue order. A sender on a cohort worker does either
//! only when its turn ends ([`flush_sent`] as the peer's turn-end hook), so that the write
//! carries everything the turn sent.

use crate::config::Batching;
use crate::connection::{ConnState, lost};
use crate::frame;
use crate::node::NodeShared;
use crate::peer::PeerShared;
use crate::stats::Counters;
use cohort::DeliveryFailure;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;

/// The write half of a TLS connection, owned by its writer task.
pub(crate) type TlsWriteHalf = tokio::io::WriteHalf<crate::tls::TlsStream>;

/// The socket's write half and what is being written. Whoever holds `state` (the writer
/// task, or a sender writing directly) pops the queue, encodes and writes; bytes leave in
/// the order they were appended.
pub(crate) struct WriteSide {
    /// The plain socket's write half; `None` under TLS, where the writer task owns it.
    wr: Option<OwnedWriteHalf>,
    state: std::sync::Mutex<WriteState>,
    /// When the last write ended, in nanoseconds since `epoch`.
    last_write_ns: std::sync::atomic::AtomicU64,
    /// How many messages the last batch carried: senders write directly only after a
    /// batch of one (sparse traffic); under load the writer keeps batching.
    last_batch: std::sync::atomic::AtomicU64,
    epoch: Instant,
}

pub(crate) struct WriteState {
    buf: Vec<u8>,
    declared: Declared,
    /// What was written and not acknowledged yet.
    pub(crate) unacked: crate::ack::Unacked,
    /// Bye was written: nothing may follow it (a late sender's message stays queued and is
    /// counted as undeliverable when the node stops).
    closed: bool,
}

impl WriteSide {
    pub(crate) fn new(wr: Option<OwnedWriteHalf>) -> Self {
        Self {
            wr,
            state: std::sync::Mutex::new(WriteState {
                buf: Vec::with_capacity(64 * 1024),
                declared: Declared {
                    types: Vec::new(),
                    mboxes: Vec::new(),
                },
                closed: false,
                unacked: crate::ack::Unacked::default(),
            }),
            last_write_ns: std::sync::atomic::AtomicU64::new(0),
            last_batch: std::sync::atomic::AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    pub(crate) fn lock_state(&self) -> std::sync::MutexGuard<'_, WriteState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
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

/// Appends one queued message to the batch (with its declarations the first time); returns
/// whether it went in (a codec failure or an oversized frame is a dead letter instead, and
/// so is a message taken after the connection's end was counted).
fn encode_one(peer: &PeerShared, st: &mut WriteState, o: crate::outbound::Outbound) -> bool {
    let node = &*peer.node;
    let entry = node.registry.entry(o.entry);
    if st.unacked.settled {
        node.refuse(o.msg, DeliveryFailure::NodeDown);
        return false;
    }
    let (declared, buf) = (&mut st.declared, &mut st.buf);
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
    let (encoded, ask) = match &entry.ask {
        None => ((entry.encode)(&o.msg, buf), None),
        Some(ask) => {
            let id = node.asks.next_id();
            (
                (ask.encode)(&o.msg, id, &node.reply_to, buf),
                Some((ask, id)),
            )
        }
    };
    let len = frame::finish(buf, start);
    match encoded {
        Ok(()) if len <= node.config.max_frame_bytes as usize => {
            st.unacked.record(o.entry);
            // Waiting before its bytes leave: the reply cannot overtake it.
            if let Some((ask, id)) = ask
                && let Some(responder) = (ask.take)(&o.msg)
            {
                node.asks.insert(id, peer, responder);
            }
            true
        }
        Ok(()) => {
            buf.truncate(start);
            tracing::warn!(peer = %peer.name, message_type = entry.type_name, len,
                max = node.config.max_frame_bytes, "message over the maximum frame size: not sent");
            node.refuse(o.msg, DeliveryFailure::RemoteCodec);
            false
        }
        Err(e) => {
            buf.truncate(start);
            tracing::warn!(peer = %peer.name, message_type = entry.type_name, error = %e,
                "message did not encode: not sent");
            node.refuse(o.msg, DeliveryFailure::RemoteCodec);
            false
        }
    }
}

/// Puts the `Ack` the peer is owed (if any) into the batch, and forgets what the peer
/// acknowledged: one load of each counter per batch. `carried`: the write carries other
/// frames (messages, a heartbeat, `Bye`); without them the `Ack` goes only when it cannot
/// wait for them ([`AckState::due_alone`](crate::ack::AckState::due_alone)), so a reply
/// never costs a write of its own for the `Ack` in front of it.
#[inline]
fn put_ack(conn: &ConnState, st: &mut WriteState, carried: bool) {
    if st.closed {
        return;
    }
    if conn.denied_waiting.load(Ordering::Acquire) {
        crate::denial::put_denials(conn, &mut st.buf);
    } else if let Some(received) = conn.ack.owed()
        && (carried || conn.ack.due_alone(received))
    {
        frame::encode_ack(&mut st.buf, received);
        conn.ack.sent.store(received, Ordering::Relaxed);
    }
    st.unacked.trim(conn.ack.acked.load(Ordering::Acquire));
}

/// Pops what is queued into `st.buf` (adaptive caps), with the `Ack` owed; returns how many
/// messages.
fn fill_adaptive(
    peer: &PeerShared,
    conn: &ConnState,
    st: &mut WriteState,
    max_messages: usize,
    max_bytes: usize,
) -> u64 {
    let first = peer.queue.pop_held();
    put_ack(conn, st, first.is_some());
    let Some(first) = first else {
        return 0;
    };
    let mut n = encode_one(peer, st, first) as u64;
    let mut popped = 1;
    while popped < max_messages && st.buf.len() < max_bytes {
        match peer.queue.pop_held() {
            Some(o) => {
                popped += 1;
                n += encode_one(peer, st, o) as u64;
            }
            None => break,
        }
    }
    peer.queue.release(popped);
    n
}

/// Counts a batch made for the socket: `n` messages; `bytes`, whether it holds any frame
/// (an `Ack`, a heartbeat or `Bye` alone is a write too).
#[inline]
fn count_batch(peer: &PeerShared, conn: &ConnState, n: u64, bytes: bool) {
    let counters = &peer.node.counters;
    if bytes {
        Counters::add(&counters.writes, 1);
    }
    if n > 0 {
        conn.write.last_batch.store(n, Ordering::Relaxed);
        Counters::add(&counters.messages_out, n);
        peer.queue.signal_space();
    }
}

/// Writes as much of `st.buf` as the socket takes now; `Ok(true)` when all of it went.
fn try_flush(conn: &ConnState, st: &mut WriteState, node: &NodeShared) -> Result<bool, String> {
    let Some(wr) = &conn.write.wr else {
        return Ok(st.buf.is_empty());
    };
    while !st.buf.is_empty() {
        match wr.try_write(&st.buf) {
            Ok(w) => {
                Counters::add(&node.counters.bytes_out, w as u64);
                st.buf.drain(..w);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e.to_string()),
        }
    }
    conn.write
        .last_write_ns
        .store(conn.write.now_ns(), Ordering::Relaxed);
    Ok(true)
}

/// A sender's attempt to write what is queued itself, when the writer task sleeps, the
/// connection has been quiet for [`NodeConfig::direct_write`](crate::NodeConfig::direct_write)
/// and the last batch carried one message.
/// Returns false when it did not (the caller then wakes the writer).
pub(crate) fn try_direct_write(peer: &PeerShared) -> bool {
    let Batching::Adaptive {
        max_messages,
        max_bytes,
    } = peer.node.config.batching
    else {
        return false;
    };
    let Some(quiet) = peer.node.config.direct_write else {
        return false;
    };
    if peer.closing.load(Ordering::Acquire) {
        return false;
    }
    let Some(conn) = peer.conn.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
        return false;
    };
    if conn.dead.load(Ordering::Acquire)
        || conn.write.wr.is_none()
        || conn.write.last_batch.load(Ordering::Relaxed) > 1
        || conn
            .write
            .now_ns()
            .saturating_sub(conn.write.last_write_ns.load(Ordering::Relaxed))
            < quiet.as_nanos() as u64
    {
        return false;
    }
    let Ok(mut st) = conn.write.state.try_lock() else {
        return false;
    };
    if st.closed || st.unacked.settled {
        return false;
    }
    let node = &*peer.node;
    let before = st.buf.len();
    let n = fill_adaptive(peer, &conn, &mut st, max_messages, max_bytes);
    count_batch(peer, &conn, n, st.buf.len() > before);
    match try_flush(&conn, &mut st, node) {
        Ok(true) => true,
        // The socket is full (the writer will wait until it drains), or failed (the writer
        // or the reader will see it): either way, the writer takes over.
        Ok(false) | Err(_) => false,
    }
}

/// A send found the writer asleep. Under adaptive batching, on a cohort worker, what it
/// queued goes out when the worker's turn ends, with the rest of the turn's sends, unless a
/// full batch (or half the queue) already waits: then at once, so that a handler sending a
/// stream neither holds it nor fills the queue. Elsewhere, and under the other policies
/// (which batch in the writer alone), at once.
pub(crate) fn sent_while_parked(peer: &Arc<PeerShared>) {
    let config = &peer.node.config;
    let hold_up_to = match config.batching {
        Batching::Adaptive { max_messages, .. } => max_messages.min(config.outbound_capacity / 2),
        _ => 0,
    };
    if peer.queue.len() >= hold_up_to || !cohort::dispatcher::turn_end::defer(peer) {
        flush_sent(peer);
    }
}

/// What the senders queued while the writer slept goes out: written here when the
/// connection allows a direct write, else by the writer, woken.
pub(crate) fn flush_sent(peer: &PeerShared) {
    if !try_direct_write(peer) {
        peer.queue.wake();
    }
}

impl cohort::dispatcher::turn_end::TurnEnd for PeerShared {
    fn turn_ended(&self) {
        flush_sent(self)
    }
}

/// Writes a batch taken from the write state to the TLS session (the writer task alone
/// writes under TLS), then gives the buffer back for reuse.
async fn write_tls(
    conn: &ConnState,
    node: &NodeShared,
    wr: &mut TlsWriteHalf,
    mut out: Vec<u8>,
) -> Result<(), String> {
    if !out.is_empty() {
        wr.write_all(&out).await.map_err(|e| e.to_string())?;
        wr.flush().await.map_err(|e| e.to_string())?;
        Counters::add(&node.counters.bytes_out, out.len() as u64);
        conn.write
            .last_write_ns
            .store(conn.write.now_ns(), Ordering::Relaxed);
    }
    out.clear();
    let mut st = conn.write.state.lock().unwrap_or_else(|e| e.into_inner());
    if st.buf.is_empty() && st.buf.capacity() < out.capacity() {
        st.buf = out;
    }
    Ok(())
}

/// The connection's writer task: writes what the senders queue, in batches, and the
/// heartbeats; waits for room when the socket is full. Under TLS it owns the write half
/// (`tls`) and is the only writer.
pub(crate) async fn writer(
    peer: Arc<PeerShared>,
    conn: Arc<ConnState>,
    mut tls: Option<TlsWriteHalf>,
) {
    let node = peer.node.clone();
    let mut ended = conn.ended.subscribe();
    let hb_every = node.config.heartbeat_interval;
    let mut next_hb = Instant::now() + hb_every;
    let batching = node.config.batching;
    let result: Result<(), String> = async {
        loop {
            if conn.dead.load(Ordering::Acquire) {
                return Ok(());
            }
            // Fixed thresholds: the batch fills until its count, its bytes or its timer
            // (senders never write directly under this policy: the writer alone encodes).
            let mut staged = 0u64;
            if let Batching::Fixed {
                messages,
                bytes,
                delay,
            } = batching
                && !conn.ack.peer_bye.load(Ordering::Acquire)
                && !conn.write.lock_state().closed
                && let Some(first) = peer.queue.pop()
            {
                let deadline = tokio::time::Instant::now() + delay;
                let mut next = Some(first);
                loop {
                    if let Some(o) = next.take() {
                        let mut st = conn.write.state.lock().unwrap_or_else(|e| e.into_inner());
                        let st = &mut *st;
                        staged += encode_one(&peer, st, o) as u64;
                        if staged as usize >= messages || st.buf.len() >= bytes {
                            break;
                        }
                    }
                    match peer.queue.pop() {
                        Some(o) => next = Some(o),
                        None => {
                            if tokio::time::timeout_at(deadline, peer.queue.park())
                                .await
                                .is_err()
                            {
                                break;
                            }
                        }
                    }
                }
            }
            // The peer said Bye: only its last Ack goes, then the connection ends.
            let peer_bye = conn.ack.peer_bye.load(Ordering::Acquire);
            let (tls_batch, flushed, idle, finished) = {
                let mut st = conn.write.lock_state();
                let st = &mut *st;
                let before = st.buf.len();
                let mut n = 0u64;
                match batching {
                    // After Bye nothing more is taken from the queue.
                    _ if st.closed || peer_bye || st.unacked.settled => put_ack(&conn, st, true),
                    Batching::Adaptive {
                        max_messages,
                        max_bytes,
                    } => n += fill_adaptive(&peer, &conn, st, max_messages, max_bytes),
                    Batching::PerMessage => {
                        // The next message once the last one's bytes are all out, with the
                        // Ack in the same write.
                        let next = if st.buf.is_empty() {
                            peer.queue.pop()
                        } else {
                            None
                        };
                        put_ack(&conn, st, next.is_some());
                        if let Some(o) = next {
                            n += encode_one(&peer, st, o) as u64;
                        }
                    }
                    Batching::Fixed { .. } => {
                        put_ack(&conn, st, staged > 0);
                        n += staged;
                    }
                }
                let now = Instant::now();
                if now >= next_hb && !st.closed {
                    put_ack(&conn, st, true);
                    frame::encode_heartbeat(&mut st.buf);
                    next_hb = now + hb_every;
                }
                let closing = !st.closed
                    && !peer_bye
                    && n == 0
                    && st.buf.is_empty()
                    && peer.queue.is_empty()
                    && peer.closing.load(Ordering::Acquire);
                if closing {
                    // The last Ack before Bye: the peer counts nothing it sent here in doubt.
                    put_ack(&conn, st, true);
                    frame::encode_bye(&mut st.buf);
                    st.closed = true;
                }
                count_batch(&peer, &conn, n, n > 0 || st.buf.len() > before);
                let done = st.closed || peer_bye;
                if tls.is_some() {
                    // Written below, outside the lock.
                    let out = std::mem::take(&mut st.buf);
                    let idle = out.is_empty() && n == 0;
                    (Some((out, done, st.unacked.written)), true, idle, None)
                } else {
                    let flushed = try_flush(&conn, st, &node)?;
                    let finished = (done && flushed).then_some(st.unacked.written);
                    (None, flushed, st.buf.is_empty() && n == 0, finished)
                }
            };
            if let Some(written) = finished {
                bye_acked(&conn, &node, peer_bye, written).await;
                return Ok(());
            }
            if let (Some(wr), Some((out, done, written))) = (tls.as_mut(), tls_batch) {
                write_tls(&conn, &node, wr, out).await?;
                if done {
                    bye_acked(&conn, &node, peer_bye, written).await;
                    return Ok(());
                }
            }
            if !flushed {
                if let Some(wr) = &conn.write.wr {
                    wr.writable().await.map_err(|e| e.to_string())?;
                }
            } else if idle
                && peer.queue.is_empty()
                // Closing with bytes just flushed (a heartbeat, an Ack): go round again to
                // write Bye, not park until a heartbeat that would put bytes before it again.
                && !peer.closing.load(Ordering::Acquire)
            {
                tokio::select! {
                    _ = peer.queue.park() => {}
                    _ = tokio::time::sleep_until(next_hb.into()) => {}
                    _ = ended.wait_for(|d| *d) => return Ok(()),
                }
            }
        }
    }
    .await;
    match result {
        Ok(()) if conn.ack.peer_bye.load(Ordering::Acquire) => {
            lost(&peer, &conn, "the peer shut down (Bye)".into());
        }
        Ok(()) if peer.closing.load(Ordering::Acquire) => {
            // Graceful: everything queued was written, then Bye.
            lost(&peer, &conn, "this node shut down".into());
        }
        Ok(()) => {}
        Err(e) => lost(&peer, &conn, format!("write failed: {e}")),
    }
}

/// After this side's `Bye`, waits (at most the shutdown flush timeout) for the peer's last
/// `Ack` of the `written` messages, so that a graceful close leaves nothing in doubt. After
/// the peer's `Bye` (`peer_bye`) the last `Ack` was just written: nothing to wait for.
async fn bye_acked(conn: &ConnState, node: &NodeShared, peer_bye: bool, written: u64) {
    if peer_bye {
        return;
    }
    let deadline = tokio::time::Instant::now() + node.config.shutdown_flush_timeout;
    let mut ended = conn.ended.subscribe();
    tokio::select! {
        _ = conn.ack.wait_for(written, deadline) => {}
        _ = ended.wait_for(|d| *d) => {}
    }
}
