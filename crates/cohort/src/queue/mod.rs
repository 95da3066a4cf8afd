//! Event queues: where demands wait for the worker thread that runs them.

mod event_queue;
mod local_ring;
mod remote_blocks;
pub(crate) mod wakeup;

/// The item the loom models push through queues: (producer or queue, sequence number).
#[cfg(all(test, loom))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoomItem(pub(crate) u8, pub(crate) u8);

#[cfg(all(test, loom))]
impl QueueItem for LoomItem {
    fn reject(self) {
        panic!("item {self:?} was never executed");
    }
}

pub(crate) use event_queue::{
    EventQueue, QueueItem, RunningGuard, Schedule, last_log, running_queue, runs_a_queue,
};
