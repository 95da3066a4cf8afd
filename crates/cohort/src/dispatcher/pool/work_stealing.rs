//! The `work_stealing` policy: a queue woken by a send from a worker goes to that worker's
//! LIFO slot and runs next there (the message's data is hot in its cache), and the queue it
//! displaces goes on top of the worker's LIFO deque (so a tree of agents runs depth first:
//! skynet's leaves answer before their cousins exist); a queue with work
//! left after its turn goes to the back of the same worker's own deque (soft affinity); a
//! queue woken from outside the pool goes to the home run queue of the worker that ran it
//! last (its agent's data is likely still in that core's cache). An idle worker takes from
//! its home run queue, then steals the oldest queue waiting in another's, then the oldest of
//! another worker's LIFO deque, then the oldest queue of another worker's FIFO. The LIFO slot
//! and the LIFO deque together are taken at most [`defaults::LIFO_STREAK`] times in a row, so
//! they cannot starve the worker's FIFO.
//!
//! A queue's [policy word](crate::queue::EventQueue::policy_word) is its *home*: the worker
//! that last began a turn of it. A hint, not part of the claim protocol (relaxed; a stale
//! value only costs locality), stored only when it changes. Its two top bits flag a queue that
//! has not begun a turn yet ([`HOME_UNSTARTED`], [`HOME_COUNTED`]): written by the binder,
//! then by the claim winner that schedules it, then cleared by its first runner, each ordered
//! after the one before by the binding and by the run queue's push and pop.

use super::{
    Pool, PoolPolicy, QueueRef, WorkerCtx, settle, take_from, thread_pool::abandon_all,
    within_streak,
};
use crate::defaults;
use crate::dispatcher::Fifo;
use crate::queue::EventQueue;
use crate::sync::{AtomicUsize, Ordering};
use crossbeam_deque::Injector;
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// Home word flag: the queue has not begun a turn yet (set at bind time, cleared by its first
/// turn).
const HOME_UNSTARTED: u32 = 1 << 31;
/// Home word flag: an unstarted queue, scheduled from outside the pool, that its pool counts
/// until its first turn.
const HOME_COUNTED: u32 = 1 << 30;

/// When a worker busy with its own deque serves its home run queue (the agents woken by sends
/// from outside the pool) first: at every `interval`-th turn, once that run queue has held
/// work for `wait` (as the worker's looks saw it). Set by
/// `WorkStealingBuilder::home_queue_interval` and `home_queue_wait`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HomeQueuePace {
    /// Turns between looks (at least 1).
    pub(crate) interval: usize,
    /// How long the home run queue holds work before a look takes from it (zero: at once).
    pub(crate) wait: Duration,
}

impl Default for HomeQueuePace {
    fn default() -> Self {
        Self {
            interval: defaults::HOME_QUEUE_INTERVAL,
            wait: defaults::HOME_QUEUE_WAIT,
        }
    }
}

/// The `work_stealing` policy's shared state.
pub(crate) struct WorkStealing {
    pace: HomeQueuePace,
    /// A run queue per worker for the queues woken from outside the pool, each put in the one
    /// of the worker that ran it last (its home); the owner takes from it first, an idle
    /// worker steals from it.
    homes: Box<[CachePadded<Injector<QueueRef>>]>,
    /// How many queues were bound, for the first home of the next one (blocks of
    /// [`defaults::HOME_BLOCK`] per worker, round robin).
    next_home: AtomicUsize,
    /// Queues scheduled from outside the pool that have not begun a turn yet (agents just
    /// bound, their `start` waiting): while there are any, looks take from the home run
    /// queues with no `pace.wait`, so that a burst of new agents starts at the interval's
    /// pace even when every worker is busy.
    unstarted: AtomicUsize,
}

impl WorkStealing {
    pub(crate) fn new(threads: usize, pace: HomeQueuePace) -> Self {
        debug_assert!(pace.interval >= 1, "validated by the builder");
        Self {
            pace,
            homes: (0..threads)
                .map(|_| CachePadded::new(Injector::new()))
                .collect(),
            next_home: AtomicUsize::new(0),
            unstarted: AtomicUsize::new(0),
        }
    }
}

/// A worker's own `work_stealing` state.
pub(crate) struct HomeLooks {
    /// Turns left before the next one starts with the home run queue (a countdown from the
    /// pool's `pace.interval`, so a turn costs no division).
    countdown: Cell<usize>,
    /// Since when this worker's looks have found its home run queue holding work (reset when
    /// one finds it empty or the worker takes a batch from it, restarted when a look takes
    /// from it).
    waiting_since: Cell<Option<Instant>>,
}

impl PoolPolicy for WorkStealing {
    const KIND: &'static str = "work_stealing";
    const DEFAULT_FIFO: Fifo = Fifo::Individual;
    type Worker = HomeLooks;

    fn new_worker(&self) -> HomeLooks {
        HomeLooks {
            countdown: Cell::new(self.pace.interval),
            waiting_since: Cell::new(None),
        }
    }

    fn on_new_queue(&self, q: &EventQueue) {
        let n = self.next_home.fetch_add(1, Ordering::Relaxed);
        let worker = n / defaults::HOME_BLOCK % self.homes.len();
        q.policy_word()
            .store(home_word(worker) | HOME_UNSTARTED, Ordering::Relaxed);
    }

    #[inline]
    fn schedule(pool: &Pool<Self>, q: QueueRef) {
        if let Some(w) = pool.current_worker() {
            // Runs next on this worker: the sender's data is hot in its cache.
            pool.put_in_slot(w, q);
            return;
        }
        // Back to the worker that ran it last: its agent's data may still be in that core's
        // cache.
        let policy = &pool.policy;
        let (home, unstarted) = home_counting_unstarted(&q);
        let first = home % policy.homes.len();
        if unstarted {
            policy.unstarted.fetch_add(1, Ordering::Relaxed);
        }
        policy.homes[first].push(q);
        pool.wake_for_outside_work(first);
    }

    /// Every `pace.interval` turns the home run queue first; then the slot, else the LIFO
    /// deque (within the streak); then the worker's FIFO; then a batch
    /// of its home run queue; then another's home run queue, another's LIFO deque, another's
    /// FIFO, a queue stranded in a blocked worker's slot.
    #[inline]
    fn next_queue(
        pool: &Pool<Self>,
        ctx: &WorkerCtx<Self>,
        lifo_streak: &mut usize,
    ) -> Option<QueueRef> {
        let policy = &pool.policy;
        let home = &policy.homes[ctx.index];
        // Every so often the home run queue goes first, so that a worker kept busy by its own
        // deque (a self-sending agent rescheduled there) does not starve work from outside.
        let looks = &ctx.policy;
        let left = looks.countdown.get() - 1;
        if left == 0 {
            looks.countdown.set(policy.pace.interval);
            if let Some(q) = policy.look_at_home(looks, home) {
                return Some(q);
            }
        } else {
            looks.countdown.set(left);
        }
        if let Some(q) = take_newest(pool, ctx, lifo_streak) {
            return Some(q);
        }
        if let Some(q) = ctx
            .local
            .pop()
            .or_else(|| ctx.fresh.pop())
            .or_else(|| pool.own_slot(ctx).take())
        {
            return Some(q);
        }
        (!home.is_empty())
            .then(|| settle(|| home.steal_batch_and_pop(&ctx.local)))
            .flatten()
            // The home run queue was served: what is left in it waits from the next look.
            .inspect(|_| looks.waiting_since.set(None))
            .or_else(|| policy.steal_from_homes(ctx.index))
            .or_else(|| pool.steal_fresh(ctx))
            .or_else(|| pool.steal_oldest(ctx))
            .or_else(|| pool.steal_stranded_slot(ctx))
    }

    fn begin_turn(pool: &Pool<Self>, ctx: &WorkerCtx<Self>, q: &EventQueue) {
        // Its home from now on: where a send from outside the pool schedules it.
        if set_home(q, ctx.index) {
            pool.policy.unstarted.fetch_sub(1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn after_turn(pool: &Pool<Self>, ctx: &WorkerCtx<Self>, q: QueueRef) {
        ctx.local.push(q);
        pool.wake_one();
    }

    fn has_shared_work(&self) -> bool {
        self.homes.iter().any(|h| !h.is_empty())
    }

    fn sweep(&self) {
        for home in self.homes.iter() {
            abandon_all(home);
        }
    }
}

impl WorkStealing {
    /// Every `pace.interval` turns: the oldest queue of this worker's home run queue, once
    /// that run queue has held work for `pace.wait` since a look first found it so (counted
    /// again after each queue this worker takes from it); with no wait while some queue
    /// scheduled from outside has not begun its first turn (`unstarted`).
    ///
    /// Until then the worker keeps to its own deque, and the agents woken from outside wait
    /// together, gathering messages, for the deque to run dry (then they move in as a batch)
    /// or for the wait to run out; taking one at every look instead spreads them one by one
    /// into the deque's round, which costs agents with large states their cache. New agents
    /// skip the wait: a burst of them registered on a busy pool would otherwise start one per
    /// wait.
    fn look_at_home(&self, looks: &HomeLooks, home: &Injector<QueueRef>) -> Option<QueueRef> {
        if self.pace.wait.is_zero() || self.unstarted.load(Ordering::Relaxed) > 0 {
            return take_from(home);
        }
        if home.is_empty() {
            looks.waiting_since.set(None);
            return None;
        }
        // A clock read per look at a run queue holding work: one per `interval` turns at most.
        let now = Instant::now();
        match looks.waiting_since.get() {
            Some(since) if now.duration_since(since) >= self.pace.wait => {
                looks.waiting_since.set(Some(now));
                take_from(home)
            }
            Some(_) => None,
            None => {
                looks.waiting_since.set(Some(now));
                None
            }
        }
    }

    /// The oldest queue waiting in another worker's home run queue, one at a time (each one
    /// taken moves its home here; a batch would move more agents' data than the idle worker
    /// needs).
    fn steal_from_homes(&self, index: usize) -> Option<QueueRef> {
        let n = self.homes.len();
        (1..n).find_map(|k| take_from(&self.homes[(index + k) % n]))
    }
}

/// The queue in the worker's slot, else the newest of its LIFO deque, within one streak
/// for both (then its FIFO gets a turn first).
#[inline]
fn take_newest(
    pool: &Pool<WorkStealing>,
    ctx: &WorkerCtx<WorkStealing>,
    streak: &mut usize,
) -> Option<QueueRef> {
    within_streak(streak, || {
        pool.own_slot(ctx).take().or_else(|| ctx.fresh.pop())
    })
}

/// A worker's index as stored in the home word, without the flags.
fn home_word(worker: usize) -> u32 {
    u32::try_from(worker).unwrap_or(0) & !(HOME_UNSTARTED | HOME_COUNTED)
}

/// By the thread that won the claim to schedule `q` from outside the pool (nobody runs it
/// meanwhile): its home, and true, once, if the queue has not begun a turn yet; the caller
/// counts it until its first turn (see [`set_home`]). One load of the word for both.
#[inline]
fn home_counting_unstarted(q: &EventQueue) -> (usize, bool) {
    let word = q.policy_word();
    let h = word.load(Ordering::Relaxed);
    let home = (h & !(HOME_UNSTARTED | HOME_COUNTED)) as usize;
    if h & (HOME_UNSTARTED | HOME_COUNTED) != HOME_UNSTARTED {
        return (home, false);
    }
    // The scheduling push that follows publishes it to the queue's first runner.
    word.store(h | HOME_COUNTED, Ordering::Relaxed);
    (home, true)
}

/// Names the worker `q` goes back to when it is woken from outside the pool (set by every
/// turn's worker). Returns true at the first turn of a queue that [`home_counting_unstarted`]
/// counted.
#[inline]
fn set_home(q: &EventQueue, worker: usize) -> bool {
    let word = q.policy_word();
    let worker = home_word(worker);
    let old = word.load(Ordering::Relaxed);
    // Only when it changes: the line stays shared with the senders that read it.
    if old != worker {
        word.store(worker, Ordering::Relaxed);
    }
    old & HOME_COUNTED != 0
}
