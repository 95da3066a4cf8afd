//! The typed errors of message chains.

/// A message chain refused something.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum MchainError {
    /// The chain was closed: it takes no more messages.
    #[error(
        "message `{message_type}` sent to a closed message chain: stop sending once the chain is closed (receivers see `StopReason::Closed`)"
    )]
    Closed {
        /// The message type.
        message_type: &'static str,
    },
    /// A bounded chain with [`Overflow::Error`](crate::mchain::Overflow::Error) was full
    /// (after waiting, if it waits).
    #[error(
        "message chain full ({capacity} messages): message `{message_type}` refused; receive faster, raise the capacity, wait longer, or choose another overflow reaction"
    )]
    Full {
        /// The message type.
        message_type: &'static str,
        /// The chain's capacity.
        capacity: usize,
    },
    /// A bounded chain of capacity zero could never hold a message.
    #[error(
        "a bounded message chain needs a capacity of at least 1: use `MchainParams::bounded(n)` with n >= 1, or `unbounded()`"
    )]
    ZeroCapacity,
    /// Preallocated storage needs a bound.
    #[error(
        "an unbounded message chain cannot preallocate its storage: use `MchainParams::bounded(n).preallocated()`"
    )]
    PreallocatedUnbounded,
}
