//! # cohort
//!
//! An in-process actor framework in the line of SObjectizer, CAF and Theron:
//! [agents](Agent) with lifecycle hooks, grouped in [cooperations](Coop) that register and
//! deregister as a unit, talking through [mailboxes](Mbox), run by
//! [dispatchers](dispatcher) chosen per agent or per cooperation.
//!
//! Where a message goes from `send` to its handler: [`Mbox::send`] → `mbox::deliver_direct`
//! → `queue::EventQueue` (local half on the single-thread path, remote half otherwise) →
//! `dispatcher::reuse::worker::run` → `demand::Demand::run` → `cell::AgentRef::handle` →
//! `cell::AgentBody::handle` (subscription lookup in the current state; a miss goes to
//! `state::dispatch`: parent states, transfers, dead-letter handlers) → your handler.
//!
//! ```
//! use cohort::{Agent, Context, DefineError, Mbox};
//!
//! struct Ping;
//! struct Pong;
//!
//! struct Pinger { ponger: Option<Mbox>, left: u32 }
//! struct Ponger { pinger: Mbox }
//!
//! impl Agent for Pinger {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         ctx.on(|me: &mut Self, _: &Pong, ctx: &mut Context<'_, Self>| {
//!             me.left -= 1;
//!             if me.left == 0 { ctx.stop_environment() } else { me.ponger.as_ref().unwrap().send(Ping) }
//!         })?;
//!         Ok(())
//!     }
//!     fn start(&mut self, _: &mut Context<'_, Self>) {
//!         self.ponger.as_ref().unwrap().send(Ping);
//!     }
//! }
//!
//! impl Agent for Ponger {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| me.pinger.send(Pong))?;
//!         Ok(())
//!     }
//! }
//!
//! cohort::launch(|env| {
//!     let mut coop = env.new_coop();
//!     let pinger = coop.add(Pinger { ponger: None, left: 1000 });
//!     let ponger = coop.add(Ponger { pinger: pinger.mbox() });
//!     coop.agent_mut(&pinger).ponger = Some(ponger.mbox());
//!     env.register_coop(coop)?;
//!     Ok(())
//! })
//! .unwrap();
//! ```
#![deny(missing_docs)]

mod agent;
mod cell;
mod coop;
mod custom_mbox;
mod dead_letter;
pub mod defaults;
mod demand;
pub mod dispatcher;
mod env;
mod env_ref;
mod error;
mod limits;
mod mbox;
pub mod mchain;
mod message;
mod named;
mod panic;
mod queue;
mod request;
mod state;
mod stats;
mod subscription;
mod sync;
pub mod timer;
mod trace;

pub use agent::{Agent, Context, DefineError};
pub use coop::{
    AgentHandle, Coop, CoopDeregistered, CoopHandle, CoopId, CoopRegistered, DeregReason,
};
pub use custom_mbox::{AnyMessage, CustomMbox};
pub use dead_letter::{DeadLetter, DeadLetterHook, DeliveryFailure};
pub use dispatcher::{
    ActiveGroupBuilder, ActiveGroupHandle, ActiveObjBuilder, AdvThreadPoolBuilder,
    AdvThreadPoolHandle, Binder, DispatcherHandle, OneThreadBuilder, PrioOneThreadBuilder,
    PrioOneThreadHandle, ThreadPoolBuilder, ThreadPoolHandle, WorkStealingBuilder,
    WorkStealingHandle,
};
pub use env::{Environment, EnvironmentBuilder, WrappedEnv, launch};
pub use error::{
    BindError, DispatcherError, LaunchError, LimitError, RegisterError, SendError, SubscribeError,
};
pub use limits::MessageLimits;
pub use mbox::{Mbox, MboxId};
pub use message::Mutable;
pub use panic::PanicReaction;
pub use request::{PendingReply, Request, RequestError, Responder};
pub use state::{History, InState, State, StateError, Unhandled};
pub use stats::{DispatcherStats, RuntimeStats, StatsConfig, WorkerStats};
pub use timer::{TimerHandle, TimerQueue};
pub use trace::{MessageTracing, TraceEvent, TraceStep};
