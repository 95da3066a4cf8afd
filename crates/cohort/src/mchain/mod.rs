//! Message chains (SObjectizer's mchain): channels that plain threads and agents share.
//!
//! - Create one with [`Environment::create_mchain`](crate::Environment::create_mchain) and
//!   [`MchainParams`]: unbounded, or bounded (optionally preallocated) with a wait on full
//!   and an [`Overflow`] reaction (drop newest, remove oldest, error, abort). Every loss is
//!   counted in [`Mchain::stats`].
//! - Threads send with [`Mchain::send`] / [`Mchain::send_mut`] (typed errors:
//!   [`MchainError`]); agents send to [`Mchain::as_mbox`] like to any mailbox.
//! - Receive with [`receive`](receive())`(`[`from`]`(&chain).handle_n(..).empty_timeout(..), &mut
//!   `[`Handlers`]`)`; wait on several chains with [`select`] and [`receive_case`] /
//!   [`send_case`].
//! - Close with [`Mchain::close_retain_content`] or [`Mchain::close_drop_content`]: waiting
//!   receivers wake ([`StopReason::Closed`] once drained), waiting senders fail. Dropping
//!   the last [`Mchain`] handle closes the chain too (keeping its content).
//! - Async code awaits instead of blocking: [`Mchain::recv_async`] ([`Received`]),
//!   [`Mchain::stream`] (a `futures_core::Stream`), [`Mchain::send_async`] (waits for room
//!   without blocking a thread). Any executor: a `Waker` is all they use.
//!
//! An agent reporting to a plain thread through a bounded chain:
//!
//! ```
//! use cohort::mchain::{from, receive, Handlers, MchainParams, Overflow, StopReason};
//! use cohort::{Agent, Context, DefineError, Mbox};
//! use std::time::Duration;
//!
//! struct Square { results: Mbox }
//! impl Agent for Square {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         ctx.on(|me, n: &u64, _| me.results.send(n * n))?;
//!         Ok(())
//!     }
//! }
//!
//! let env = cohort::Environment::builder().start().unwrap();
//! let results = env
//!     .create_mchain(
//!         MchainParams::bounded(16)
//!             .wait_on_full(Duration::from_secs(1))
//!             .on_overflow(Overflow::Error),
//!     )
//!     .unwrap();
//! let mut coop = env.new_coop();
//! let square = coop.add(Square { results: results.as_mbox() }).mbox();
//! env.register_coop(coop).unwrap();
//! for n in 1..=4u64 {
//!     square.send(n);
//! }
//! let mut sum = 0;
//! let r = receive(
//!     from(&results).handle_n(4).empty_timeout(Duration::from_secs(5)),
//!     &mut Handlers::new().on(|sq: &u64| sum += sq),
//! );
//! assert_eq!((r.stop, sum), (StopReason::HandleN, 1 + 4 + 9 + 16));
//! ```
//!
//! The chain is a `VecDeque` under a `std::sync::Mutex`; waiting threads sleep on a
//! `Condvar` of their own that every chain they wait on signals (see `notify.rs`).

mod asynch;
mod chain;
mod error;
mod handlers;
mod notify;
mod params;
mod receive;

pub use asynch::{MchainStream, Received, RecvAsync, SendAsync};
pub use chain::{Mchain, MchainStats, Sent};
pub use error::MchainError;
pub use handlers::Handlers;
pub use params::{MchainParams, Overflow};
pub use receive::{
    AllChains, Case, ReceiveParams, ReceiveResult, StopReason, from, from_all, receive,
    receive_case, select, send_case, send_case_mut,
};
