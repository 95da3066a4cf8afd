//! Agents: the [`Agent`] trait, the [`Context`] its hooks and handlers receive, its
//! subscriptions and states, the cell it lives in once added to a cooperation, and the
//! demands a queue carries to it.

pub(crate) mod cell;
mod context;
pub(crate) mod demand;
pub(crate) mod state;
pub(crate) mod subscription;

pub use context::Context;
pub(crate) use context::{immutable_handler, mutable_handler};

use std::borrow::Cow;

/// What a failing [`Agent::define`] returns: any error, boxed.
pub type DefineError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An agent: a state machine that reacts to messages.
///
/// Hooks run in SObjectizer's order (see `docs/runtime-semantics.md`):
/// 1. [`define`](Agent::define) on the thread that registers the cooperation, for every agent
///    of it, before any of them starts; it subscribes handlers. An error (or a panic) here
///    cancels the whole registration.
/// 2. [`start`](Agent::start) on the agent's worker thread, as the agent's first event.
/// 3. Handlers, one message at a time, never two at once for one agent.
/// 4. [`finish`](Agent::finish) on the worker thread when the cooperation deregisters, after
///    the last message that was pending when deregistration began.
///
/// ```
/// use cohort::{Agent, Context, DefineError};
///
/// struct Hello;
/// struct Greet(&'static str);
///
/// struct Greeter { greeted: usize }
///
/// impl Greeter {
///     fn on_greet(&mut self, msg: &Greet, ctx: &mut Context<'_, Self>) {
///         self.greeted += 1;
///         println!("hello, {}", msg.0);
///         ctx.stop_environment();
///     }
/// }
///
/// impl Agent for Greeter {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         ctx.on(Self::on_greet)?;
///         Ok(())
///     }
///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.self_mbox().send(Greet("world"));
///     }
/// }
///
/// cohort::launch(|env| {
///     let mut coop = env.new_coop();
///     coop.add(Greeter { greeted: 0 });
///     env.register_coop(coop)?;
///     Ok(())
/// })
/// .unwrap();
/// ```
///
/// An agent lives in one allocation with a header that senders on other threads read at
/// every send. Where malloc starts that allocation 48 bytes into a cache line (one time in
/// four), the agent's first 16 bytes share the header's line, and a handler that writes them
/// makes each cross-thread send fetch that line again. An agent that receives from other
/// threads and writes its state at every message can take `#[repr(align(64))]` to start on a
/// line of its own wherever it lands, at 128 to 191 bytes more per agent, the padding that
/// puts the header and the agent on lines of their own (docs/internals.md, "Agent cell").
pub trait Agent: Send + Sized + 'static {
    /// Subscribes handlers. Runs on the registering thread before any agent of the
    /// cooperation starts; an error cancels the registration of the whole cooperation.
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let _ = ctx;
        Ok(())
    }

    /// The agent's first event, on its worker thread.
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = ctx;
    }

    /// The agent's last event, on its worker thread, when its cooperation deregisters.
    fn finish(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = ctx;
    }

    /// The name used in errors and logs; the type name by default.
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(std::any::type_name::<Self>())
    }
}
