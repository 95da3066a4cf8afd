//! [`Demand`]: one unit of work in an [`EventQueue`](crate::queue::EventQueue).

use crate::cell::{AgentRef, DeliveryFailure};
use crate::coop::{CoopInner, Step};
use crate::message::Envelope;
use crate::queue::EventQueue;
use std::sync::Arc;

/// One unit of work for a worker thread.
pub(crate) enum Demand {
    /// A message for one agent (through the mailbox recorded in `agent`).
    Message { agent: AgentRef, msg: Envelope },
    /// A lifecycle step (start, finish) for the agents of one cooperation bound to one queue.
    Lifecycle {
        coop: Arc<CoopInner>,
        group: u32,
        step: Step,
    },
}

impl Demand {
    /// Executes the demand on the thread that runs `queue`.
    #[inline]
    pub(crate) fn run(self, queue: &EventQueue) {
        match self {
            Demand::Message { agent, msg } => agent.handle(msg),
            Demand::Lifecycle { coop, group, step } => coop.run_step(group, step, queue),
        }
    }

    /// Counts a demand that will never run (its queue is gone) as undelivered.
    pub(crate) fn reject(self) {
        match self {
            Demand::Message { agent, msg, .. } => agent
                .header()
                .dead_letter(msg, DeliveryFailure::ReceiverGone),
            Demand::Lifecycle { coop, .. } => {
                tracing::error!(
                    coop = coop.id().0,
                    "lifecycle step of a cooperation dropped with its queue"
                )
            }
        }
    }
}
