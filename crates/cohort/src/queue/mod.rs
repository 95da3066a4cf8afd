//! Event queues: where demands wait for the worker thread that runs them.

mod block_pool;
mod dedicated_reader;
mod event_queue;
mod give_back;
mod local;
mod local_ring;
#[cfg(all(test, cohort_loom))]
pub(crate) mod loom_model;
mod pool_state;
mod queue_arc;
mod remote_blocks;
mod running;
mod scheduled;
pub(crate) mod sender_epoch;
pub(crate) mod sweep_list;
#[cfg(all(test, not(cohort_loom)))]
pub(crate) mod test_item;
pub(crate) mod wakeup;

#[cfg(not(cohort_loom))]
pub(crate) use block_pool::BlockPool;
pub(crate) use dedicated_reader::DedicatedReader;
pub(crate) use event_queue::{EventQueue, IdleMemory, QueueItem, Schedule};
pub(crate) use local::Local;
#[cfg(all(test, not(cohort_loom)))]
pub(crate) use local_ring::KEPT_CAPACITY;
pub(crate) use pool_state::TurnOutcome;
pub(crate) use queue_arc::QueueArc;
pub(crate) use running::{RunningGuard, running_queue, runs_a_queue};
pub(crate) use scheduled::Scheduled;

/// Frees the blocks pooled for demand queues (see [`BlockPool`]).
#[cfg(not(cohort_loom))]
pub(crate) fn release_pooled_blocks() {
    if let Some(pool) = <crate::agent::demand::Demand as QueueItem>::block_pool() {
        pool.release_all();
    }
}
