//! A connection's read side: the reader task decodes frames as they arrive, hands each
//! message to the exported mailbox it names (the receiving agents' dispatchers run the
//! handlers), and watches the peer's heartbeats with the phi-accrual detector.

use crate::connection::{ConnState, lost};
use crate::defaults::ACK_EVERY;
use crate::denial::Denials;
use crate::frame::{self, Frame, FrameError};
use crate::guard::{Admission, Warnings};
use crate::node::NodeShared;
use crate::peer::PeerShared;
use crate::phi::PhiAccrual;
use crate::stats::Counters;
use crate::token_bucket::TokenBucket;
use cohort::{DeliveryFailure, Mbox};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::io::AsyncRead;
use tokio::io::AsyncReadExt;

/// Where messages to one of the peer's mailbox ids go.
pub(crate) enum Target {
    /// The exported mailbox, which admits the peer.
    Mbox(Mbox),
    /// Exported, but not to the peer ([`Access`](crate::Access)): refused and reported back.
    Denied,
    /// Not exported.
    Unexported,
}

/// A mailbox the peer declared.
pub(crate) struct MboxSlot {
    name: Box<str>,
    target: Target,
    /// The exports' generation `target` was looked up at: any export, unexport or change of
    /// access since makes the next message look it up again, so a narrowed `Access` or a
    /// replaced export holds for connections that resolved the name before.
    generation: u64,
}

/// A connection's view of what the peer declared and sent.
pub(crate) struct Inbound {
    /// The peer's node name, which the exports' [`Access`](crate::Access) is checked against.
    peer: Box<str>,
    /// Peer type id -> local registry entry, or the name declared when this node does not
    /// know it.
    types: Vec<Option<Result<u32, Box<str>>>>,
    /// Peer mailbox id -> its name and where its messages go.
    mboxes: Vec<Option<MboxSlot>>,
    /// Declarations made on this connection: types, mailboxes.
    declared: (u32, u32),
    /// `Message` frames read on this connection (what this side acknowledges).
    pub(crate) received: u64,
    /// The highest count of this side's messages the peer acknowledged.
    pub(crate) acked: u64,
    /// Refusals of access, both ways.
    pub(crate) denials: Denials,
    /// This connection's warning budget.
    pub(crate) warnings: Warnings,
    /// This connection's budget of frames that hand nothing over.
    idle: TokenBucket,
}

impl Inbound {
    /// `idle_rate`: [`NodeConfig::idle_frames_per_second`](crate::NodeConfig::idle_frames_per_second).
    pub(crate) fn new(peer: &str, idle_rate: u32) -> Self {
        Self {
            peer: peer.into(),
            types: Vec::new(),
            mboxes: Vec::new(),
            declared: (0, 0),
            received: 0,
            acked: 0,
            denials: Denials::default(),
            warnings: Warnings::new(),
            idle: TokenBucket::new(idle_rate, Instant::now()),
        }
    }
}

/// What acting on one frame did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handled {
    /// A message handed to a local mailbox (or refused there by the runtime, which counts
    /// it), or a frame that moves the connection on (a declaration, a new `Ack`, `Denied`).
    Useful,
    /// Nothing handed over: a heartbeat, an `Ack` with nothing new, a message refused or
    /// undeliverable here (counted). These spend the connection's idle budget.
    Idle,
    /// The peer said `Bye`.
    Bye,
}

/// A reason to close the connection.
#[derive(Debug)]
pub(crate) enum ProtocolError {
    Frame(FrameError),
    UnknownTypeId(u32),
    UnknownMboxId(u32),
    Unexpected(&'static str),
    /// A `Denied` frame that names a type this node never sends, or refuses more messages
    /// than the peer acknowledged.
    BadDenial(&'static str),
    /// Refusals piled up past [`MAX_PENDING_DENIALS`](crate::defaults::MAX_PENDING_DENIALS).
    DenialBacklog,
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
            ProtocolError::BadDenial(why) => write!(f, "Denied frame {why}"),
            ProtocolError::DenialBacklog => write!(
                f,
                "over {} refused messages wait to be reported: the peer does not read what this node writes",
                crate::defaults::MAX_PENDING_DENIALS
            ),
        }
    }
}

fn declare<T>(
    v: &mut Vec<Option<T>>,
    made: &mut u32,
    max: u32,
    id: u32,
    value: T,
) -> Result<(), ProtocolError> {
    if id >= max || *made >= max {
        return Err(ProtocolError::Frame(FrameError::TooManyDeclarations {
            id,
            max,
        }));
    }
    *made += 1;
    let i = id as usize;
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(value);
    Ok(())
}

/// Logs a warning about the peer's input unless its connection is over its budget.
macro_rules! warn_limited {
    ($node:expr, $inbound:expr, $($rest:tt)+) => {
        if let Some(suppressed) = $inbound.warnings.admit(&$node.counters, Instant::now()) {
            tracing::warn!(node = %$node.config.name, peer = %$inbound.peer, suppressed, $($rest)+);
        }
    };
}

/// Acts on one frame.
fn handle(
    node: &NodeShared,
    inbound: &mut Inbound,
    heartbeats: &mut u64,
    f: Frame<'_>,
) -> Result<Handled, ProtocolError> {
    match f {
        Frame::Message { mbox, ty, payload } => {
            let entry = match inbound.types.get(ty as usize) {
                Some(Some(e)) => e.as_ref().copied().map_err(|declared| &**declared),
                _ => return Err(ProtocolError::UnknownTypeId(ty)),
            };
            let slot = match inbound.mboxes.get_mut(mbox as usize) {
                Some(Some(s)) => s,
                _ => return Err(ProtocolError::UnknownMboxId(mbox)),
            };
            if node.exports_generation() != slot.generation {
                (slot.target, slot.generation) = node.resolve(&slot.name, &inbound.peer);
            }
            if let Target::Denied = slot.target {
                inbound.denials.refuse(mbox, ty, inbound.received + 1)?;
                Counters::add(&node.counters.access_refused, 1);
                warn_limited!(node, inbound, mailbox = %slot.name,
                    "message refused: the mailbox is not exported to this peer (Access)");
                return Ok(Handled::Idle);
            }
            let entry = match entry {
                Ok(entry) => node.registry.entry(entry),
                Err(declared) => {
                    node.env.report_declared_dead_letter(
                        declared,
                        DeliveryFailure::NotRegisteredForRemote,
                    );
                    return Ok(Handled::Idle);
                }
            };
            let Target::Mbox(target) = &slot.target else {
                node.env
                    .report_dead_letter(entry.type_name, DeliveryFailure::NotExported);
                // A request still tells its asker why.
                if entry.ask.is_some()
                    && let Ok(msg) = (entry.decode)(payload)
                {
                    msg.discard(DeliveryFailure::NotExported);
                }
                return Ok(Handled::Idle);
            };
            match (entry.decode)(payload) {
                Ok(msg) => {
                    // A refusal here is counted by the runtime itself.
                    let _ = msg.forward(target);
                    Ok(Handled::Useful)
                }
                Err(e) => {
                    warn_limited!(node, inbound, message_type = entry.type_name, error = %e,
                        "message did not decode");
                    node.env
                        .report_dead_letter(entry.type_name, DeliveryFailure::RemoteCodec);
                    Ok(Handled::Idle)
                }
            }
        }
        Frame::DeclareType { id, name } => {
            let local = node.registry.index_of_name(name);
            let max = node.config.max_declarations;
            // An unknown name is kept for the dead letters of its messages.
            let slot = local.ok_or_else(|| Box::<str>::from(name));
            declare(&mut inbound.types, &mut inbound.declared.0, max, id, slot)?;
            if local.is_none() {
                warn_limited!(
                    node,
                    inbound,
                    type_name = name,
                    "peer declared a type this node has not registered; its messages will be dead letters"
                );
            }
            Ok(Handled::Useful)
        }
        Frame::DeclareMbox { id, name } => {
            let (target, generation) = node.resolve(name, &inbound.peer);
            let slot = MboxSlot {
                name: name.into(),
                target,
                generation,
            };
            let max = node.config.max_declarations;
            declare(&mut inbound.mboxes, &mut inbound.declared.1, max, id, slot)?;
            Ok(Handled::Useful)
        }
        Frame::Heartbeat => {
            *heartbeats += 1;
            Ok(Handled::Idle)
        }
        Frame::Ack { received } => {
            // A writer acknowledges what is new, or repeats its count after the refusals it
            // reports: an Ack that is neither acknowledges nothing.
            let new = received > inbound.acked;
            inbound.acked = inbound.acked.max(received);
            // The peer's refusals it wrote before this Ack are covered by it: counted now.
            let covering = inbound.denials.covered(inbound.acked)?;
            Ok(if new || covering {
                Handled::Useful
            } else {
                Handled::Idle
            })
        }
        Frame::Denied { ty, count, .. } => {
            inbound.denials.reported(ty, count, node.registry.len())?;
            Ok(Handled::Useful)
        }
        Frame::Bye => Ok(Handled::Bye),
        Frame::Hello { .. } => Err(ProtocolError::Unexpected("Hello")),
        Frame::Welcome { .. } => Err(ProtocolError::Unexpected("Welcome")),
        Frame::Refuse { .. } => Err(ProtocolError::Unexpected("Refuse")),
    }
}

/// What one pass over the receive buffer did.
pub(crate) struct Turn {
    /// Bytes of the frames decoded (a `Bye`, or a frame whose handling failed, included).
    pub(crate) consumed: usize,
    /// `Message` frames among them that were handed over (or counted, or refused).
    pub(crate) messages: u64,
    /// Whether the peer said `Bye`.
    pub(crate) bye: bool,
    /// Why the connection must close, if it must.
    pub(crate) error: Option<ProtocolError>,
    /// The turn stopped at the read budget ([`NodeConfig::read_budget`](crate::NodeConfig::read_budget)):
    /// complete frames may be left in the buffer.
    pub(crate) more: bool,
    /// The turn stopped because the peer spent its idle budget
    /// ([`NodeConfig::idle_frames_per_second`](crate::NodeConfig::idle_frames_per_second)):
    /// the reader pauses before it acts on more.
    pub(crate) paused: bool,
}

/// Acts on the complete frames at the start of `buf`, at most the read budget of them,
/// stopping at `Bye`, an error, or the end of the idle budget.
pub(crate) fn decode_turn(
    node: &Arc<NodeShared>,
    inbound: &mut Inbound,
    detector: &mut PhiAccrual,
    buf: &[u8],
) -> Turn {
    let max = node.config.max_frame_bytes;
    let budget = node.config.read_budget;
    let mut at = 0;
    let mut bye = false;
    let mut err = None;
    let mut frames = 0;
    let mut paused = false;
    // Counted once per read, not per message (one atomic add on the receive path).
    let mut messages = 0u64;
    // Many heartbeats in one read are one sign of life: the detector hears one.
    let mut heartbeats = 0u64;
    // Mailbox references in these messages resolve against this node.
    let decoding = crate::mbox_ref::decoding_for(node.clone());
    while frames < budget {
        match frame::decode(&buf[at..], max) {
            Ok(Some((f, n))) => {
                at += n;
                frames += 1;
                let message = matches!(f, Frame::Message { .. });
                match handle(node, inbound, &mut heartbeats, f) {
                    Ok(Handled::Bye) => {
                        bye = true;
                        break;
                    }
                    Ok(handled) => {
                        if message {
                            messages += 1;
                            inbound.received += 1;
                        }
                        if handled == Handled::Idle && !inbound.idle.spend() {
                            paused = true;
                            break;
                        }
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
    if heartbeats > 0 {
        Counters::add(&node.counters.heartbeats_in, heartbeats);
        detector.heartbeat(Instant::now());
    }
    Turn {
        consumed: at,
        messages,
        bye,
        more: frames >= budget && err.is_none() && !bye,
        paused,
        error: err,
    }
}

/// The connection's reader: decodes frames as they arrive and hands each message to the
/// exported mailbox it names; watches the peer's heartbeats. `admission` is the accepted
/// connection's place under the node's cap, held until the reader ends.
pub(crate) async fn reader<R: AsyncRead + Unpin>(
    peer: Arc<PeerShared>,
    conn: Arc<ConnState>,
    mut rd: R,
    mut buf: Vec<u8>,
    admission: Option<Admission>,
) {
    let node = peer.node.clone();
    let mut counted = 0usize;
    let mut inbound = Inbound::new(&peer.name, node.config.idle_frames_per_second);
    let reason = read_loop(&peer, &conn, &mut rd, &mut buf, &mut counted, &mut inbound).await;
    let suppressed = inbound.warnings.take_suppressed();
    if suppressed > 0 {
        tracing::warn!(node = %node.config.name, peer = %peer.name, suppressed,
            "warnings about this connection were suppressed");
    }
    crate::recv_buffer::release(&node, buf, counted);
    drop(admission);
    if let Some(reason) = reason {
        lost(&peer, &conn, reason);
    }
}

/// The reader's loop; returns why the connection ends, or `None` when it ended otherwise
/// (Bye, or ended by another task).
async fn read_loop<R: AsyncRead + Unpin>(
    peer: &Arc<PeerShared>,
    conn: &Arc<ConnState>,
    rd: &mut R,
    buf: &mut Vec<u8>,
    counted: &mut usize,
    inbound: &mut Inbound,
) -> Option<String> {
    let node = peer.node.clone();
    let mut ended = conn.ended.subscribe();
    let mut detector = PhiAccrual::new(node.config.phi, Instant::now());
    let mut check = tokio::time::interval(
        (node.config.heartbeat_interval / 2).max(std::time::Duration::from_millis(10)),
    );
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The count of messages when the writer was last nudged to acknowledge it.
    let mut nudged = 0u64;
    let mut acked = 0u64;
    loop {
        let Turn {
            consumed: at,
            messages,
            bye,
            error: err,
            more,
            paused,
        } = decode_turn(&node, inbound, &mut detector, buf);
        let had_refusals = inbound.denials.refused_this_turn();
        let err = match inbound.denials.settle(&node, peer, conn) {
            Ok(()) => err,
            Err(e) => Some(e),
        };
        if messages > 0 {
            let received = inbound.received;
            Counters::add(&node.counters.messages_in, messages);
            conn.ack.received.store(received, Ordering::Release);
            // A one-way stream: the writer has nothing to carry the Ack, so it is woken to
            // write it alone, once per ACK_EVERY messages (at once when it carries refusals).
            if had_refusals || (received - nudged >= ACK_EVERY && conn.ack.due_alone(received)) {
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
            if matches!(
                e,
                ProtocolError::Frame(FrameError::TooManyDeclarations { .. })
            ) {
                Counters::add(&node.counters.declarations_refused, 1);
            }
            tracing::warn!(node = %node.config.name, peer = %peer.name, error = %e, "protocol error: closing the connection");
            return Some(format!("protocol error: {e}"));
        }
        if bye {
            // The writer sends the last Ack, then ends the connection.
            conn.ack.peer_bye.store(true, Ordering::Release);
            peer.queue.nudge();
            return None;
        }
        buf.drain(..at);
        if paused {
            // Reading nothing meanwhile: the socket fills and the peer's writes wait in its
            // kernel, so the flood costs neither this thread nor, much, the peer's.
            Counters::add(&node.counters.idle_pauses, 1);
            tokio::select! {
                _ = tokio::time::sleep(inbound.idle.resume_after()) => {}
                _ = ended.wait_for(|d| *d) => return None,
            }
            continue;
        }
        if more {
            // The budget is spent: the node's other connections get the I/O thread first.
            if conn.dead.load(Ordering::Acquire) {
                return None;
            }
            tokio::task::yield_now().await;
            continue;
        }
        crate::recv_buffer::size(&node, buf, counted);
        tokio::select! {
            r = rd.read_buf(buf) => match r {
                Ok(0) => return Some("connection closed by the peer".into()),
                Ok(got) => Counters::add(&node.counters.bytes_in, got as u64),
                Err(e) => return Some(format!("read failed: {e}")),
            },
            _ = check.tick() => {
                let now = Instant::now();
                if !detector.is_available(now) {
                    return Some(format!("failure detector: no heartbeat for {:?} (phi {:.1} over {})",
                        detector.since_last(now),
                        detector.phi(now), node.config.phi.threshold));
                }
            }
            _ = ended.wait_for(|d| *d) => return None,
        }
    }
}
