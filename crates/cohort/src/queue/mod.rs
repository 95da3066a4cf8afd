//! Event queues: where demands wait for the worker thread that runs them.

mod event_queue;
mod local_ring;
#[cfg(all(test, cohort_loom))]
pub(crate) mod loom_model;
mod pool_state;
mod remote_blocks;
mod running;
pub(crate) mod sender_epoch;
pub(crate) mod wakeup;

pub(crate) use event_queue::{EventQueue, QueueItem, Schedule};
pub(crate) use running::{Local, RunningGuard, running_queue, runs_a_queue};
