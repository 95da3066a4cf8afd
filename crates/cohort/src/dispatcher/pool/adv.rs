//! The `adv_thread_pool` policy: one shared FIFO run queue as `thread_pool`'s, and an agent's
//! thread-safe demands run as jobs on any worker, in parallel, while its exclusive demands
//! wait for them.
//!
//! The queue's [policy word](crate::queue::EventQueue::policy_word) counts its thread-safe
//! demands in flight, plus [`SHARED_WAITING`] while an exclusive demand waits for them: the
//! last of them to finish then schedules the queue again.

use super::thread_pool::{abandon_all, schedule_shared_fifo};
use super::{Pool, PoolPolicy, QueueRef, TurnEnd, WorkerCtx, take_from};
use crate::agent::demand::Demand;
use crate::defaults;
use crate::dispatcher::Fifo;
use crate::queue::{EventQueue, QueueArc, RunningGuard, Scheduled, TurnOutcome};
use crossbeam_deque::{Injector, Steal};
use std::sync::atomic::Ordering;

/// The flag in the in-flight count: the last thread-safe demand to finish schedules the queue.
const SHARED_WAITING: u32 = 1 << (u32::BITS - 1);

/// The `adv_thread_pool` policy's shared state.
pub(crate) struct Adv {
    /// The shared FIFO of scheduled queues.
    injector: Injector<QueueRef>,
    /// Thread-safe demands waiting for a worker.
    jobs: Injector<Job>,
}

/// A thread-safe demand and the queue it came from.
struct Job {
    queue: QueueArc,
    demand: Demand,
}

impl Adv {
    pub(crate) fn new() -> Self {
        Self {
            injector: Injector::new(),
            jobs: Injector::new(),
        }
    }
}

impl PoolPolicy for Adv {
    const KIND: &'static str = "adv_thread_pool";
    const DEFAULT_FIFO: Fifo = Fifo::Cooperation;
    type Worker = ();

    fn new_worker(&self) {}

    #[inline]
    fn schedule(pool: &Pool<Self>, q: QueueRef) {
        schedule_shared_fifo(pool, &pool.policy.injector, q)
    }

    /// The worker's slot (within the streak), then the shared FIFO, then a queue stranded in
    /// a blocked worker's slot.
    #[inline]
    fn next_queue(
        pool: &Pool<Self>,
        ctx: &WorkerCtx<Self>,
        lifo_streak: &mut usize,
    ) -> Option<QueueRef> {
        pool.take_own_slot(ctx, lifo_streak)
            .or_else(|| take_from(&pool.policy.injector))
            .or_else(|| pool.own_slot(ctx).take())
            .or_else(|| pool.steal_stranded_slot(ctx))
    }

    /// Runs exclusive demands here and hands thread-safe ones to any worker, up to
    /// `max_demands_at_once`; an exclusive demand that finds thread-safe ones running leaves
    /// the queue to the last of them.
    fn turn(pool: &Pool<Self>, q: &QueueRef, measure: bool) -> TurnEnd {
        let (mut ran, mut left) = (0, 0);
        let max = q.max_demands_at_once();
        // SAFETY: the queue came out of a run queue, where it was put by whoever won its
        // IDLE -> SCHEDULED transition; nobody else runs it until this turn ends.
        let running = unsafe { RunningGuard::enter(&**q) };
        let local = running.local();
        // The demand of the sender that woke the queue, if one did: the oldest, so at the
        // head of the local half, where the loop below sorts thread-safe demands from
        // exclusive ones.
        if let Some(d) = local.take_first() {
            local.unpop(d)
        }
        local.drain_remote(max.min(defaults::REMOTE_BATCH));
        while ran < max {
            let Some(d) = local.pop() else {
                break;
            };
            if d.is_thread_safe() {
                // Runs on whichever worker is free, alongside other thread-safe demands of
                // this queue; this turn goes on to the next demand.
                shared_started(q);
                pool.policy.jobs.push(Job {
                    queue: q.arc(),
                    demand: d,
                });
                pool.wake_one();
            } else if shared_idle(q) {
                d.run(q, 1);
            } else {
                // Back at the front first: once this turn says it waits, the last thread-safe
                // demand to finish schedules the queue, and its next runner (maybe at once, on
                // another worker) must find the demand there; this thread no longer touches
                // the queue.
                local.unpop(d);
                if measure {
                    left = local.len();
                }
                if wait_for_shared(q) {
                    drop(running);
                    return TurnEnd {
                        ran,
                        left,
                        next: TurnOutcome::HandedOver,
                    };
                }
                // They all finished meanwhile: the demand is first again.
                continue;
            }
            ran += 1;
        }
        if measure {
            left = local.len();
        }
        TurnEnd {
            ran,
            left,
            // Every demand of this turn went through the local half.
            next: running.end_turn(ran > 0),
        }
    }

    #[inline]
    fn after_turn(pool: &Pool<Self>, ctx: &WorkerCtx<Self>, q: QueueRef) {
        let injector = &pool.policy.injector;
        // Nothing else waits: run it again here rather than hand it (and its agent's data) to
        // another worker. Otherwise it queues behind the others.
        if injector.is_empty() && !pool.slot(ctx.index).is_occupied() {
            pool.keep_in_slot(ctx, q, injector);
            return;
        }
        injector.push(q);
        pool.wake_one();
    }

    /// Runs one waiting thread-safe demand, if any (they are already ordered, and finishing
    /// them frees the exclusive demands waiting behind them); the last one of its queue to
    /// finish schedules the queue when an exclusive demand waits there.
    fn run_side_work(pool: &Pool<Self>) -> bool {
        let Some(job) = take_from(&pool.policy.jobs) else {
            return false;
        };
        job.demand.run_shared();
        if shared_finished(&job.queue) {
            // Still scheduled (the turn that waited handed it over): this job's count holds it.
            pool.policy.injector.push(Scheduled::from_arc(job.queue));
            pool.wake_one();
        }
        true
    }

    fn has_shared_work(&self) -> bool {
        !self.injector.is_empty() || !self.jobs.is_empty()
    }

    fn sweep(&self) {
        while let Steal::Success(job) = self.jobs.steal() {
            job.demand.reject();
        }
        abandon_all(&self.injector);
    }
}

/// A thread-safe demand of `q` leaves to run on some worker.
pub(super) fn shared_started<T: crate::queue::QueueItem>(q: &EventQueue<T>) {
    q.policy_word().fetch_add(1, Ordering::AcqRel);
}

/// A thread-safe demand of `q` has finished. Returns true if it was the last one and an
/// exclusive demand waits: the caller must schedule the queue.
pub(super) fn shared_finished<T: crate::queue::QueueItem>(q: &EventQueue<T>) -> bool {
    let word = q.policy_word();
    // AcqRel: what the handler did happens before the exclusive demand that follows.
    if word.fetch_sub(1, Ordering::AcqRel) == SHARED_WAITING | 1 {
        word.store(0, Ordering::Release);
        return true;
    }
    false
}

/// True if no thread-safe demand of `q` runs, so an exclusive one may go ahead.
pub(super) fn shared_idle<T: crate::queue::QueueItem>(q: &EventQueue<T>) -> bool {
    q.policy_word().load(Ordering::Acquire) == 0
}

/// The queue's runner has an exclusive demand to run but saw thread-safe ones running
/// ([`shared_idle`] false). Returns true if some still run: the last of them to finish
/// schedules the queue again, so the runner must end its turn without doing so and, from this
/// call on, touch neither the queue's local half nor the agent (the next runner may already
/// have started): the exclusive demand must be back in the local half before this call. False
/// if they all finished in between: the runner goes on.
pub(super) fn wait_for_shared<T: crate::queue::QueueItem>(q: &EventQueue<T>) -> bool {
    let word = q.policy_word();
    if word.fetch_or(SHARED_WAITING, Ordering::AcqRel) != 0 {
        return true;
    }
    // They all finished in between: clear the flag and go ahead.
    word.store(0, Ordering::Release);
    false
}
