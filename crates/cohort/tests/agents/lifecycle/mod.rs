//! Lifecycle of cooperations and agents: registration and its failure, child cooperations,
//! early messages, deregistration, stop with backlogs, autoshutdown, panic reactions.

mod autoshutdown;
mod child_coops;
mod deregistration;
mod early_messages;
mod newcomer_traps;
mod panic_reactions;
mod registration_failure;
mod shutdown;

use cohort::{Agent, Context, DefineError};
use std::sync::mpsc::Sender;

/// What [`Echo`] answers.
#[derive(Debug, Clone, Copy)]
struct Ping;

/// Signals its channel at every [`Ping`].
struct Echo {
    tx: Sender<()>,
}

impl Agent for Echo {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(());
        })?;
        Ok(())
    }
}
