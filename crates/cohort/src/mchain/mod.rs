//! Message chains (SObjectizer's mchain): channels that plain threads and agents share.
//!
//! - Create one with [`Environment::create_mchain`](crate::Environment::create_mchain) and
//!   [`MchainParams`]: unbounded, or bounded (optionally preallocated) with a wait on full
//!   and an [`Overflow`] reaction (drop newest, remove oldest, error, abort). Every loss is
//!   counted in [`Mchain::stats`].
//! - Threads send with [`Mchain::send`] / [`Mchain::send_mut`] (typed errors:
//!   [`MchainError`]); agents send to [`Mchain::as_mbox`] like to any mailbox.
//! - Receive with [`receive`]`(`[`from`]`(&chain).handle_n(..).empty_timeout(..), &mut
//!   `[`Handlers`]`)`; wait on several chains with [`select`] and [`receive_case`] /
//!   [`send_case`].
//! - Close with [`Mchain::close_retain_content`] or [`Mchain::close_drop_content`]: waiting
//!   receivers wake ([`StopReason::Closed`] once drained), waiting senders fail.
//!
//! The chain is a `VecDeque` under a `std::sync::Mutex`; waiting threads sleep on a
//! `Condvar` of their own that every chain they wait on signals (see `notify.rs`).

mod chain;
mod error;
mod handlers;
mod notify;
mod params;
mod receive;

pub use chain::{Mchain, MchainStats, Sent};
pub use error::MchainError;
pub use handlers::Handlers;
pub use params::{MchainParams, Overflow};
pub use receive::{
    AllChains, Case, ReceiveParams, ReceiveResult, StopReason, from, from_all, receive,
    receive_case, select, send_case, send_case_mut,
};
