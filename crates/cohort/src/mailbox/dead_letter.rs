//! Dead letters: messages that could not be delivered. They are never lost silently: each is
//! counted ([`Environment::dead_letters`](crate::Environment::dead_letters)) and handed to the
//! environment's optional hook ([`EnvironmentBuilder::dead_letter_hook`](crate::EnvironmentBuilder::dead_letter_hook)).

use crate::mailbox::MboxId;
use crate::message::Envelope;
use std::any::Any;
use std::fmt;

/// Why a message was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryFailure {
    /// The receiver's cooperation is deregistering or gone. (A 1:N send no longer reaches
    /// the agents of a cooperation once its deregistration has begun to finish them: they are
    /// unsubscribed then, and count nothing; only a send racing with that step counts this.)
    ReceiverGone,
    /// The receiver was added to a cooperation that is not registered yet (a direct send), or
    /// whose registration failed.
    NotRegistered,
    /// The receiver has no handler for this message type.
    NoHandler,
    /// Nobody is subscribed to this message type on the multi-consumer mailbox it was sent to.
    NoSubscriber,
    /// The receiver's `transfer_to_state` subscriptions send this message from state to
    /// state without end (more than `defaults::MAX_STATE_TRANSFERS` transfers).
    TransferLoop,
    /// The message chain it was sent to (through its mailbox) is closed.
    ChainClosed,
    /// The message chain it was sent to (through its mailbox) is full and refuses more
    /// ([`Overflow::Error`](crate::mchain::Overflow::Error)).
    ChainFull,
    /// The receiver's message limit for this type was reached (the `drop` action).
    LimitReached,
    /// Message limits redirected (or transformed) it more than
    /// [`MAX_REDIRECT_DEPTH`](crate::defaults::MAX_REDIRECT_DEPTH) times: a redirect loop.
    RedirectLoop,
    /// A mutable message was redirected by a message limit to a multi-consumer mailbox
    /// (only single-consumer ones carry mutable messages), or an immutable one that cannot
    /// be shared reached several subscribers.
    MutableToMultiConsumer,
    /// A message limit's transform function panicked.
    TransformPanicked,
    /// A subscriber's delivery filter panicked (the message is not delivered to it).
    FilterPanicked,
    /// It was sent to (or queued for) a remote node that is down or was shut down
    /// (`cohort-remote`).
    NodeDown,
    /// The outbound queue to a remote node was full and its overflow reaction dropped it
    /// (`cohort-remote`).
    OutboundFull,
    /// Its type is not registered with the remote node's message registry, so it cannot be
    /// sent over the wire (on the sender), or the receiving node does not know the type's
    /// registered name (on the receiver) (`cohort-remote`).
    NotRegisteredForRemote,
    /// A remote node sent it to a mailbox name that this node does not export
    /// (`cohort-remote`).
    NotExported,
    /// Its value did not encode, its frame would be longer than the maximum frame size, or
    /// (on the receiver) its bytes did not decode as the registered type (`cohort-remote`).
    RemoteCodec,
    /// It was written to a remote node whose connection broke before that node acknowledged
    /// it: it may have been handled there, or not (`cohort-remote`). Never resent.
    InDoubt,
    /// The remote node refused it: the mailbox it was sent to is exported there only to
    /// other nodes (`cohort-remote`'s `Access`).
    AccessDenied,
}

impl fmt::Display for DeliveryFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeliveryFailure::ReceiverGone => "the receiver's cooperation is deregistering or gone",
            DeliveryFailure::NotRegistered => "the receiver's cooperation is not registered",
            DeliveryFailure::NoHandler => "the receiver has no handler for this message type",
            DeliveryFailure::NoSubscriber => {
                "no agent is subscribed to this message type on that mailbox"
            }
            DeliveryFailure::TransferLoop => {
                "the receiver's transfer_to_state subscriptions loop for this message type"
            }
            DeliveryFailure::ChainClosed => "the message chain is closed",
            DeliveryFailure::ChainFull => "the message chain is full",
            DeliveryFailure::LimitReached => {
                "the receiver's message limit for this type is reached"
            }
            DeliveryFailure::RedirectLoop => {
                "message limits redirected it too many times (a redirect loop)"
            }
            DeliveryFailure::MutableToMultiConsumer => {
                "a mutable message was redirected to a multi-consumer mailbox"
            }
            DeliveryFailure::TransformPanicked => "a message limit's transform function panicked",
            DeliveryFailure::FilterPanicked => "a delivery filter panicked",
            DeliveryFailure::NodeDown => "the remote node is down or shut down",
            DeliveryFailure::OutboundFull => "the outbound queue to the remote node is full",
            DeliveryFailure::NotRegisteredForRemote => {
                "the message type is not registered for remoting on both nodes"
            }
            DeliveryFailure::NotExported => "this node does not export that mailbox name",
            DeliveryFailure::RemoteCodec => {
                "the message did not encode, is over the maximum frame size, or did not decode"
            }
            DeliveryFailure::InDoubt => {
                "the connection broke before the remote node acknowledged it: delivery in doubt"
            }
            DeliveryFailure::AccessDenied => {
                "the remote node does not let this node send to that mailbox"
            }
        })
    }
}

/// A message that could not be delivered, as seen by the dead-letter hook.
///
/// The context fields are `None` where the runtime does not know them at the place the
/// message was found undeliverable (e.g. a timer refused after the environment stopped).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct DeadLetter<'a> {
    /// The message's type name.
    pub message_type: &'static str,
    /// Why it was not delivered.
    pub reason: DeliveryFailure,
    /// The mailbox it was sent to, if known.
    pub mbox: Option<MboxId>,
    /// The receiving agent (the id of its direct mailbox), if there was one.
    pub agent: Option<MboxId>,
    /// The message itself, for inspection (`downcast_ref::<M>()` with the user's type, also
    /// for a mutable message), if it still exists.
    pub message: Option<&'a dyn Any>,
    /// For a message a remote node sent under a type name this node has not registered: that
    /// name, as the sending node declared it (`message_type` then says the type is unknown).
    pub declared_type: Option<&'a str>,
}

impl<'a> DeadLetter<'a> {
    /// The `message_type` of a message that came from a remote node under a type name this
    /// node does not know (the name is in [`DeadLetter::declared_type`]).
    pub const UNKNOWN_TYPE: &'static str = "<type unknown to this node>";

    /// A dead letter of `msg`, sent through `mbox` to `agent` where those are known.
    pub(crate) fn of(
        msg: &'a Envelope,
        reason: DeliveryFailure,
        mbox: Option<MboxId>,
        agent: Option<MboxId>,
    ) -> Self {
        Self {
            message_type: msg.type_name(),
            reason,
            mbox,
            agent,
            message: Some(msg.as_any()),
            declared_type: None,
        }
    }

    /// A dead letter known only by its type name and reason.
    pub(crate) fn bare(message_type: &'static str, reason: DeliveryFailure) -> Self {
        Self {
            message_type,
            reason,
            mbox: None,
            agent: None,
            message: None,
            declared_type: None,
        }
    }
}

/// The environment's dead-letter hook. It runs on the thread that found the message
/// undeliverable (a sender or a worker), so it must be quick.
pub type DeadLetterHook = Box<dyn Fn(&DeadLetter) + Send + Sync + 'static>;
