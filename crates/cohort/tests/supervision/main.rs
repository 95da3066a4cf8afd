//! Supervision: strategies, restart types, intensity and escalation, back-off on the virtual
//! clock, start failures, messages in flight during a restart, a supervisor that stops while
//! a child waits for its restart, and bad input.

#[path = "../common/mod.rs"]
mod common;

mod backoff;
mod bad_input;
mod deregistration;
mod in_flight;
mod intensity;
mod kit;
mod restart_types;
mod start_failures;
mod strategies;
