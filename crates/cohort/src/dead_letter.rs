//! Dead letters: messages that could not be delivered. They are never lost silently: each is
//! counted ([`Environment::dead_letters`](crate::Environment::dead_letters)) and handed to the
//! environment's optional hook ([`EnvironmentBuilder::dead_letter_hook`](crate::EnvironmentBuilder::dead_letter_hook)).

use std::fmt;

/// Why a message was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryFailure {
    /// The receiver's cooperation is deregistering or gone.
    ReceiverGone,
    /// The receiver was added to a cooperation that is not registered (yet).
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
        })
    }
}

/// A message that could not be delivered, as seen by the dead-letter hook.
#[derive(Debug, Clone, Copy)]
pub struct DeadLetter {
    /// The message's type name.
    pub message_type: &'static str,
    /// Why it was not delivered.
    pub reason: DeliveryFailure,
}

/// The environment's dead-letter hook. It runs on the thread that found the message
/// undeliverable (a sender or a worker), so it must be quick.
pub type DeadLetterHook = Box<dyn Fn(&DeadLetter) + Send + Sync + 'static>;
