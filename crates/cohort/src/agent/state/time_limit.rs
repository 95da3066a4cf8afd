//! State time limits: entering a state with a time limit starts a timer that sends the agent
//! a [`StateTimeout`]; leaving the state drops the timer (cancelling it) and bumps the
//! state's epoch, so a time-out already queued is recognised as stale and ignored.

use super::machine::TimerSlot;
use crate::mailbox::Mbox;
use crate::runtime::env::Environment;
use std::time::Duration;

/// The message a state's time limit sends to its agent's direct mailbox.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StateTimeout {
    pub(crate) state: u16,
    /// The state's epoch when the timer started.
    pub(crate) epoch: u32,
}

/// Starts the timer of a time limit: `msg` reaches `to` after `delay` unless the returned
/// slot is dropped first.
pub(crate) fn start(env: &Environment, to: &Mbox, delay: Duration, msg: StateTimeout) -> TimerSlot {
    env.send_delayed(to, delay, msg).cancel_on_drop()
}
