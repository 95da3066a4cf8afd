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

/// What [`Echo`] answers.
#[derive(Debug, Clone, Copy)]
struct Ping;

/// Signals its channel at every [`Ping`] (made with `Echo::signal`).
type Echo = crate::common::echo::Echo<Ping>;
