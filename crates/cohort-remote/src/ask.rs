//! Requests to remote agents: a [`Request<Req, Reply>`] sent to a proxy crosses the wire
//! with the reply address the framework adds, and its outcome comes back to whoever asked
//! (an agent's [`Context::request`](cohort::Context::request), a [`PendingReply`](cohort::PendingReply)).
//!
//! - On the asking node, the writer that encodes the request takes the right to answer out
//!   of it (a [`Responder`]), keeps it in the node's [`AskTable`] under a fresh id, and
//!   writes `(id, request, reply address)`. The reply address is an [`MboxRef`] to the
//!   node's own reply mailbox ([`REPLIES`]), the same reference users put in messages.
//! - The receiving node decodes it as an ordinary `Request` whose outcome (the reply, or the
//!   reason it was dropped: receiver gone, no handler...) is sent to that reference as an
//!   [`AskReply`]; the asking node's reply mailbox hands it to the waiting [`Responder`].
//! - A request not written (the peer down, the queue full, ...) is dropped with its reason;
//!   one written on a connection that breaks before its reply is failed
//!   [`RequestError::InDoubt`].

use crate::mbox_ref::MboxRef;
use crate::node::NodeShared;
use crate::peer::PeerShared;
use crate::registry::{Codec, CodecError};
use cohort::{
    AnyMessage, CustomMbox, DeliveryFailure, ReplyHook, Request, RequestError, Responder,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The name under which every node exports its reply mailbox.
pub(crate) const REPLIES: &str = "cohort-remote/replies";

/// The right to answer one request sent to a peer, whatever its reply type.
pub(crate) trait Settle: Send {
    fn fail(self: Box<Self>, why: RequestError);
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl<Reply: Send + 'static> Settle for Responder<Reply> {
    fn fail(self: Box<Self>, why: RequestError) {
        Responder::fail(*self, why)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// A request written to a peer and waiting for its outcome.
struct Waiting {
    /// The peer it was written to (its address: compared, never dereferenced).
    peer: usize,
    responder: Box<dyn Settle>,
}

/// The requests this node wrote to its peers that wait for their outcome, by id.
#[derive(Default)]
pub(crate) struct AskTable {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiting>>,
}

fn peer_key(peer: &PeerShared) -> usize {
    (peer as *const PeerShared).cast::<()>() as usize
}

impl AskTable {
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn insert(&self, id: u64, peer: &PeerShared, responder: Box<dyn Settle>) {
        let w = Waiting {
            peer: peer_key(peer),
            responder,
        };
        self.lock().insert(id, w);
    }

    fn remove(&self, id: u64) -> Option<Box<dyn Settle>> {
        self.lock().remove(&id).map(|w| w.responder)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Fails every request waiting on `peer` (all of them with `None`) with `why`; returns
    /// how many.
    pub(crate) fn fail(&self, peer: Option<&PeerShared>, why: RequestError) -> usize {
        let key = peer.map(peer_key);
        let failed: Vec<Box<dyn Settle>> = {
            let mut waiting = self.lock();
            let ids: Vec<u64> = waiting
                .iter()
                .filter(|(_, w)| key.is_none_or(|k| w.peer == k))
                .map(|(&id, _)| id)
                .collect();
            ids.iter()
                .filter_map(|id| waiting.remove(id))
                .map(|w| w.responder)
                .collect()
        };
        // Outside the lock: failing hands the outcome to the asker.
        let n = failed.len();
        for r in failed {
            r.fail(why);
        }
        n
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a registered request type does on the wire, besides decoding.
pub(crate) struct AskFns {
    /// Encodes the request as `(id, request, reply address)`.
    pub(crate) encode: fn(&AnyMessage, u64, &MboxRef, &mut Vec<u8>) -> Result<(), CodecError>,
    /// Takes the right to answer out of the request (`None`: it was answered already).
    pub(crate) take: fn(&AnyMessage) -> Option<Box<dyn Settle>>,
}

pub(crate) fn ask_fns<Req, Reply, C>() -> AskFns
where
    Req: Serialize + Send + Sync + 'static,
    Reply: Send + 'static,
    C: Codec,
{
    AskFns {
        encode: encode_request::<Req, Reply, C>,
        take: take_responder::<Req, Reply>,
    }
}

fn encode_request<Req, Reply, C>(
    msg: &AnyMessage,
    id: u64,
    reply_to: &MboxRef,
    out: &mut Vec<u8>,
) -> Result<(), CodecError>
where
    Req: Serialize + 'static,
    Reply: 'static,
    C: Codec,
{
    match msg.downcast_ref::<Request<Req, Reply>>() {
        Some(r) => C::encode(&(id, r.payload(), reply_to), out),
        None => Err(CodecError(format!(
            "request entry used for a {}",
            msg.type_name()
        ))),
    }
}

fn take_responder<Req, Reply>(msg: &AnyMessage) -> Option<Box<dyn Settle>>
where
    Req: 'static,
    Reply: Send + 'static,
{
    let responder = msg.downcast_ref::<Request<Req, Reply>>()?.defer()?;
    Some(Box::new(responder))
}

/// Decodes a request from a peer: its outcome goes back to the reply address it carries.
pub(crate) fn decode_request<Req, Reply, C>(bytes: &[u8]) -> Result<AnyMessage, CodecError>
where
    Req: DeserializeOwned + Send + Sync + 'static,
    Reply: Serialize + DeserializeOwned + Send + Sync + 'static,
    C: Codec,
{
    let (id, req, reply_to) = C::decode::<(u64, Req, MboxRef)>(bytes)?;
    let answer = Arc::new(Answer::<Req, Reply> {
        id,
        reply_to,
        _types: PhantomData,
    });
    Ok(AnyMessage::new(Request::<Req, Reply>::with_hook(
        req, answer,
    )))
}

/// Where a remote request's outcome goes: back to the asking node.
struct Answer<Req, Reply> {
    id: u64,
    reply_to: MboxRef,
    _types: PhantomData<fn() -> (Req, Reply)>,
}

impl<Req, Reply> ReplyHook<Reply> for Answer<Req, Reply>
where
    Req: 'static,
    Reply: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn complete(&self, outcome: Result<Reply, RequestError>) {
        self.reply_to.send(AskReply::<Req, Reply> {
            id: self.id,
            outcome: outcome.map_err(WireError::from),
            _req: PhantomData,
        });
    }
}

/// The outcome of request `id`, on its way back to the node that asked. Its type names the
/// request's too, so that two request types with one reply type are told apart.
pub(crate) struct AskReply<Req, Reply> {
    id: u64,
    outcome: Result<Reply, WireError>,
    _req: PhantomData<fn() -> Req>,
}

impl<Req, Reply: Serialize> Serialize for AskReply<Req, Reply> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.id, &self.outcome).serialize(s)
    }
}

impl<'de, Req, Reply: Deserialize<'de>> Deserialize<'de> for AskReply<Req, Reply> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (id, outcome) = <(u64, Result<Reply, WireError>)>::deserialize(d)?;
        Ok(Self {
            id,
            outcome,
            _req: PhantomData,
        })
    }
}

/// Hands a reply that came back to the request waiting for it (a reply to a request failed
/// at a connection's break, or of another type, finds nothing and is dropped).
pub(crate) fn settle_reply<Req, Reply>(msg: AnyMessage, asks: &AskTable)
where
    Req: 'static,
    Reply: Send + 'static,
{
    let Ok(reply) = msg.downcast::<AskReply<Req, Reply>>() else {
        return;
    };
    let Some(waiting) = asks.remove(reply.id) else {
        return;
    };
    if let Ok(responder) = waiting.into_any().downcast::<Responder<Reply>>() {
        let responder = *responder;
        match reply.outcome {
            Ok(r) => responder.reply(r),
            Err(e) => responder.fail(e.into()),
        }
    }
}

/// The node's reply mailbox: what peers send request outcomes to.
pub(crate) struct ReplyInbox {
    pub(crate) node: Weak<NodeShared>,
}

impl CustomMbox for ReplyInbox {
    fn deliver(&self, msg: AnyMessage) {
        let Some(node) = self.node.upgrade() else {
            return;
        };
        let registry = &node.registry;
        match registry
            .index_of(msg.type_id())
            .and_then(|i| registry.entry(i).settle)
        {
            Some(settle) => settle(msg, &node.asks),
            None => node.refuse(msg, DeliveryFailure::NoHandler),
        }
    }

    fn name(&self) -> Option<&str> {
        Some(REPLIES)
    }
}

/// A [`RequestError`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum WireError {
    Timeout { nanos: u64 },
    ReceiverGone,
    NoHandler,
    NotReplied,
    Refused(u8),
    InDoubt,
}

/// The code of `f` on the wire (exhaustive: a new failure needs a code).
fn failure_code(f: DeliveryFailure) -> u8 {
    match f {
        DeliveryFailure::ReceiverGone => 0,
        DeliveryFailure::NotRegistered => 1,
        DeliveryFailure::NoHandler => 2,
        DeliveryFailure::NoSubscriber => 3,
        DeliveryFailure::TransferLoop => 4,
        DeliveryFailure::ChainClosed => 5,
        DeliveryFailure::ChainFull => 6,
        DeliveryFailure::LimitReached => 7,
        DeliveryFailure::RedirectLoop => 8,
        DeliveryFailure::MutableToMultiConsumer => 9,
        DeliveryFailure::TransformPanicked => 10,
        DeliveryFailure::FilterPanicked => 11,
        DeliveryFailure::NodeDown => 12,
        DeliveryFailure::OutboundFull => 13,
        DeliveryFailure::NotRegisteredForRemote => 14,
        DeliveryFailure::NotExported => 15,
        DeliveryFailure::RemoteCodec => 16,
        DeliveryFailure::InDoubt => 17,
        DeliveryFailure::AccessDenied => 18,
    }
}

impl From<RequestError> for WireError {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Timeout(d) => WireError::Timeout {
                nanos: d.as_nanos().min(u64::MAX as u128) as u64,
            },
            RequestError::ReceiverGone => WireError::ReceiverGone,
            RequestError::NoHandler => WireError::NoHandler,
            RequestError::NotReplied => WireError::NotReplied,
            RequestError::Refused(f) => WireError::Refused(failure_code(f)),
            RequestError::InDoubt => WireError::InDoubt,
        }
    }
}

impl From<WireError> for RequestError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Timeout { nanos } => {
                RequestError::Timeout(std::time::Duration::from_nanos(nanos))
            }
            WireError::ReceiverGone => RequestError::ReceiverGone,
            WireError::NoHandler => RequestError::NoHandler,
            WireError::NotReplied => RequestError::NotReplied,
            // A code this build does not know (a newer peer's): dropped unanswered.
            WireError::Refused(code) => DeliveryFailure::ALL
                .into_iter()
                .find(|&f| failure_code(f) == code)
                .map_or(RequestError::NotReplied, RequestError::Refused),
            WireError::InDoubt => RequestError::InDoubt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_error_crosses_the_wire_as_it_is() {
        let mut all = vec![
            RequestError::Timeout(std::time::Duration::from_millis(250)),
            RequestError::ReceiverGone,
            RequestError::NoHandler,
            RequestError::NotReplied,
            RequestError::InDoubt,
        ];
        all.extend(DeliveryFailure::ALL.map(RequestError::Refused));
        for e in all {
            let bytes = postcard::to_allocvec(&WireError::from(e)).unwrap();
            let back: WireError = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(RequestError::from(back), e);
        }
        // One code per failure, so each decodes as itself.
        let mut codes = DeliveryFailure::ALL.map(failure_code).to_vec();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), DeliveryFailure::ALL.len());
        assert_eq!(
            RequestError::from(WireError::Refused(200)),
            RequestError::NotReplied
        );
    }
}
