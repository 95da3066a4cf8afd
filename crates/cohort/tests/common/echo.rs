//! An agent that answers every message of one type: the sign most tests wait for to know that
//! a mailbox, a dispatcher or an environment still delivers.

use super::Counter;
use cohort::{Agent, Context, DefineError, Mbox, SubscribeError};
use std::sync::mpsc::Sender;

/// A subscription an [`Echo`] makes besides its echo (see [`Echo::also`]).
pub type Subscribe<M> = fn(&mut Context<'_, Echo<M>>) -> Result<(), SubscribeError>;

/// Answers every `M` it receives, on a channel or to a mailbox; optionally counts its starts
/// and subscribes more handlers.
pub struct Echo<M: Send + 'static> {
    answer: Box<dyn FnMut(&M) + Send>,
    started: Option<Counter>,
    also: Vec<Subscribe<M>>,
}

impl<M: Send + 'static> Echo<M> {
    /// Sends `()` to `tx` at every `M`.
    pub fn signal(tx: Sender<()>) -> Self {
        Self::map(tx, |_| ())
    }

    /// Sends `answer(m)` to `tx` at every `m`.
    pub fn map<R: Send + 'static>(tx: Sender<R>, answer: fn(&M) -> R) -> Self {
        Self::answering(move |m| {
            // A test that stopped listening has its verdict already; the agent goes on.
            let _ = tx.send(answer(m));
        })
    }

    /// Sends `answer(m)` to the mailbox `to` at every `m`.
    pub fn to_mbox<R: Send + Sync + 'static>(to: Mbox, answer: fn(&M) -> R) -> Self {
        Self::answering(move |m| to.send(answer(m)))
    }

    fn answering(answer: impl FnMut(&M) + Send + 'static) -> Self {
        Self {
            answer: Box::new(answer),
            started: None,
            also: Vec::new(),
        }
    }

    /// Counts each start of this agent in `started`.
    pub fn counting_starts(mut self, started: &Counter) -> Self {
        self.started = Some(started.clone());
        self
    }

    /// Also makes `subscribe` at definition: for a message the test needs handled (or acted
    /// on) but not echoed.
    pub fn also(mut self, subscribe: Subscribe<M>) -> Self {
        self.also.push(subscribe);
        self
    }
}

impl<M: Send + 'static> Agent for Echo<M> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &M, _: &mut Context<'_, Self>| (me.answer)(m))?;
        for subscribe in &self.also {
            subscribe(ctx)?;
        }
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        if let Some(started) = &self.started {
            started.inc();
        }
    }
}
