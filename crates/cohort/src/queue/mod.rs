//! Event queues: where demands wait for the worker thread that runs them.

mod event_queue;
pub(crate) mod wakeup;

pub(crate) use event_queue::{EventQueue, QueueItem, RunningGuard, Schedule, runs_a_queue};
