//! The `thread_pool` policy: woken queues wait in one shared lock-free FIFO
//! (`crossbeam_deque::Injector`); a queue with work left after its turn goes to the back of
//! its worker's own FIFO, behind the queues woken since (which the worker moves there first),
//! so busy queues take turns in the order one shared FIFO would give them without crossing
//! to the other core at every turn. Every [`defaults::BALANCE_INTERVAL`] turns a worker
//! publishes its FIFO's length and takes the oldest queues of a longer one; an idle worker
//! steals the oldest queue of another. No lock that every send and every worker contend on
//! (a lock over a list of non-empty queues is what makes SObjectizer's individual fifo
//! collapse at small `max_demands_at_once`).
//!
//! The first queue a turn wakes, and a queue with work left when nothing else waits, go to
//! the worker's own slot and run next there: a token passed along a chain of agents stays on
//! one core instead of crossing to the other worker at every hop. The slot is served at most
//! [`defaults::LIFO_STREAK`] times in a row, and another worker takes a queue stranded there
//! by a blocked handler.

use super::{Pool, PoolPolicy, QueueRef, WorkerCtx, take_from};
use crate::defaults;
use crate::dispatcher::Fifo;
use crate::sync::{AtomicUsize, Ordering};
use crossbeam_deque::{Injector, Steal};
use crossbeam_utils::CachePadded;
use std::cell::Cell;

/// The `thread_pool` policy's shared state.
pub(crate) struct ThreadPool {
    /// The shared FIFO of woken queues.
    injector: Injector<QueueRef>,
    /// How many queues each worker's own FIFO held at its last balance check (written by the
    /// owner every [`defaults::BALANCE_INTERVAL`] turns, read by the others).
    fifo_lens: Box<[CachePadded<AtomicUsize>]>,
}

impl ThreadPool {
    pub(crate) fn new(threads: usize) -> Self {
        Self {
            injector: Injector::new(),
            fifo_lens: (0..threads)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }
}

/// Where a queue woken by a send goes, for the policies with one shared FIFO (`thread_pool`,
/// `adv_thread_pool`): from a worker, the first one its turn wakes runs next on that worker
/// (no hand-off to another core, no wake-up) and later ones go to the shared FIFO, so the
/// order they were woken in is the order they run in; from outside, the shared FIFO.
#[inline]
pub(crate) fn schedule_shared_fifo<P: PoolPolicy>(
    pool: &Pool<P>,
    injector: &Injector<QueueRef>,
    q: QueueRef,
) {
    if let Some(w) = pool.current_worker() {
        if pool.slot(w.index).is_occupied() {
            injector.push(q);
            pool.wake_one();
        } else {
            pool.keep_in_slot(w, q, injector);
        }
        return;
    }
    injector.push(q);
    pool.wake_for_outside_work(0);
}

/// Rejects the work of every queue waiting in `injector` (the workers are gone).
pub(crate) fn abandon_all(injector: &Injector<QueueRef>) {
    while let Some(q) = take_from(injector) {
        q.abandon();
    }
}

impl PoolPolicy for ThreadPool {
    const KIND: &'static str = "thread_pool";
    const DEFAULT_FIFO: Fifo = Fifo::Cooperation;
    /// Turns taken: the worker balances its FIFO every `BALANCE_INTERVAL`-th.
    type Worker = Cell<usize>;

    fn new_worker(&self) -> Cell<usize> {
        Cell::new(0)
    }

    #[inline]
    fn schedule(pool: &Pool<Self>, q: QueueRef) {
        schedule_shared_fifo(pool, &pool.policy.injector, q)
    }

    /// The worker's slot (within the streak); then every [`defaults::BALANCE_INTERVAL`]
    /// turns a longer FIFO's oldest queues, else its own FIFO; then the shared FIFO; then
    /// another worker's oldest; then a queue stranded in a blocked worker's slot.
    #[inline]
    fn next_queue(
        pool: &Pool<Self>,
        ctx: &WorkerCtx<Self>,
        lifo_streak: &mut usize,
    ) -> Option<QueueRef> {
        if let Some(q) = pool.take_own_slot(ctx, lifo_streak) {
            return Some(q);
        }
        let tick = ctx.policy.get().wrapping_add(1);
        ctx.policy.set(tick);
        if tick.is_multiple_of(defaults::BALANCE_INTERVAL)
            && let Some(q) = steal_to_balance(pool, ctx)
        {
            return Some(q);
        }
        ctx.local
            .pop()
            .or_else(|| take_from(&pool.policy.injector))
            .or_else(|| pool.own_slot(ctx).take())
            .or_else(|| pool.steal_oldest(ctx))
            .or_else(|| pool.steal_stranded_slot(ctx))
    }

    #[inline]
    fn after_turn(pool: &Pool<Self>, ctx: &WorkerCtx<Self>, q: QueueRef) {
        let injector = &pool.policy.injector;
        // Nothing else waits: run it again here, unseen by the other workers.
        if ctx.local.is_empty() && injector.is_empty() && !pool.slot(ctx.index).is_occupied() {
            pool.keep_in_slot(ctx, q, injector);
            return;
        }
        // Soft affinity: the queue's next turn is on this worker, behind its other queues and
        // behind the queues woken since (as behind one shared FIFO); another worker takes it
        // if it runs dry or this one has more.
        while !injector.is_empty() {
            if let Steal::Empty = injector.steal_batch(&ctx.local) {
                break;
            }
        }
        ctx.local.push(q);
        pool.wake_one();
    }

    fn has_shared_work(&self) -> bool {
        !self.injector.is_empty()
    }

    fn sweep(&self) {
        abandon_all(&self.injector);
    }
}

/// Publishes worker `ctx`'s FIFO length, and takes the oldest queues of the longest other
/// FIFO (half the difference) if that one is longer than this worker's by more than a quarter
/// (plus one): a busy queue then waits about as many turns as behind one shared FIFO.
fn steal_to_balance(pool: &Pool<ThreadPool>, ctx: &WorkerCtx<ThreadPool>) -> Option<QueueRef> {
    let lens = &pool.policy.fifo_lens;
    let mine = ctx.local.len();
    // Stored only when it moved: an unchanged line stays in the other workers' caches, where
    // their next look at it is then a hit rather than a miss across the cores.
    if lens[ctx.index].load(Ordering::Relaxed) != mine {
        lens[ctx.index].store(mine, Ordering::Relaxed);
    }
    let (j, longest) = lens
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != ctx.index)
        .map(|(j, n)| (j, n.load(Ordering::Relaxed)))
        .max_by_key(|(_, n)| *n)?;
    if longest <= mine + 1 + mine / 4 {
        return None;
    }
    // Half the difference, the oldest first: a worker that took every woken queue of a burst
    // evens out in one check, and no further (taking more would only move the imbalance to
    // the other side). A FIFO batch is copied before the steal claims it, and copied again
    // when the other worker popped meanwhile: each retry halves the batch, so a long FIFO
    // whose owner keeps popping costs two copies of the first batch at most, where a fixed
    // batch was copied again and again and hardly ever claimed.
    let mut limit = ((longest - mine) / 2).max(1);
    let stealer = pool.stealer(j);
    loop {
        match stealer.steal_batch_with_limit_and_pop(&ctx.local, limit) {
            Steal::Success(q) => return Some(q),
            Steal::Empty => return None,
            Steal::Retry => limit = (limit / 2).max(1),
        }
    }
}
