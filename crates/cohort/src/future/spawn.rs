//! [`Context::spawn`]: a future owned by an agent, run on the environment's tokio runtime,
//! its output handed back to the agent as an event on its own dispatcher.

use super::catch::CatchUnwind;
use super::completion::Completion;
use super::table::Deferred;
use crate::agent::cell::{ACTIVE, DynCell, NEW};
use crate::agent::{Agent, Context};
use crate::error::AsyncError;
use crate::mailbox::deliver_event;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// Identifies one future spawned by an agent (see [`Context::spawn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FutureId(pub(crate) u64);

/// A future about to be spawned by an agent: say what to do with its output with
/// [`Spawn::then`]. Made by [`Context::spawn`].
#[must_use = "nothing runs until `.then(..)` is called"]
pub struct Spawn<'c, 'a, A: Agent, F> {
    ctx: &'c Context<'a, A>,
    future: F,
}

impl<A: Agent, F> fmt::Debug for Spawn<'_, '_, A, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spawn")
            .field("output", &std::any::type_name::<F>())
            .finish()
    }
}

impl<'a, A: Agent> Context<'a, A> {
    /// Runs `future` on the environment's tokio runtime (the application's, given to
    /// [`EnvironmentBuilder::tokio_handle`](crate::EnvironmentBuilder::tokio_handle), or one
    /// the environment starts on first use) for this agent; [`Spawn::then`] says which
    /// handler gets its output.
    ///
    /// The output comes back as an event in the agent's own queue: the handler runs on the
    /// agent's dispatcher, one event at a time with its other handlers, so it may touch the
    /// agent's state; the future itself must not (it is `'static` and `Send`). The agent's
    /// futures are cancelled when it finishes: aborted, their drop runs, and no output is
    /// handled after `finish`. A panic inside the future is the agent's panic, handled by
    /// its panic reaction when the output would have been delivered. A future spawned in
    /// `define` starts when the agent starts.
    ///
    /// ```
    /// use cohort::{Agent, Context};
    ///
    /// struct Fetcher { got: Option<u64> }
    /// impl Agent for Fetcher {
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.spawn(async { 6 * 7 })
    ///             .then(|me: &mut Self, answer: u64, ctx: &mut Context<'_, Self>| {
    ///                 me.got = Some(answer); // the agent's state, on its own thread
    ///                 ctx.stop_environment();
    ///             })
    ///             .unwrap();
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Fetcher { got: None });
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn spawn<F>(&self, future: F) -> Spawn<'_, 'a, A, F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        Spawn { ctx: self, future }
    }
}

impl<A: Agent, F> Spawn<'_, '_, A, F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// Spawns the future; `handler` runs on the agent with its output.
    ///
    /// Errors: [`AsyncError::AgentFinishing`] once the agent's cooperation has begun to
    /// deregister, [`AsyncError::EnvironmentStopped`] once the environment has stopped.
    pub fn then<H>(self, handler: H) -> Result<FutureId, AsyncError>
    where
        H: for<'c> FnOnce(&mut A, F::Output, &mut Context<'c, A>) + Send + 'static,
    {
        let cell = self.ctx.cell();
        let status = cell.header.status();
        if status != NEW && status != ACTIVE {
            return Err(AsyncError::AgentFinishing);
        }
        let runtime = &cell.header.env.futures;
        let key = super::agent_key(cell);
        let me = self.ctx.cell_arc();
        let future = self.future;
        let id = if status == NEW {
            if runtime.is_stopped() {
                return Err(AsyncError::EnvironmentStopped);
            }
            runtime.table.defer(key, |id| {
                Box::pin(run::<A, F, H>(me, id, future, handler)) as Deferred
            })
        } else {
            let handle = runtime.handle()?;
            runtime.table.add(key, |id| {
                handle
                    .spawn(run::<A, F, H>(me, id, future, handler))
                    .abort_handle()
            })
        };
        cell.header.set_spawned();
        Ok(FutureId(id))
    }
}

/// The task: runs the future, then hands its output (or its panic) to the agent.
async fn run<A, F, H>(cell: Arc<DynCell>, id: u64, future: F, handler: H)
where
    A: Agent,
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    H: for<'c> FnOnce(&mut A, F::Output, &mut Context<'c, A>) + Send + 'static,
{
    let completion = match (CatchUnwind { inner: future }).await {
        Ok(output) => Completion::<A>::new(id, move |me, ctx| handler(me, output, ctx)),
        Err(panic) => Completion::<A>::new(id, move |_, _| std::panic::resume_unwind(panic)),
    };
    if let Err(refused) = deliver_event(&cell, completion.into_envelope()) {
        // The agent is finishing: its output is dropped, the future counted as cancelled.
        drop(refused);
        cell.header
            .env
            .futures
            .table
            .discarded(super::agent_key(&cell), id);
    }
}

/// Starts the futures an agent spawned in `define` (called as it starts, if it spawned).
pub(crate) fn start_deferred(cell: &DynCell) {
    let runtime = &cell.header.env.futures;
    let handle = runtime.handle().ok();
    runtime.table.start_deferred(super::agent_key(cell), handle);
}

/// Cancels the futures of an agent that finishes (called if it spawned).
pub(crate) fn cancel_all(cell: &DynCell) {
    cell.header
        .env
        .futures
        .table
        .cancel_agent(super::agent_key(cell));
}
