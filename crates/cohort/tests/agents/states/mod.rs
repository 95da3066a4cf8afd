//! Agent states: subscriptions per state, inheritance and override, enter/exit order, shallow
//! and deep history, transfer and suppress, the dead-letter handler, time limits, and the
//! typed errors of bad input.

mod subscriptions;
mod time_limits;
mod transfer;
mod transitions;

use crate::common::{self, DeadLetters, TIMEOUT, watchdog};
use cohort::{
    Agent, Context, DefineError, DeliveryFailure, History, Mbox, State, StateError, SubscribeError,
    Unhandled,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What happened inside the agent, in order.
type Log = Arc<Mutex<Vec<String>>>;

type Script = Box<dyn for<'a> FnOnce(&mut Context<'a, Scripted>) -> Result<(), DefineError> + Send>;

/// An agent whose `define` is the test's closure.
struct Scripted {
    log: Log,
    script: Option<Script>,
}

impl Scripted {
    fn note(&self, what: impl Into<String>) {
        self.log.lock().unwrap().push(what.into());
    }
}

impl Agent for Scripted {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let script = self.script.take().expect("define runs once");
        script(ctx)
    }
}

/// Switch to this state (handled in every state by [`switcher`]).
#[derive(Clone, Copy)]
struct SwitchTo(State);
#[derive(Clone, Copy)]
struct Ping;
#[derive(Clone, Copy)]
struct Pong;
/// Reports the current state's name to the log.
#[derive(Clone, Copy)]
struct Where;

/// Subscribes `SwitchTo` and `Where` in `st` (a root every test state descends from).
fn switcher(ctx: &mut Context<'_, Scripted>, st: &State) -> Result<(), SubscribeError> {
    ctx.in_state(st)
        .on(
            |_: &mut Scripted, m: &SwitchTo, ctx: &mut Context<'_, Scripted>| {
                ctx.change_state(&m.0).unwrap()
            },
        )?
        .on(
            |me: &mut Scripted, _: &Where, ctx: &mut Context<'_, Scripted>| {
                let st = ctx.current_state();
                me.note(format!("in {}", ctx.state_name(&st).unwrap()));
            },
        )?;
    Ok(())
}

/// Registers a scripted agent, lets `drive` send it messages from the test thread, then
/// stops the environment (messages already sent are handled first) and returns the log and
/// the dead letters.
fn run(
    script: impl for<'a> FnOnce(&mut Context<'a, Scripted>) -> Result<(), DefineError> + Send + 'static,
    drive: impl FnOnce(&Mbox) + Send + 'static,
) -> (Vec<String>, DeadLetters) {
    watchdog(TIMEOUT, move || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let log = Log::default();
        let mut coop = env.new_coop();
        let mbox = coop
            .add(Scripted {
                log: log.clone(),
                script: Some(Box::new(script)),
            })
            .mbox();
        env.register_coop(coop).unwrap();
        drive(&mbox);
        env.stop_and_wait();
        let log = log.lock().unwrap().clone();
        (log, dead)
    })
}

/// Creates the states the tests share through `SwitchTo`: sends them out of `define`.
fn states_to_test(
    tx: std::sync::mpsc::Sender<Vec<State>>,
    names: &'static [(&'static str, Option<usize>)],
) -> impl for<'a> FnOnce(&mut Context<'a, Scripted>) -> Result<Vec<State>, DefineError> {
    move |ctx| {
        let mut made: Vec<State> = Vec::new();
        for (name, parent) in names {
            let st = match parent {
                None => ctx.new_state(*name)?,
                Some(p) => ctx.new_substate(&made[*p], *name)?,
            };
            made.push(st);
        }
        let _ = tx.send(made.clone());
        Ok(made)
    }
}
