//! Agents: the lifecycle of cooperations and agents (`lifecycle`), and agent states
//! (`states`).

#[path = "../common/mod.rs"]
mod common;

mod lifecycle;
mod states;
