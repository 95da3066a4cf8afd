//! One TCP connection to a peer: what makes it (install), what ends it (node-down, queued
//! messages counted as undeliverable, reconnection with backoff). Its two tasks are in
//! [`writer`](crate::writer) (batching, heartbeats, the senders' direct writes) and
//! [`reader`](crate::reader) (decoding, delivery to exported mailboxes, failure detection).
//!
//! Two tasks, not one: a single task that both reads and writes gives no more throughput
//! and makes a round trip longer, since a read waits behind the write in progress.

use crate::ack::AckState;
use crate::peer::{CLOSED, DOWN, PeerShared, UP};
use crate::stats::Counters;
use crate::tls::Stream;
use crate::writer::WriteSide;
use crate::{NodeDown, NodeUp};
use cohort::DeliveryFailure;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::watch;

/// Shared by a connection's reader, its writer and the senders: whether it ended, the
/// socket's write side and the acknowledgements.
pub(crate) struct ConnState {
    pub(crate) dead: AtomicBool,
    pub(crate) ended: watch::Sender<bool>,
    pub(crate) write: WriteSide,
    pub(crate) ack: AckState,
    /// Messages of the peer this node refused ([`Access`](crate::Access)), in the order
    /// read, for the writer to report right before the `Ack` that covers them.
    pub(crate) denied: std::sync::Mutex<std::collections::VecDeque<crate::denial::Denial>>,
    /// Set when `denied` got entries: one load per batch tells the writer to look.
    pub(crate) denied_waiting: AtomicBool,
}

impl ConnState {
    fn new(wr: Option<OwnedWriteHalf>) -> Self {
        Self {
            dead: AtomicBool::new(false),
            ended: watch::Sender::new(false),
            write: WriteSide::new(wr),
            ack: AckState::default(),
            denied: Default::default(),
            denied_waiting: AtomicBool::new(false),
        }
    }

    /// Counts what was written on the connection and not acknowledged as in doubt, once,
    /// and stops any further write on it; returns how many.
    pub(crate) fn settle(&self, node: &crate::node::NodeShared) -> u64 {
        let mut st = self.write.lock_state();
        st.unacked
            .settle(self.ack.acked.load(Ordering::Acquire), node)
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

/// What the connection's two tasks get of the stream.
enum Halves {
    Plain(tokio::net::tcp::OwnedReadHalf),
    Tls(
        tokio::io::ReadHalf<crate::tls::TlsStream>,
        crate::writer::TlsWriteHalf,
    ),
}

/// Makes `stream` the peer's connection: starts its writer and reader, marks the peer up
/// and publishes [`NodeUp`]. `leftover` holds bytes read past the handshake; `admission`, an
/// accepted connection's place under the node's cap.
pub(crate) fn install(
    peer: &Arc<PeerShared>,
    stream: Stream,
    leftover: Vec<u8>,
    admission: Option<crate::guard::Admission>,
) {
    let node = &peer.node;
    // The plain write half lives in the connection (senders may write directly); the TLS
    // one belongs to the writer task alone.
    let (conn, halves) = match stream {
        Stream::Plain(tcp) => {
            let (rd, wr) = tcp.into_split();
            (Arc::new(ConnState::new(Some(wr))), Halves::Plain(rd))
        }
        Stream::Tls(tls) => {
            let (rd, wr) = tokio::io::split(*tls);
            (Arc::new(ConnState::new(None)), Halves::Tls(rd, wr))
        }
    };
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
    // Started once the connection is the peer's: a reader that fails at once finds it there.
    match halves {
        Halves::Plain(rd) => {
            node.handle
                .spawn(crate::writer::writer(peer.clone(), conn.clone(), None));
            node.handle.spawn(crate::reader::reader(
                peer.clone(),
                conn,
                rd,
                leftover,
                admission,
            ));
        }
        Halves::Tls(rd, wr) => {
            node.handle
                .spawn(crate::writer::writer(peer.clone(), conn.clone(), Some(wr)));
            node.handle.spawn(crate::reader::reader(
                peer.clone(),
                conn,
                rd,
                leftover,
                admission,
            ));
        }
    }
    tracing::info!(node = %node.config.name, peer = %peer.name, "node up");
    if node.events.has_subscribers::<NodeUp>() {
        node.events.send(NodeUp {
            node: peer.name.clone(),
        });
    }
    node.peer_changed();
}

/// Ends `conn` (once): what it wrote and the peer did not acknowledge is in doubt, the peer
/// is down, its queued messages are undeliverable, subscribers hear [`NodeDown`], a peer
/// this node dialled is dialled again with backoff, and one that dialled this node is
/// forgotten if nothing holds it.
pub(crate) fn lost(peer: &Arc<PeerShared>, conn: &Arc<ConnState>, reason: String) {
    if !conn.end() {
        return;
    }
    let node = &peer.node;
    // Before anything else: a replaced connection's writes are in doubt too.
    let in_doubt = conn.settle(node);
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
    // Requests written on it: their replies would have come back on it.
    node.asks
        .fail(Some(peer.as_ref()), cohort::RequestError::InDoubt);
    Counters::add(&node.counters.nodes_down, 1);
    tracing::warn!(node = %node.config.name, peer = %peer.name, %reason, undeliverable, in_doubt, "node down");
    if node.events.has_subscribers::<NodeDown>() {
        node.events.send(NodeDown {
            node: peer.name.clone(),
            reason,
            undeliverable,
            in_doubt,
        });
    }
    node.peer_changed();
    if !closed
        && !node.shutting_down.load(Ordering::Acquire)
        && let Some(addr) = peer.dial_addr.clone()
    {
        node.handle.spawn(reconnect(peer.clone(), addr));
    }
    node.forget_if_unused(peer);
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
                install(&peer, stream, leftover, None);
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
