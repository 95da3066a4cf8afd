//! Event queues: where demands wait for the worker thread that runs them.

mod dedicated_reader;
mod event_queue;
mod local;
mod local_ring;
#[cfg(all(test, cohort_loom))]
pub(crate) mod loom_model;
mod pool_state;
mod remote_blocks;
mod running;
pub(crate) mod sender_epoch;
pub(crate) mod wakeup;

pub(crate) use dedicated_reader::DedicatedReader;
pub(crate) use event_queue::{EventQueue, QueueItem, Schedule};
pub(crate) use local::Local;
pub(crate) use running::{RunningGuard, running_queue, runs_a_queue};
