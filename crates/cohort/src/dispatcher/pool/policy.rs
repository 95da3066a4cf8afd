//! The decisions that make a [`Pool`] a `thread_pool`, an `adv_thread_pool` or a
//! `work_stealing` dispatcher: one method per decision, static dispatch (the pool is generic
//! over its policy, so a decision costs no indirect call on the hot path).

use super::{Pool, QueueRef, WorkerCtx};
use crate::dispatcher::Fifo;
use crate::queue::{EventQueue, TurnOutcome};

/// What a turn did: demands run, demands left (when measured), and what becomes of the
/// queue.
pub(crate) struct TurnEnd {
    pub(crate) ran: usize,
    pub(crate) left: usize,
    /// Again: work left, and this worker won the race to schedule the queue; idle; or handed
    /// over to whoever finishes its last thread-safe demand (`adv_thread_pool`).
    pub(crate) next: TurnOutcome,
}

/// Where scheduled queues wait and which one a worker runs next.
pub(crate) trait PoolPolicy: Sized + Send + Sync + 'static {
    /// The dispatcher kind, as statistics name it.
    const KIND: &'static str;
    /// The fifo a binder gets when its parameters do not say.
    const DEFAULT_FIFO: Fifo;
    /// A worker's own state for this policy (counters, clocks).
    type Worker;

    /// A worker's state when it starts.
    fn new_worker(&self) -> Self::Worker;

    /// A new queue was bound (before any send can reach it).
    fn on_new_queue(&self, _queue: &EventQueue) {}

    /// Where a queue that just got work goes: the sender won its idle-to-scheduled claim.
    fn schedule(pool: &Pool<Self>, queue: QueueRef);

    /// The queue a worker runs next, if it finds one.
    fn next_queue(
        pool: &Pool<Self>,
        worker: &WorkerCtx<Self>,
        lifo_streak: &mut usize,
    ) -> Option<QueueRef>;

    /// A worker begins a turn of `queue`.
    fn begin_turn(_pool: &Pool<Self>, _worker: &WorkerCtx<Self>, _queue: &EventQueue) {}

    /// Runs the demands of one turn (the plain turn unless the policy runs demands elsewhere).
    fn turn(pool: &Pool<Self>, queue: &QueueRef, measure: bool) -> TurnEnd {
        pool.plain_turn(queue, measure)
    }

    /// Where a queue that still has work after its turn goes.
    fn after_turn(pool: &Pool<Self>, worker: &WorkerCtx<Self>, queue: QueueRef);

    /// Runs one piece of work that is not a queue's turn, if the policy has one waiting
    /// (`adv_thread_pool`: a thread-safe demand); true if it ran one.
    fn run_side_work(_pool: &Pool<Self>) -> bool {
        false
    }

    /// Whether the policy's shared run queues hold work (for a worker about to park).
    fn has_shared_work(&self) -> bool;

    /// Rejects whatever waits in the policy's run queues (the workers are gone).
    fn sweep(&self);
}
