//! [`TestError`]: why a scenario step failed.

use crate::error::RegisterError;
use crate::runtime::coop::CoopId;
use std::time::Duration;

/// Why a step of a test scenario failed.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    /// The agents were still busy after the step limit: most likely an agent that keeps
    /// sending to itself (or two that ping-pong forever).
    #[error(
        "the agents were not quiet after {steps} steps (a message loop? raise the limit with TestEnv::set_step_limit)"
    )]
    NotQuiet {
        /// The steps run (the limit).
        steps: usize,
    },
    /// No message of the expected type reached the probe within the (virtual) time.
    #[error("no `{message_type}` reached the probe within {within:?} of virtual time")]
    NoMessage {
        /// The expected message type.
        message_type: &'static str,
        /// The virtual time waited.
        within: Duration,
    },
    /// A message reached the probe although none was expected.
    #[error("a `{message_type}` reached the probe, none was expected")]
    UnexpectedMessage {
        /// The message's type.
        message_type: &'static str,
    },
    /// The agent did not handle a message of the expected type (since the last check).
    #[error("the agent `{agent}` has not handled a `{message_type}`")]
    NotHandled {
        /// The expected message type.
        message_type: &'static str,
        /// The agent's name.
        agent: String,
    },
    /// The agent is not in the expected state.
    #[error("the agent is in state `{actual}`, not in `{expected}`")]
    WrongState {
        /// The expected state's name.
        expected: String,
        /// The state it is in (innermost first, the path of its ancestors after).
        actual: String,
    },
    /// The cooperation was still registered once the agents were quiet (it waits for
    /// something that only a message or the clock can bring).
    #[error("cooperation {0:?} is still registered although the agents are quiet")]
    CoopNotGone(CoopId),
    /// Registering a cooperation (or a probe's) failed.
    #[error(transparent)]
    Register(#[from] RegisterError),
}
