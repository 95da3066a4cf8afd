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
