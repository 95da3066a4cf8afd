//! [`MboxRef`]: a mailbox reference that travels inside messages, so a request can say
//! where its reply goes (Akka's `sender`/`replyTo`).
//!
//! On the wire a reference is two strings, the node's name and the exported mailbox's name.
//! The node that decodes it resolves it right there, once: to its own exported mailbox when
//! the reference names this node, to a proxy of the peer ([`RemoteNode::mbox`]) when it
//! names a peer this node knows, and otherwise to a mailbox whose sends are counted dead
//! letters ([`DeliveryFailure::NodeDown`]). Resolution needs the decoding node, which the
//! connection's reader provides while it decodes: a reference deserialized anywhere else
//! (outside a node's reader) is a decoding error.

use crate::node::NodeShared;
use crate::peer::RemoteNode;
use cohort::{AnyMessage, CustomMbox, DeliveryFailure, Mbox};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// The node whose reader is decoding on this thread.
    static DECODING_NODE: RefCell<Option<Arc<NodeShared>>> = const { RefCell::new(None) };
}

/// Makes `node` the node that resolves references decoded on this thread until the guard
/// is dropped.
pub(crate) fn decoding_for(node: Arc<NodeShared>) -> DecodingGuard {
    let previous = DECODING_NODE.with(|d| d.replace(Some(node)));
    DecodingGuard { previous }
}

pub(crate) struct DecodingGuard {
    previous: Option<Arc<NodeShared>>,
}

impl Drop for DecodingGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _ = DECODING_NODE.try_with(|d| d.replace(previous));
    }
}

/// A reference to a mailbox a node exports, that can be put in a message, sent to another
/// node, and sent to from there.
///
/// Made by [`Node::mbox_ref`](crate::Node::mbox_ref) (a mailbox this node exports) or
/// [`RemoteNode::mbox_ref`] (one a peer exports); [`MboxRef::send`] sends to it wherever the
/// reference now is. Serialize it with the message (serde): the receiving node resolves it
/// when it decodes the message.
///
/// ```
/// use cohort::Environment;
/// use cohort_remote::{MboxRef, Node, NodeConfig, Registry};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Ask { question: String, reply_to: MboxRef }
///
/// let env = Environment::builder().start().unwrap();
/// let mut registry = Registry::new();
/// registry.register::<Ask>("example.Ask").unwrap();
/// let node = Node::start(&env.environment(), NodeConfig::new("a"), registry).unwrap();
/// node.export("answers");
/// let me = node.mbox_ref("answers").unwrap();
/// assert_eq!((me.node(), me.name()), ("a", "answers"));
/// let ask = Ask { question: "?".into(), reply_to: me }; // sent to a peer, it says where to answer
/// # let _ = ask;
/// assert!(node.mbox_ref("not exported").is_err());
/// node.shutdown();
/// env.stop_and_wait();
/// ```
#[derive(Clone)]
pub struct MboxRef {
    node: Arc<str>,
    name: Arc<str>,
    target: Mbox,
}

impl MboxRef {
    pub(crate) fn new(node: &str, name: &str, target: Mbox) -> Self {
        Self {
            node: node.into(),
            name: name.into(),
            target,
        }
    }

    /// The name of the node that exports the mailbox.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The name the mailbox is exported under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The mailbox sends go to from here: the exported mailbox itself on its own node, a
    /// proxy elsewhere.
    pub fn mbox(&self) -> &Mbox {
        &self.target
    }

    /// Sends `msg` to the referenced mailbox (see [`Mbox::send`]).
    pub fn send<M: Send + Sync + 'static>(&self, msg: M) {
        self.target.send(msg)
    }
}

impl std::fmt::Debug for MboxRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MboxRef({}@{})", self.name, self.node)
    }
}

impl PartialEq for MboxRef {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.name == other.name
    }
}

impl Serialize for MboxRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (&*self.node, &*self.name).serialize(s)
    }
}

impl<'de> Deserialize<'de> for MboxRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (node, name) = <(String, String)>::deserialize(d)?;
        let Some(shared) = DECODING_NODE.with(|n| n.borrow().clone()) else {
            // Logged too: some codecs (postcard) drop a custom error's text.
            const WHY: &str = "an MboxRef is resolved by the node that receives it: deserialize \
                 it only in messages decoded by a cohort-remote node";
            tracing::warn!(node = %node, mailbox = %name, "{WHY}");
            return Err(serde::de::Error::custom(WHY));
        };
        Ok(resolve(&shared, &node, &name))
    }
}

/// What `node`/`name` means on `here`.
fn resolve(here: &Arc<NodeShared>, node: &str, name: &str) -> MboxRef {
    let target = if node == here.config.name {
        here.exported(name)
            .unwrap_or_else(|| unreachable(here, DeliveryFailure::NotExported, node, name))
    } else {
        match here.known_peer(node) {
            Some(peer) => RemoteNode { peer }.mbox(name),
            None => unreachable(here, DeliveryFailure::NodeDown, node, name),
        }
    };
    MboxRef::new(node, name, target)
}

fn unreachable(here: &Arc<NodeShared>, reason: DeliveryFailure, node: &str, name: &str) -> Mbox {
    Mbox::custom(Unreachable {
        node: here.clone(),
        reason,
        label: format!("{name}@{node} (unreachable from {})", here.config.name),
    })
}

/// A reference this node cannot send to (a node it does not know, a name it does not
/// export): every send is a counted dead letter with the reason.
struct Unreachable {
    node: Arc<NodeShared>,
    reason: DeliveryFailure,
    label: String,
}

impl CustomMbox for Unreachable {
    fn deliver(&self, msg: AnyMessage) {
        self.node.refuse(msg, self.reason);
    }

    fn name(&self) -> Option<&str> {
        Some(&self.label)
    }
}
