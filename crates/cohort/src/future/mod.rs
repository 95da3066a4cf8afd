//! Agents and async code: futures owned by an agent ([`Context::spawn`]) and asks that do
//! not block ([`Context::request`]), their outcome handed back to the agent as an event.
//!
//! Handlers stay synchronous and exclusive: an async library is used from a future that an
//! agent spawns on a tokio runtime, and what it produces comes back through the agent's own
//! queue, where a handler of the agent takes it on the agent's dispatcher. The runtime is the
//! application's ([`EnvironmentBuilder::tokio_handle`](crate::EnvironmentBuilder::tokio_handle))
//! or a small one the environment starts on first use and stops with itself
//! ([`EnvironmentBuilder::async_threads`](crate::EnvironmentBuilder::async_threads)); an
//! environment that never spawns starts no tokio thread. Asks need no runtime at all: the
//! reply is delivered by whoever answers, a timeout by the environment's timer thread.
//!
//! See `docs/async.md` for when to use which, and what runs where.
//!
//! ```
//! use cohort::{Agent, Context};
//!
//! struct Reader;
//! impl Agent for Reader {
//!     fn start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.spawn(async { "read from an async client" })
//!             .then(|_, text: &str, ctx| {
//!                 assert!(text.starts_with("read"));
//!                 ctx.stop_environment();
//!             })
//!             .unwrap();
//!     }
//! }
//!
//! cohort::launch(|env| {
//!     let mut coop = env.new_coop();
//!     coop.add(Reader);
//!     env.register_coop(coop)?;
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! [`Context::spawn`]: crate::Context::spawn
//! [`Context::request`]: crate::Context::request

mod ask;
mod catch;
pub(crate) mod completion;
pub(crate) mod runtime;
pub(crate) mod spare;
mod spawn;
mod table;

pub use ask::Ask;
pub use spawn::{FutureId, Spawn};

pub(crate) use runtime::{AsyncRuntime, RuntimeChoice};
pub(crate) use spawn::{cancel_all, start_deferred};

use crate::agent::cell::DynCell;

/// The key of an agent in the future table: its cell's address.
fn agent_key(cell: &DynCell) -> usize {
    (cell as *const DynCell).cast::<()>() as usize
}
