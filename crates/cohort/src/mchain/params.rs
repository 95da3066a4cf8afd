//! How a message chain is built: its capacity and what it does when full.

use crate::defaults;
use std::time::Duration;

/// What a full bounded chain does with one more message (after waiting, if it waits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The new message is dropped (counted in [`MchainStats::dropped_newest`](crate::mchain::MchainStats)).
    DropNewest,
    /// The oldest message is removed to make room (counted in `removed_oldest`).
    RemoveOldest,
    /// The send fails with [`MchainError::Full`](crate::mchain::MchainError::Full) (counted in
    /// `refused_full`); a send through the chain's [`Mbox`](crate::Mbox) becomes a dead letter.
    #[default]
    Error,
    /// The process aborts (SObjectizer's `abort_app`): for chains that must never overflow.
    Abort,
}

/// The parameters of a message chain; see
/// [`Environment::create_mchain`](crate::Environment::create_mchain).
///
/// ```
/// use cohort::mchain::{MchainParams, Overflow};
/// use std::time::Duration;
///
/// let p = MchainParams::bounded(64)
///     .preallocated()
///     .wait_on_full(Duration::from_millis(5))
///     .on_overflow(Overflow::RemoveOldest)
///     .name("results");
/// assert_eq!(p.capacity(), Some(64));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MchainParams {
    pub(crate) capacity: Option<usize>,
    pub(crate) preallocated: bool,
    pub(crate) wait_on_full: Option<Duration>,
    pub(crate) overflow: Overflow,
    pub(crate) name: Option<String>,
}

impl MchainParams {
    /// A chain without a bound: sends never wait and never overflow.
    pub fn unbounded() -> Self {
        Self {
            capacity: None,
            preallocated: false,
            wait_on_full: None,
            overflow: defaults::MCHAIN_OVERFLOW,
            name: None,
        }
    }

    /// A chain holding at most `capacity` messages (at least 1, checked at creation). When full,
    /// a send waits [`wait_on_full`](Self::wait_on_full) (default: not at all), then reacts as
    /// [`on_overflow`](Self::on_overflow) says (default: [`defaults::MCHAIN_OVERFLOW`]).
    pub fn bounded(capacity: usize) -> Self {
        Self {
            capacity: Some(capacity),
            ..Self::unbounded()
        }
    }

    /// Allocates storage for `capacity` messages up front (no allocation per send).
    pub fn preallocated(mut self) -> Self {
        self.preallocated = true;
        self
    }

    /// How long a send to a full chain waits for room before the overflow reaction. A send
    /// from an agent's handler blocks that agent's worker meanwhile.
    pub fn wait_on_full(mut self, timeout: Duration) -> Self {
        self.wait_on_full = Some(timeout);
        self
    }

    /// What a full chain does with one more message.
    pub fn on_overflow(mut self, reaction: Overflow) -> Self {
        self.overflow = reaction;
        self
    }

    /// A name, shown by `Debug` and by the chain's mailbox.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The bound, if any.
    pub fn capacity(&self) -> Option<usize> {
        self.capacity
    }
}
