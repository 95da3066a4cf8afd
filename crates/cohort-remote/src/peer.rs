//! A peer node as this node sees it: its outbound queue, its status, the mailbox names
//! sent to it, and the proxies ([`RemoteNode::mbox`]) that feed that queue.
//!
//! Send path: `Mbox::send(msg)` on a proxy → [`RemoteMbox::deliver`] (registry lookup of
//! the type, status check, push onto [`OutboundQueue`]) → the connection's writer task
//! (`writer::writer`) encodes it into the current batch and writes the batch; or, when
//! the writer sleeps, the connection was quiet and the last batch was one message, the
//! sender itself (`writer::try_direct_write`).

use crate::config::Overflow;
use crate::connection::ConnState;
use crate::node::NodeShared;
use crate::outbound::{Outbound, OutboundQueue, Refused};
use cohort::{AnyMessage, CustomMbox, DeliveryFailure, Mbox};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) const UP: u8 = 1;
pub(crate) const DOWN: u8 = 2;
pub(crate) const CLOSED: u8 = 3;

/// Mailbox names this node sends to on a peer, each with the id its frames carry.
#[derive(Default)]
pub(crate) struct MboxNames {
    pub(crate) names: Vec<Arc<str>>,
    by_name: HashMap<Arc<str>, u32>,
}

pub(crate) struct PeerShared {
    pub(crate) name: String,
    pub(crate) node: Arc<NodeShared>,
    pub(crate) queue: OutboundQueue,
    pub(crate) status: AtomicU8,
    /// Set by a graceful shutdown: the writer flushes, says Bye and stops.
    pub(crate) closing: AtomicBool,
    pub(crate) mbox_names: Mutex<MboxNames>,
    /// Where to reconnect to, for a peer this node dialled.
    pub(crate) dial_addr: Option<String>,
    /// The live connection, if any.
    pub(crate) conn: Mutex<Option<Arc<ConnState>>>,
    /// [`PeerHandle`]s alive: a peer that dialled this node keeps its entry in the node
    /// while it is up or one of them lives.
    handles: AtomicUsize,
}

impl PeerShared {
    pub(crate) fn new(name: String, node: Arc<NodeShared>, dial_addr: Option<String>) -> Self {
        let capacity = node.config.outbound_capacity;
        Self {
            name,
            node,
            queue: OutboundQueue::new(capacity),
            status: AtomicU8::new(DOWN),
            closing: AtomicBool::new(false),
            mbox_names: Mutex::new(MboxNames::default()),
            dial_addr,
            conn: Mutex::new(None),
            handles: AtomicUsize::new(0),
        }
    }

    /// Whether nothing outside the node's own tasks refers to the peer.
    pub(crate) fn unheld(&self) -> bool {
        self.handles.load(Ordering::Acquire) == 0
    }

    #[inline]
    pub(crate) fn is_up(&self) -> bool {
        self.status.load(Ordering::Acquire) == UP
    }

    fn mbox_id(&self, name: &str) -> (u32, Arc<str>) {
        let mut names = self.mbox_names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, &id)) = names.by_name.get_key_value(name) {
            return (id, k.clone());
        }
        let id = names.names.len() as u32;
        let name: Arc<str> = name.into();
        names.names.push(name.clone());
        names.by_name.insert(name.clone(), id);
        (id, name)
    }

    /// Every message still queued becomes a dead letter with `reason`; returns how many.
    pub(crate) fn drain_undeliverable(&self, reason: DeliveryFailure) -> u64 {
        let mut n = 0;
        while let Some(o) = self.queue.pop() {
            self.node.refuse(o.msg, reason);
            n += 1;
        }
        self.queue.signal_space();
        n
    }
}

/// A counted reference to a peer, held by what a user keeps ([`RemoteNode`], its proxies):
/// the node forgets a peer that dialled it once the peer is down and no handle is left.
pub(crate) struct PeerHandle(Arc<PeerShared>);

impl PeerHandle {
    /// A handle to `peer`; made under the node's lock of its peers (which checks the count
    /// under it too) or by cloning another handle.
    pub(crate) fn new(peer: Arc<PeerShared>) -> Self {
        peer.handles.fetch_add(1, Ordering::AcqRel);
        Self(peer)
    }

    pub(crate) fn arc(&self) -> &Arc<PeerShared> {
        &self.0
    }
}

impl Clone for PeerHandle {
    fn clone(&self) -> Self {
        Self::new(self.0.clone())
    }
}

impl Drop for PeerHandle {
    fn drop(&mut self) {
        if self.0.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.node.forget_if_unused(&self.0);
        }
    }
}

impl std::ops::Deref for PeerHandle {
    type Target = PeerShared;

    fn deref(&self) -> &PeerShared {
        &self.0
    }
}

/// A connected peer node: the handle to reach the mailboxes it exports.
///
/// Obtained from [`Node::connect`](crate::Node::connect) (this node dialled it) or
/// [`Node::peer`](crate::Node::peer) / [`Node::wait_for_peer`](crate::Node::wait_for_peer)
/// (it dialled this node). Cheap to clone. While a `RemoteNode` or a proxy made from it
/// ([`RemoteNode::mbox`]) lives, the node keeps the peer's entry, so the proxy sends again
/// once the peer is back; a peer that dialled this node and left is forgotten when nothing
/// holds one. See the crate documentation for an example.
#[derive(Clone)]
pub struct RemoteNode {
    pub(crate) peer: PeerHandle,
}

impl RemoteNode {
    /// The peer's node name (from its handshake).
    pub fn name(&self) -> &str {
        &self.peer.name
    }

    /// A mailbox that sends to the mailbox the peer exported as `name`: the same
    /// [`Mbox::send`] as a local one. Messages from one sender to one peer arrive in the
    /// order they were sent. A message whose type is not in the registry, sent while the
    /// peer is down, or refused by a full queue is a counted dead letter; one sent to a name
    /// the peer does not export is a dead letter there
    /// ([`DeliveryFailure::NotExported`](cohort::DeliveryFailure::NotExported)).
    pub fn mbox(&self, name: &str) -> Mbox {
        let (id, name) = self.peer.mbox_id(name);
        Mbox::custom(RemoteMbox {
            peer: self.peer.clone(),
            id,
            name: format!("{}@{}", name, self.peer.name).into(),
        })
    }

    /// A reference to the mailbox the peer exports as `name`, to put in messages (to pass
    /// it on to a third node): see [`MboxRef`](crate::MboxRef).
    pub fn mbox_ref(&self, name: &str) -> crate::MboxRef {
        crate::MboxRef::new(&self.peer.name, name, self.mbox(name))
    }

    /// Whether the connection to the peer is up.
    pub fn is_up(&self) -> bool {
        self.peer.is_up()
    }

    /// Messages queued for the peer, not yet written.
    pub fn queued(&self) -> usize {
        self.peer.queue.len()
    }
}

impl std::fmt::Debug for RemoteNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteNode")
            .field("name", &self.peer.name)
            .field("up", &self.is_up())
            .finish()
    }
}

/// The proxy behind [`RemoteNode::mbox`].
pub(crate) struct RemoteMbox {
    peer: PeerHandle,
    id: u32,
    name: Box<str>,
}

impl CustomMbox for RemoteMbox {
    fn deliver(&self, msg: AnyMessage) {
        let peer = &*self.peer;
        let node = &*peer.node;
        let Some(entry) = node.registry.index_of(msg.type_id()) else {
            tracing::warn!(
                message_type = msg.type_name(),
                peer = %peer.name,
                "message type not registered for remoting: register it in the Registry of both nodes"
            );
            node.refuse(msg, DeliveryFailure::NotRegisteredForRemote);
            return;
        };
        if !peer.is_up() {
            node.refuse(msg, DeliveryFailure::NodeDown);
            return;
        }
        let item = Outbound {
            entry,
            mbox: self.id,
            msg,
        };
        // Room in the queue: a busy writer takes it; a sleeping one is woken, or written for
        // here, once the sender's turn ends (`writer::sent_while_parked`).
        let item = match peer.queue.push_quiet(item) {
            Ok(false) => return,
            Ok(true) => {
                crate::writer::sent_while_parked(&self.peer.0);
                return;
            }
            Err(item) => item,
        };
        let overflow = node.config.overflow;
        match peer.queue.push(item, overflow, || peer.is_up()) {
            Ok(()) => {}
            Err(Refused::Full(o)) | Err(Refused::DroppedOldest(o)) => {
                if overflow == Overflow::Error {
                    tracing::error!(peer = %peer.name, message_type = o.msg.type_name(),
                        "outbound queue full: message dropped");
                }
                node.refuse(o.msg, DeliveryFailure::OutboundFull);
            }
            Err(Refused::Closed(o)) => node.refuse(o.msg, DeliveryFailure::NodeDown),
        }
    }

    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }
}
