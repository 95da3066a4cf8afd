//! Event queues: where demands wait for the worker thread that runs them.

mod event_queue;
mod local_ring;
mod remote_blocks;
pub(crate) mod wakeup;

pub(crate) use event_queue::{
    EventQueue, QueueItem, RunningGuard, Schedule, last_log, running_queue, runs_a_queue,
};
