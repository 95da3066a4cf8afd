//! A connection's read side: the reader task decodes frames as they arrive, hands each
//! message to the exported mailbox it names (the receiving agents' dispatchers run the
//! handlers), and watches the peer's heartbeats with the phi-accrual detector.

use crate::connection::{ConnState, lost};
use crate::defaults::ACK_EVERY;
use crate::frame::{self, Frame, FrameError};
use crate::node::NodeShared;
use crate::peer::PeerShared;
use crate::phi::PhiAccrual;
use crate::stats::Counters;
use cohort::{DeliveryFailure, Mbox};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::io::AsyncRead;
use tokio::io::AsyncReadExt;

/// A connection's view of what the peer declared.
#[derive(Default)]
pub(crate) struct Inbound {
    /// Peer type id -> local registry entry (`None`: a name this node does not know).
    types: Vec<Option<Option<u32>>>,
    /// Peer mailbox id -> (name, the exported mailbox once resolved).
    mboxes: Vec<Option<(Box<str>, Option<Mbox>)>>,
    /// The highest count of this side's messages the peer acknowledged.
    acked: u64,
}

/// A reason to close the connection.
#[derive(Debug)]
pub(crate) enum ProtocolError {
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
                // A request still tells its asker why.
                if entry.ask.is_some()
                    && let Ok(msg) = (entry.decode)(payload)
                {
                    msg.discard(DeliveryFailure::NotExported);
                }
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
        Frame::Ack { received } => inbound.acked = inbound.acked.max(received),
        Frame::Bye => return Ok(false),
        Frame::Hello { .. } => return Err(ProtocolError::Unexpected("Hello")),
        Frame::Welcome { .. } => return Err(ProtocolError::Unexpected("Welcome")),
        Frame::Refuse { .. } => return Err(ProtocolError::Unexpected("Refuse")),
    }
    Ok(true)
}

/// What one pass over the receive buffer did.
pub(crate) struct Turn {
    /// Bytes of the frames decoded (a `Bye`, or a frame whose handling failed, included).
    pub(crate) consumed: usize,
    /// `Message` frames among them.
    pub(crate) messages: u64,
    /// Whether the peer said `Bye`.
    pub(crate) bye: bool,
    /// Why the connection must close, if it must.
    pub(crate) error: Option<ProtocolError>,
}

/// Acts on every complete frame at the start of `buf`, stopping at `Bye` or an error.
pub(crate) fn decode_turn(
    node: &Arc<NodeShared>,
    inbound: &mut Inbound,
    detector: &mut PhiAccrual,
    buf: &[u8],
) -> Turn {
    let max = node.config.max_frame_bytes;
    let mut at = 0;
    let mut bye = false;
    let mut err = None;
    // Counted once per read, not per message (one atomic add on the receive path).
    let mut messages = 0u64;
    // Mailbox references in these messages resolve against this node.
    let decoding = crate::mbox_ref::decoding_for(node.clone());
    loop {
        match frame::decode(&buf[at..], max) {
            Ok(Some((f, n))) => {
                at += n;
                messages += matches!(f, Frame::Message { .. }) as u64;
                match handle(node, inbound, detector, f) {
                    Ok(true) => {}
                    Ok(false) => {
                        bye = true;
                        break;
                    }
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                err = Some(ProtocolError::Frame(e));
                break;
            }
        }
    }
    drop(decoding);
    Turn {
        consumed: at,
        messages,
        bye,
        error: err,
    }
}

/// The connection's reader: decodes frames as they arrive and hands each message to the
/// exported mailbox it names; watches the peer's heartbeats.
pub(crate) async fn reader<R: AsyncRead + Unpin>(
    peer: Arc<PeerShared>,
    conn: Arc<ConnState>,
    mut rd: R,
    mut buf: Vec<u8>,
) {
    let node = peer.node.clone();
    let mut ended = conn.ended.subscribe();
    let mut inbound = Inbound::default();
    let mut detector = PhiAccrual::new(node.config.phi, Instant::now());
    let mut check = tokio::time::interval(
        (node.config.heartbeat_interval / 2).max(std::time::Duration::from_millis(10)),
    );
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    buf.reserve(64 * 1024);
    // Messages read on this connection, and that count when the writer was last nudged to
    // acknowledge it.
    let (mut received, mut nudged) = (0u64, 0u64);
    let mut acked = 0u64;
    let reason: String = loop {
        let Turn {
            consumed: at,
            messages,
            bye,
            error: err,
        } = decode_turn(&node, &mut inbound, &mut detector, &buf);
        if messages > 0 {
            Counters::add(&node.counters.messages_in, messages);
            received += messages;
            conn.ack.received.store(received, Ordering::Release);
            // A one-way stream: the writer has nothing to carry the Ack, so it is woken to
            // write it alone, once per ACK_EVERY messages.
            if received - nudged >= ACK_EVERY
                && received - conn.ack.sent.load(Ordering::Relaxed) >= ACK_EVERY
            {
                nudged = received;
                peer.queue.nudge();
            }
        }
        if inbound.acked > acked {
            acked = inbound.acked;
            conn.ack.peer_acked(acked);
        }
        if let Some(e) = err {
            Counters::add(&node.counters.protocol_errors, 1);
            tracing::warn!(node = %node.config.name, peer = %peer.name, error = %e, "protocol error: closing the connection");
            break format!("protocol error: {e}");
        }
        if bye {
            // The writer sends the last Ack, then ends the connection.
            conn.ack.peer_bye.store(true, Ordering::Release);
            peer.queue.nudge();
            return;
        }
        buf.drain(..at);
        // Room for the next frame: its declared size (capped by the maximum, checked by
        // decode above), or 64 KiB of whatever comes.
        let want = match buf.first_chunk::<4>() {
            Some(l) => (u32::from_le_bytes(*l) as usize + 4).saturating_sub(buf.len()),
            None => 0,
        }
        .max(64 * 1024);
        buf.reserve(want);
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => break "connection closed by the peer".into(),
                Ok(got) => Counters::add(&node.counters.bytes_in, got as u64),
                Err(e) => break format!("read failed: {e}"),
            },
            _ = check.tick() => {
                let now = Instant::now();
                if !detector.is_available(now) {
                    break format!("failure detector: no heartbeat for {:?} (phi {:.1} over {})",
                        detector.since_last(now),
                        detector.phi(now), node.config.phi.threshold);
                }
            }
            _ = ended.wait_for(|d| *d) => return,
        }
    };
    lost(&peer, &conn, reason);
}
