//! Dead letters: messages that could not be delivered. They are never lost silently: each is
//! counted ([`Environment::dead_letters`](crate::Environment::dead_letters)) and handed to the
//! environment's optional hook ([`EnvironmentBuilder::dead_letter_hook`](crate::EnvironmentBuilder::dead_letter_hook)).

use crate::mailbox::MboxId;
use crate::message::Envelope;
use std::any::Any;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

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

impl DeliveryFailure {
    /// Every reason, in the order of declaration.
    ///
    /// ```
    /// use cohort::DeliveryFailure;
    ///
    /// assert!(DeliveryFailure::ALL.contains(&DeliveryFailure::NodeDown));
    /// ```
    pub const ALL: [DeliveryFailure; 19] = [
        DeliveryFailure::ReceiverGone,
        DeliveryFailure::NotRegistered,
        DeliveryFailure::NoHandler,
        DeliveryFailure::NoSubscriber,
        DeliveryFailure::TransferLoop,
        DeliveryFailure::ChainClosed,
        DeliveryFailure::ChainFull,
        DeliveryFailure::LimitReached,
        DeliveryFailure::RedirectLoop,
        DeliveryFailure::MutableToMultiConsumer,
        DeliveryFailure::TransformPanicked,
        DeliveryFailure::FilterPanicked,
        DeliveryFailure::NodeDown,
        DeliveryFailure::OutboundFull,
        DeliveryFailure::NotRegisteredForRemote,
        DeliveryFailure::NotExported,
        DeliveryFailure::RemoteCodec,
        DeliveryFailure::InDoubt,
        DeliveryFailure::AccessDenied,
    ];

    /// Its stable name in snake case (`receiver_gone`, `node_down`...), for logs, metrics
    /// labels and text formats; [`DeliveryFailure::from_name`] reads it back.
    ///
    /// ```
    /// use cohort::DeliveryFailure;
    ///
    /// assert_eq!(DeliveryFailure::NotRegisteredForRemote.name(), "not_registered_for_remote");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            DeliveryFailure::ReceiverGone => "receiver_gone",
            DeliveryFailure::NotRegistered => "not_registered",
            DeliveryFailure::NoHandler => "no_handler",
            DeliveryFailure::NoSubscriber => "no_subscriber",
            DeliveryFailure::TransferLoop => "transfer_loop",
            DeliveryFailure::ChainClosed => "chain_closed",
            DeliveryFailure::ChainFull => "chain_full",
            DeliveryFailure::LimitReached => "limit_reached",
            DeliveryFailure::RedirectLoop => "redirect_loop",
            DeliveryFailure::MutableToMultiConsumer => "mutable_to_multi_consumer",
            DeliveryFailure::TransformPanicked => "transform_panicked",
            DeliveryFailure::FilterPanicked => "filter_panicked",
            DeliveryFailure::NodeDown => "node_down",
            DeliveryFailure::OutboundFull => "outbound_full",
            DeliveryFailure::NotRegisteredForRemote => "not_registered_for_remote",
            DeliveryFailure::NotExported => "not_exported",
            DeliveryFailure::RemoteCodec => "remote_codec",
            DeliveryFailure::InDoubt => "in_doubt",
            DeliveryFailure::AccessDenied => "access_denied",
        }
    }

    /// The reason whose [`name`](DeliveryFailure::name) is `name` (also what `str::parse`
    /// does).
    ///
    /// ```
    /// use cohort::DeliveryFailure;
    ///
    /// assert_eq!(DeliveryFailure::from_name("in_doubt"), Ok(DeliveryFailure::InDoubt));
    /// let e = "InDoubt".parse::<DeliveryFailure>().unwrap_err();
    /// assert!(e.to_string().contains("in_doubt"), "{e}");
    /// ```
    pub fn from_name(name: &str) -> Result<Self, UnknownDeliveryFailure> {
        Self::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or_else(|| UnknownDeliveryFailure(name.to_owned()))
    }
}

impl FromStr for DeliveryFailure {
    type Err = UnknownDeliveryFailure;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s)
    }
}

/// A name that is no [`DeliveryFailure`]'s [`name`](DeliveryFailure::name).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{0:?} is not a delivery failure's name; the names: {names}",
    names = DeliveryFailure::ALL.map(DeliveryFailure::name).join(", ")
)]
pub struct UnknownDeliveryFailure(
    /// The name given.
    pub String,
);

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The place of `r` in [`DeliveryFailure::ALL`]. Exhaustive, so a new variant does not
    /// compile until it is given its place here, next to which it goes into `ALL`.
    fn place(r: DeliveryFailure) -> usize {
        use DeliveryFailure::*;
        match r {
            ReceiverGone => 0,
            NotRegistered => 1,
            NoHandler => 2,
            NoSubscriber => 3,
            TransferLoop => 4,
            ChainClosed => 5,
            ChainFull => 6,
            LimitReached => 7,
            RedirectLoop => 8,
            MutableToMultiConsumer => 9,
            TransformPanicked => 10,
            FilterPanicked => 11,
            NodeDown => 12,
            OutboundFull => 13,
            NotRegisteredForRemote => 14,
            NotExported => 15,
            RemoteCodec => 16,
            InDoubt => 17,
            AccessDenied => 18,
        }
    }

    #[test]
    fn all_holds_every_variant_once_and_each_name_reads_back() {
        for (i, r) in DeliveryFailure::ALL.into_iter().enumerate() {
            assert_eq!(place(r), i, "{r:?}");
            assert_eq!(DeliveryFailure::from_name(r.name()), Ok(r));
            assert_eq!(r.name().parse::<DeliveryFailure>(), Ok(r));
            let snake = r
                .name()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_');
            assert!(snake, "{}", r.name());
        }
        let mut names = DeliveryFailure::ALL.map(DeliveryFailure::name).to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DeliveryFailure::ALL.len());
    }

    #[test]
    fn an_unknown_name_is_a_typed_error_listing_the_names() {
        let e = DeliveryFailure::from_name("ReceiverGone").unwrap_err();
        assert_eq!(e, UnknownDeliveryFailure("ReceiverGone".into()));
        let text = e.to_string();
        assert!(text.starts_with("\"ReceiverGone\" is not"), "{text}");
        assert!(text.contains("receiver_gone, not_registered"), "{text}");
        assert!(text.ends_with("access_denied"), "{text}");
    }
}
