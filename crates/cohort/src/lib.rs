//! # cohort
//!
//! An in-process actor framework in the line of SObjectizer, CAF and Theron:
//! [agents](Agent) with lifecycle hooks, grouped in [cooperations](Coop) that register and
//! deregister as a unit, talking through [mailboxes](Mbox), run by
//! [dispatchers](dispatcher) chosen per agent or per cooperation.
//!
//! Where a message goes from `send` to its handler: [`Mbox::send`] → `mailbox::deliver`
//! → `queue::EventQueue` (local half on the single-thread path, remote half otherwise) →
//! `dispatcher::reuse::worker::run` → `agent::demand::Demand::run` →
//! `agent::cell::AgentRef::handle` → `agent::cell::AgentBody::handle` (subscription lookup in
//! the current state; a miss goes to `agent::state::dispatch`: parent states, transfers,
//! dead-letter handlers) → your handler.
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
//!         ctx.on(|me, _: &Pong, ctx| {
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
//!         ctx.on(|me, _: &Ping, _| me.pinger.send(Pong))?;
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
pub mod defaults;
pub mod dispatcher;
mod error;
pub mod future;
mod mailbox;
pub mod mchain;
mod message;
mod panic;
mod queue;
mod runtime;
mod stats;
pub mod supervision;
mod sync;
pub mod testing;
pub mod timer;
mod trace;

pub use agent::state::{History, InState, State, StateError, Unhandled};
pub use agent::{Agent, Context, DefineError};
pub use dispatcher::{
    ActiveGroupBuilder, ActiveGroupHandle, ActiveObjBuilder, AdvThreadPoolBuilder,
    AdvThreadPoolHandle, Binder, DispatcherHandle, OneThreadBuilder, PrioOneThreadBuilder,
    PrioOneThreadHandle, ThreadPoolBuilder, ThreadPoolHandle, WorkStealingBuilder,
    WorkStealingHandle, WorkerSpin,
};
pub use error::{
    AsyncError, BindError, DispatcherError, LaunchError, LimitError, RegisterError, SendError,
    SubscribeError,
};
pub use future::{Ask, FutureId, Spawn};
pub use mailbox::custom::{AnyMessage, CustomMbox};
pub use mailbox::dead_letter::{
    DeadLetter, DeadLetterHook, DeliveryFailure, UnknownDeliveryFailure,
};
pub use mailbox::limits::MessageLimits;
pub use mailbox::request::{PendingReply, ReplyHook, Request, RequestError, Responder};
pub use mailbox::{Mbox, MboxId};
pub use panic::PanicReaction;
pub use runtime::coop::{
    AgentHandle, Coop, CoopDeregistered, CoopGone, CoopHandle, CoopId, CoopRegistered,
    CoopWaitError, DeregReason, PanicNotice,
};
pub use runtime::env::{Environment, EnvironmentBuilder, WrappedEnv, launch};
pub use stats::{DispatcherStats, RuntimeStats, StatsConfig, SupervisionStats, WorkerStats};
pub use timer::{TimerHandle, TimerId, TimerQueue};
pub use trace::{MessageTracing, TraceEvent, TraceStep};

/// Marks a message as mutable: it has exactly one receiver, which takes it by value.
///
/// Send it with [`Mbox::send_mut`](crate::Mbox::send_mut) and subscribe to it with
/// [`Context::on_mut`](crate::Context::on_mut).
///
/// ```
/// use cohort::Mutable;
/// let m = Mutable(vec![1u8, 2, 3]);
/// assert_eq!(m.0.len(), 3);
/// ```
///
/// `#[repr(transparent)]`: a `Mutable<M>` is laid out as an `M`, so a message limit or a
/// delivery filter declared for `Mutable<M>` reads the `M` a mutable envelope carries.
// Defined at the crate root so that `std::any::type_name` (used in errors and dead
// letters) names the public path `cohort::Mutable<M>`, not a private module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Mutable<M>(pub M);
