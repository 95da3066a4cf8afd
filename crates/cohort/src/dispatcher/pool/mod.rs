//! The pool behind `thread_pool` and `work_stealing`: N worker threads running many queues.
//!
//! A queue bound to a pool is *scheduled* when it goes from idle to having work
//! ([`EventQueue::push_remote`] does it, once per idle period); a worker takes a scheduled
//! queue, runs up to its `max_demands_at_once` demands (a *turn*), then schedules it again if
//! it still has work. One queue is in at most one place at a time (run queue, slot, or a
//! worker's turn), so one agent's handlers never run on two threads at once.
//!
//! The two policies differ only in where scheduled queues wait:
//! - **Fifo** (`thread_pool`): woken queues wait in one shared lock-free FIFO
//!   (`crossbeam_deque::Injector`); a queue with work left after its turn goes to the back of
//!   its worker's own FIFO deque, behind the queues woken since (which the worker moves there
//!   first), so busy queues take turns in the order one shared FIFO would give them, without
//!   crossing to the other core at every turn (fan-out 100 x 100 k, `max_demands_at_once` 4:
//!   12 M to 52 M deliveries/s on 2 vCPUs). Every [`defaults::BALANCE_INTERVAL`] turns a worker
//!   publishes its FIFO's length and takes the oldest queues of a longer one; an idle worker
//!   steals the oldest queue of another. No lock that every send and every worker contend on:
//!   the seed's list-of-non-empty-queues lock is exactly what collapses SObjectizer's
//!   individual fifo at `max_demands_at_once` = 4.
//!   The first queue a turn wakes, and a queue with work left when nothing else waits, go to
//!   the worker's own slot and run next there: a token passed along a chain of agents stays on
//!   one core instead of crossing to the other worker at every hop (ThreadRing: 3-5 M to
//!   10-14 M hops/s on 2 vCPUs, with the claim-and-fill send of `EventQueue::push_remote`).
//!   The slot is served at most [`defaults::LIFO_STREAK`] times in a row, and another
//!   worker takes a queue stranded there by a blocked handler, as below.
//! - **Stealing** (`work_stealing`): a queue woken by a send from a worker goes to that
//!   worker's LIFO slot and runs next there (the message's data is hot in its cache); a queue
//!   with work left after its turn goes to the back of the same worker's own deque (soft
//!   affinity); a queue woken from outside the pool goes to the home run queue of the worker
//!   that ran it last (its agent's data is likely still in that core's cache); an idle worker
//!   takes from its home run queue, then steals the oldest queue waiting in another's, then
//!   the oldest queue of another worker's deque. The LIFO slot is taken at most
//!   [`defaults::LIFO_STREAK`] times in a row, so it cannot starve the worker's deque.
//!
//! Idle workers spin for `worker_spin`, then park; scheduling wakes one parked worker when it
//! puts work where others can take it (Dekker with each worker's [`Wakeup`]).

use super::worker::spin_until;
use super::{BindParams, DispatcherCore, Fifo};
use crate::agent::demand::Demand;
use crate::defaults;
use crate::error::BindError;
use crate::queue::wakeup::Wakeup;
use crate::queue::{EventQueue, RunningGuard, Schedule};
use crate::runtime::coop::CoopId;
use crate::stats::{DispatcherStats, StatsSwitch, WorkerProbe};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where scheduled queues wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// A shared FIFO for woken queues, a FIFO per worker for busy ones (`thread_pool`).
    Fifo,
    /// One shared FIFO run queue, and thread-safe demands run as jobs on any worker, in
    /// parallel (`adv_thread_pool`).
    Adv,
    /// Per-worker deques, a LIFO slot, stealing (`work_stealing`).
    Stealing,
}

/// The `shut` flag in the bound-agents word.
const SHUT: usize = 1 << (usize::BITS - 1);

type QueueRef = Arc<EventQueue>;

/// A worker's LIFO slot: the queue a send from this worker just woke, run next by this
/// worker. Another worker takes it only if it stays there through one long turn of its owner
/// (longer than [`defaults::SLOT_STEAL_AFTER`]): a handler that blocks does not strand the
/// agents it woke, while ordinary hand-offs keep their cache affinity.
#[derive(Default)]
struct Slot {
    queue: AtomicPtr<EventQueue>,
    /// Turns started by the owner.
    turns: AtomicUsize,
}

impl Slot {
    /// Puts `q` in the slot; returns the queue it displaced.
    fn put(&self, q: QueueRef) -> Option<QueueRef> {
        let old = self
            .queue
            // SeqCst: ordered with a worker announcing it parks (see `wake_forever_parked`).
            .swap(Arc::into_raw(q) as *mut EventQueue, Ordering::SeqCst);
        // SAFETY: a non-null slot pointer always comes from `Arc::into_raw` above and is owned
        // by the slot; the swap transferred it to us.
        (!old.is_null()).then(|| unsafe { Arc::from_raw(old) })
    }

    /// Takes the queue out of the slot.
    fn take(&self) -> Option<QueueRef> {
        if self.queue.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let old = self.queue.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: as in `put`.
        (!old.is_null()).then(|| unsafe { Arc::from_raw(old) })
    }

    fn is_occupied(&self) -> bool {
        !self.queue.load(Ordering::SeqCst).is_null()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// `work_stealing`: when a worker busy with its own deque serves its home run queue (the
/// agents woken by sends from outside the pool) first: at every `interval`-th turn, once
/// that run queue has held work for `wait` (as the worker's looks saw it). Set by
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

/// One pool: its workers' shared state.
pub(crate) struct Pool {
    name: String,
    policy: Policy,
    /// The fifo a binder uses when its parameters do not say.
    default_fifo: Fifo,
    spin: Duration,
    /// `work_stealing`: when a worker serves its home run queue before its own deque.
    home: HomeQueuePace,
    /// `thread_pool` and `adv_thread_pool`: the shared FIFO of woken queues (`work_stealing`
    /// puts them in its home run queues instead).
    injector: Injector<QueueRef>,
    /// `work_stealing`: a run queue per worker for the queues woken from outside the pool,
    /// each put in the one of the worker that ran it last (its home, see
    /// `EventQueue::home_counting_unstarted`); the owner takes from it first, an idle worker steals from it.
    homes: Box<[CachePadded<Injector<QueueRef>>]>,
    /// `work_stealing`: how many queues were bound, for the first home of the next one
    /// (blocks of [`defaults::HOME_BLOCK`] per worker, round robin).
    next_home: AtomicUsize,
    /// `work_stealing`: queues scheduled from outside the pool that have not begun a turn
    /// yet (agents just bound, their `start` waiting): while there are any, looks take from
    /// the home run queues with no `home.wait`, so that a burst of new agents starts at the
    /// interval's pace even when every worker is busy.
    unstarted: AtomicUsize,
    /// `adv_thread_pool`: thread-safe demands waiting for a worker.
    jobs: Injector<Job>,
    stealers: Box<[Stealer<QueueRef>]>,
    wakeups: Box<[Wakeup]>,
    /// Each worker's LIFO slot (work stealing), one cache line each: they change every turn.
    slots: Box<[CachePadded<Slot>]>,
    /// `thread_pool`: how many queues each worker's own FIFO held at its last balance check
    /// (written by the owner every [`defaults::BALANCE_INTERVAL`] turns, read by the others).
    fifo_lens: Box<[CachePadded<AtomicUsize>]>,
    /// Each worker is parked with no time limit (so a filled LIFO slot elsewhere must wake it
    /// once, to watch for a stranded queue), and how many are.
    parked_forever: Box<[std::sync::atomic::AtomicBool]>,
    parked_forever_count: AtomicUsize,
    probes: Box<[Arc<WorkerProbe>]>,
    /// Bound agents, with [`SHUT`] once the pool is shut down.
    bound: AtomicUsize,
    /// Cooperation-fifo queues: one per cooperation, shared by its agents.
    coop_queues: Mutex<CoopQueues>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    me: Weak<Pool>,
}

/// `adv_thread_pool`: a thread-safe demand and the queue it came from.
struct Job {
    queue: QueueRef,
    demand: Demand,
}

#[derive(Default)]
struct CoopQueues {
    by_coop: HashMap<CoopId, (QueueRef, usize)>,
    coop_of: HashMap<usize, CoopId>,
}

/// A pool worker's own state, reachable from its thread while it runs.
struct WorkerCtx {
    pool: *const Pool,
    index: usize,
    local: Worker<QueueRef>,
    /// Last time each other worker's LIFO slot was seen occupied during the same turn of its
    /// owner: (turn seen, since when), to steal a queue stranded there (see `Slot`).
    slot_watch: std::cell::RefCell<Vec<Option<(usize, Instant)>>>,
    /// Turns taken: `thread_pool` balances its FIFO every `BALANCE_INTERVAL`-th.
    ticks: Cell<usize>,
    /// `work_stealing`: turns left before the next one starts with the home run queue (a
    /// countdown from the pool's `home.interval`, so a turn costs no division).
    home_countdown: Cell<usize>,
    /// `work_stealing`: since when this worker's looks have found its home run queue holding
    /// work (reset when one finds it empty or the worker takes a batch from it, restarted
    /// when a look takes from it).
    home_waiting_since: Cell<Option<Instant>>,
}

/// Takes the oldest item of a shared run queue, if it has one. Looks before it takes: an
/// `Injector::steal` that finds the queue empty issues a `SeqCst` fence, and `is_empty` is two
/// plain loads. A worker often looks at empty run queues: `adv_thread_pool` at its jobs before
/// every turn, `thread_pool` at the shared FIFO (a priority pool that scanned eight run queues
/// per demand went from 7.3 to 13.8 M msg/s on `cohort-bench self-send` with the look).
#[inline]
fn take_from<T>(i: &Injector<T>) -> Option<T> {
    if i.is_empty() {
        return None;
    }
    settle(|| i.steal())
}

/// Retries a steal until it either takes something or finds nothing.
#[inline]
fn settle<T>(mut steal: impl FnMut() -> Steal<T>) -> Option<T> {
    loop {
        match steal() {
            Steal::Success(v) => return Some(v),
            Steal::Retry => continue,
            Steal::Empty => return None,
        }
    }
}

thread_local! {
    static CURRENT_WORKER: Cell<*const WorkerCtx> = const { Cell::new(std::ptr::null()) };
}

impl Pool {
    /// Creates the pool and starts its `threads` workers.
    pub(crate) fn start(
        name: String,
        policy: Policy,
        default_fifo: Fifo,
        threads: usize,
        spin: Duration,
        home: HomeQueuePace,
        switch: StatsSwitch,
    ) -> std::io::Result<Arc<Pool>> {
        debug_assert!(home.interval >= 1, "validated by the builder");
        let locals: Vec<Worker<QueueRef>> = (0..threads).map(|_| Worker::new_fifo()).collect();
        let stealers = locals.iter().map(Worker::stealer).collect();
        let pool = Arc::new_cyclic(|me| Pool {
            name: name.clone(),
            policy,
            default_fifo,
            spin,
            home,
            injector: Injector::new(),
            homes: match policy {
                Policy::Stealing => (0..threads)
                    .map(|_| CachePadded::new(Injector::new()))
                    .collect(),
                _ => Box::new([]),
            },
            next_home: AtomicUsize::new(0),
            unstarted: AtomicUsize::new(0),
            jobs: Injector::new(),
            stealers,
            wakeups: (0..threads).map(|_| Wakeup::new()).collect(),
            slots: (0..threads)
                .map(|_| CachePadded::new(Slot::default()))
                .collect(),
            fifo_lens: (0..threads)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            parked_forever_count: AtomicUsize::new(0),
            parked_forever: (0..threads)
                .map(|_| std::sync::atomic::AtomicBool::new(false))
                .collect(),
            probes: (0..threads)
                .map(|i| WorkerProbe::new(format!("cohort-{name}-{i}"), switch.clone()))
                .collect(),
            bound: AtomicUsize::new(0),
            coop_queues: Mutex::new(CoopQueues::default()),
            threads: Mutex::new(Vec::new()),
            me: me.clone(),
        });
        let mut handles = Vec::with_capacity(threads);
        for (index, local) in locals.into_iter().enumerate() {
            let p = pool.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cohort-{}-{index}", pool.name))
                .spawn(move || p.run_worker(index, local));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    pool.bound.fetch_or(SHUT, Ordering::AcqRel);
                    pool.wake_all();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(e);
                }
            }
        }
        *pool.threads.lock().unwrap_or_else(|e| e.into_inner()) = handles;
        Ok(pool)
    }

    fn scheduler(&self) -> Arc<dyn Schedule<Demand>> {
        self.me.upgrade().expect("a pool outlives its binders")
    }

    fn new_queue(&self, max_batch: usize) -> QueueRef {
        let q = Arc::new(EventQueue::pooled(self.scheduler(), max_batch));
        if !self.homes.is_empty() {
            let n = self.next_home.fetch_add(1, Ordering::Relaxed);
            q.set_first_home(n / defaults::HOME_BLOCK % self.homes.len());
        }
        q
    }

    /// The worker context of the current thread, if it is one of this pool's workers.
    #[inline]
    fn current_worker(&self) -> Option<&WorkerCtx> {
        let w = CURRENT_WORKER.with(Cell::get);
        // SAFETY: a non-null pointer was set by `run_worker` on this thread and points to its
        // context, which lives until `run_worker` returns (it resets the pointer first).
        let w = unsafe { w.as_ref()? };
        std::ptr::eq(w.pool, self).then_some(w)
    }

    /// A LIFO slot was filled: workers parked with no time limit wake once to watch it.
    /// The slot's SeqCst swap and this SeqCst load pair with the parking worker's SeqCst
    /// count increment and slot loads: one of the two sees the other.
    #[inline]
    fn wake_forever_parked(&self, filler: usize) {
        if self.parked_forever_count.load(Ordering::SeqCst) == 0 {
            return;
        }
        for (j, parked) in self.parked_forever.iter().enumerate() {
            if j != filler && parked.load(Ordering::Relaxed) {
                self.wakeups[j].notify_fenced();
            }
        }
    }

    /// `thread_pool`: puts `q` in worker `w`'s (empty) slot, to run next there.
    #[inline]
    fn keep_in_slot(&self, w: &WorkerCtx, q: QueueRef) {
        if let Some(prev) = self.slots[w.index].put(q) {
            // Only this worker fills its slot, and it was empty: unreachable, but never lose
            // a queue.
            self.injector.push(prev);
            self.wake_one();
        } else {
            self.wake_forever_parked(w.index);
        }
    }

    /// Rejects the demands of every queue still scheduled (the workers are gone).
    fn sweep(&self) {
        while let Steal::Success(job) = self.jobs.steal() {
            job.demand.reject();
        }
        let runs = std::iter::once(&self.injector).chain(self.homes.iter().map(|h| &**h));
        for inj in runs {
            while let Some(q) = take_from(inj) {
                q.abandon();
            }
        }
    }

    /// Wakes one parked worker, if any.
    fn wake_one(&self) {
        self.wake_one_from(0);
    }

    /// Wakes one parked worker, if any, trying worker `first` first.
    fn wake_one_from(&self, first: usize) {
        fence(Ordering::SeqCst);
        let n = self.wakeups.len();
        for k in 0..n {
            if self.wakeups[(first + k) % n].notify_fenced() {
                return;
            }
        }
    }

    fn wake_all(&self) {
        for w in self.wakeups.iter() {
            w.force();
        }
    }

    /// Shut down, every agent gone: workers may exit once nothing is left to run.
    fn is_done(&self) -> bool {
        self.bound.load(Ordering::Acquire) == SHUT
    }

    /// `thread_pool` or `adv_thread_pool`: one shared FIFO run queue.
    #[inline]
    fn is_fifo(&self) -> bool {
        matches!(self.policy, Policy::Fifo | Policy::Adv)
    }

    /// `adv_thread_pool`: runs one waiting thread-safe demand, if any; the last one of its
    /// queue to finish schedules the queue when an exclusive demand waits there.
    fn run_job(&self) -> bool {
        let Some(job) = take_from(&self.jobs) else {
            return false;
        };
        job.demand.run_shared();
        if job.queue.shared_finished() {
            self.injector.push(job.queue);
            self.wake_one();
        }
        true
    }

    /// Whether worker `index` could find a queue to run.
    fn has_work(&self, ctx: &WorkerCtx) -> bool {
        !self.injector.is_empty()
            || self.homes.iter().any(|h| !h.is_empty())
            || !self.jobs.is_empty()
            || !ctx.local.is_empty()
            || self
                .stealers
                .iter()
                .enumerate()
                .any(|(i, s)| i != ctx.index && !s.is_empty())
    }

    /// The next queue for a worker to run.
    fn next_queue(&self, ctx: &WorkerCtx, lifo_streak: &mut usize) -> Option<QueueRef> {
        if self.is_fifo() {
            return self.next_fifo(ctx, lifo_streak);
        }
        let home = &self.homes[ctx.index];
        // Every so often the home run queue goes first, so that a worker kept busy by its own
        // deque (a self-sending agent rescheduled there) does not starve work from outside.
        let left = ctx.home_countdown.get() - 1;
        if left == 0 {
            ctx.home_countdown.set(self.home.interval);
            if let Some(q) = self.look_at_home(ctx, home) {
                return Some(q);
            }
        } else {
            ctx.home_countdown.set(left);
        }
        let slot = &self.slots[ctx.index];
        if *lifo_streak < defaults::LIFO_STREAK
            && let Some(q) = slot.take()
        {
            *lifo_streak += 1;
            return Some(q);
        }
        *lifo_streak = 0;
        if let Some(q) = ctx.local.pop().or_else(|| slot.take()) {
            return Some(q);
        }
        (!home.is_empty())
            .then(|| settle(|| home.steal_batch_and_pop(&ctx.local)))
            .flatten()
            // The home run queue was served: what is left in it waits from the next look.
            .inspect(|_| ctx.home_waiting_since.set(None))
            .or_else(|| self.steal_from_homes(ctx))
            .or_else(|| self.steal_oldest(ctx))
            .or_else(|| self.steal_stranded_slot(ctx))
    }

    /// `work_stealing`, every `home.interval` turns: the oldest queue of this worker's home run
    /// queue, once that run queue has held work for `home.wait` since a look first found it
    /// so (counted again after each queue this worker takes from it); with no wait while some
    /// queue scheduled from outside has not begun its first turn (`unstarted`).
    ///
    /// Until then the worker keeps to its own deque, and the agents woken from outside wait
    /// together, gathering messages, for the deque to run dry (then they move in as a batch)
    /// or for the wait to run out. Taking one at every look instead spreads them one by one
    /// into the deque's round: on the locality experiment (3,000,000 messages) that left 240
    /// agents x 20 x 2 KB 8-14 % behind thread_pool, and 8,000 agents x 100 x 32 KB 15-20 %
    /// slower than with the wait (`docs/BENCHMARKS.md`, 2026-11-25). New agents skip the
    /// wait: a burst of them registered on a busy pool would otherwise start one per wait
    /// (self-send, 50 agents: 0.93-0.96 of the build without the wait).
    fn look_at_home(&self, ctx: &WorkerCtx, home: &Injector<QueueRef>) -> Option<QueueRef> {
        if self.home.wait.is_zero() || self.unstarted.load(Ordering::Relaxed) > 0 {
            return take_from(home);
        }
        if home.is_empty() {
            ctx.home_waiting_since.set(None);
            return None;
        }
        // A clock read per look at a run queue holding work: one per `interval` turns at most.
        let now = Instant::now();
        match ctx.home_waiting_since.get() {
            Some(since) if now.duration_since(since) >= self.home.wait => {
                ctx.home_waiting_since.set(Some(now));
                take_from(home)
            }
            Some(_) => None,
            None => {
                ctx.home_waiting_since.set(Some(now));
                None
            }
        }
    }

    /// `thread_pool` (and `adv_thread_pool`): the queue this worker handed itself (its slot),
    /// unless it took the slot [`defaults::LIFO_STREAK`] times in a row; then (`thread_pool`)
    /// every [`defaults::BALANCE_INTERVAL`] turns a longer FIFO's oldest queues, else its own
    /// FIFO; then the shared FIFO; then another worker's oldest; then a queue stranded in a
    /// blocked worker's slot.
    fn next_fifo(&self, ctx: &WorkerCtx, lifo_streak: &mut usize) -> Option<QueueRef> {
        let slot = &self.slots[ctx.index];
        if *lifo_streak < defaults::LIFO_STREAK
            && let Some(q) = slot.take()
        {
            *lifo_streak += 1;
            return Some(q);
        }
        *lifo_streak = 0;
        if self.policy == Policy::Adv {
            return take_from(&self.injector)
                .or_else(|| slot.take())
                .or_else(|| self.steal_stranded_slot(ctx));
        }
        let tick = ctx.ticks.get().wrapping_add(1);
        ctx.ticks.set(tick);
        if tick.is_multiple_of(defaults::BALANCE_INTERVAL)
            && let Some(q) = self.steal_to_balance(ctx)
        {
            return Some(q);
        }
        ctx.local
            .pop()
            .or_else(|| take_from(&self.injector))
            .or_else(|| slot.take())
            .or_else(|| self.steal_oldest(ctx))
            .or_else(|| self.steal_stranded_slot(ctx))
    }

    /// `thread_pool`: publishes this worker's FIFO length, and takes the oldest queues of the
    /// longest other FIFO (half the difference) if that one is longer than this worker's by
    /// more than a quarter (plus one): a busy queue then waits about as many turns as behind
    /// one shared FIFO.
    fn steal_to_balance(&self, ctx: &WorkerCtx) -> Option<QueueRef> {
        let mine = ctx.local.len();
        self.fifo_lens[ctx.index].store(mine, Ordering::Relaxed);
        let (j, longest) = self
            .fifo_lens
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != ctx.index)
            .map(|(j, n)| (j, n.load(Ordering::Relaxed)))
            .max_by_key(|(_, n)| *n)?;
        if longest <= mine + 1 + mine / 4 {
            return None;
        }
        // Half the difference, the oldest first: a worker that took every woken queue of a
        // burst evens out in one check, and no further (taking more would only move the
        // imbalance to the other side).
        let limit = ((longest - mine) / 2).max(1);
        settle(|| self.stealers[j].steal_batch_with_limit_and_pop(&ctx.local, limit))
    }

    /// `thread_pool`: moves the queues woken since (waiting in the shared FIFO) to the back of
    /// this worker's own FIFO, in the order they were woken.
    #[inline]
    fn take_woken(&self, ctx: &WorkerCtx) {
        while !self.injector.is_empty() {
            if let Steal::Empty = self.injector.steal_batch(&ctx.local) {
                return;
            }
        }
    }

    /// `work_stealing`: the oldest queue waiting in another worker's home run queue, one at a
    /// time (each one taken moves its home here; a batch would move more agents' data than
    /// the idle worker needs).
    fn steal_from_homes(&self, ctx: &WorkerCtx) -> Option<QueueRef> {
        let n = self.homes.len();
        (1..n).find_map(|k| take_from(&self.homes[(ctx.index + k) % n]))
    }

    /// The oldest queue of another worker's own FIFO (an idle worker's last resort).
    fn steal_oldest(&self, ctx: &WorkerCtx) -> Option<QueueRef> {
        let n = self.stealers.len();
        (1..n).find_map(|k| Self::steal_one(&self.stealers[(ctx.index + k) % n]))
    }

    fn steal_one(s: &Stealer<QueueRef>) -> Option<QueueRef> {
        settle(|| s.steal())
    }

    /// Takes a queue that has waited in another worker's LIFO slot through one turn of its
    /// owner longer than [`defaults::SLOT_STEAL_AFTER`].
    fn steal_stranded_slot(&self, ctx: &WorkerCtx) -> Option<QueueRef> {
        let mut watch = ctx.slot_watch.borrow_mut();
        for (j, slot) in self.slots.iter().enumerate() {
            if j == ctx.index {
                continue;
            }
            if !slot.is_occupied() {
                watch[j] = None;
                continue;
            }
            let turn = slot.turns.load(Ordering::Acquire);
            match watch[j] {
                Some((t, since)) if t == turn => {
                    if since.elapsed() >= defaults::SLOT_STEAL_AFTER {
                        watch[j] = None;
                        if let Some(q) = slot.take() {
                            return Some(q);
                        }
                    }
                }
                _ => watch[j] = Some((turn, Instant::now())),
            }
        }
        None
    }

    fn run_worker(self: Arc<Self>, index: usize, local: Worker<QueueRef>) {
        self.wakeups[index].register_current();
        let ctx = WorkerCtx {
            pool: Arc::as_ptr(&self),
            index,
            local,
            slot_watch: std::cell::RefCell::new(vec![None; self.slots.len()]),
            ticks: Cell::new(0),
            home_countdown: Cell::new(self.home.interval),
            home_waiting_since: Cell::new(None),
        };
        CURRENT_WORKER.with(|c| c.set(&ctx));
        let mut lifo_streak = 0;
        let probe = &*self.probes[index];
        loop {
            // Thread-safe demands first: they are already ordered, and finishing them frees
            // the exclusive demands waiting behind them.
            if self.policy == Policy::Adv && self.run_job() {
                continue;
            }
            if let Some(q) = self.next_queue(&ctx, &mut lifo_streak) {
                let t0 = probe.start();
                let (ran, left) = self.run_turn(&ctx, q, t0.is_some());
                if let Some(t0) = t0 {
                    probe.busy(t0, ran, left);
                }
                continue;
            }
            if self.is_done() {
                break;
            }
            let t0 = probe.start();
            if !spin_until(|| self.has_work(&ctx) || self.is_done(), self.spin) {
                let work = || self.has_work(&ctx) || self.is_done();
                if self
                    .slots
                    .iter()
                    .enumerate()
                    .any(|(j, s)| j != index && s.is_occupied())
                {
                    // Another worker's LIFO slot holds a queue: look again soon, in case that
                    // worker is blocked and the queue needs taking (nobody would wake us).
                    self.wakeups[index].sleep_timeout(defaults::SLOT_STEAL_AFTER * 20, work);
                } else {
                    self.parked_forever[index].store(true, Ordering::SeqCst);
                    self.parked_forever_count.fetch_add(1, Ordering::SeqCst);
                    let others = || {
                        self.slots
                            .iter()
                            .enumerate()
                            .any(|(j, s)| j != index && s.is_occupied())
                    };
                    self.wakeups[index].sleep(|| work() || others());
                    self.parked_forever_count.fetch_sub(1, Ordering::SeqCst);
                    self.parked_forever[index].store(false, Ordering::Relaxed);
                }
            }
            if let Some(t0) = t0 {
                probe.idle(t0);
            }
        }
        CURRENT_WORKER.with(|c| c.set(std::ptr::null()));
        // Whatever was scheduled after the last look goes to the dead letters.
        self.sweep();
        while let Some(q) = ctx.local.pop().or_else(|| self.slots[index].take()) {
            q.abandon();
        }
    }

    /// Runs up to `max_demands_at_once` demands of `q`, then schedules it again if it has
    /// more (on this worker's own deque under work stealing: soft affinity).
    /// Returns how many demands ran and (when `measure`) how many are left in the queue.
    fn run_turn(&self, ctx: &WorkerCtx, q: QueueRef, measure: bool) -> (usize, usize) {
        if matches!(self.policy, Policy::Stealing | Policy::Fifo | Policy::Adv) {
            // Only the owner writes its turn count: a plain store, no read-modify-write.
            let turns = &self.slots[ctx.index].turns;
            turns.store(
                turns.load(Ordering::Relaxed).wrapping_add(1),
                Ordering::Release,
            );
        }
        if self.policy == Policy::Stealing {
            // Its home from now on: where a send from outside the pool schedules it.
            if q.set_home(ctx.index) {
                self.unstarted.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let mut ran = 0;
        let mut left = 0;
        let mut waiting = false;
        let max = q.max_batch();
        {
            // SAFETY: the queue came out of a run queue, where it was put by whoever won its
            // IDLE -> SCHEDULED transition; nobody else runs it until this turn ends.
            let _running = unsafe { RunningGuard::enter(&*q) };
            // The demand of the sender that woke the queue, if one did: the oldest, so it runs
            // first (`adv_thread_pool` puts it at the head of the local half, where the loop
            // below sorts thread-safe demands from exclusive ones).
            // SAFETY: this thread runs `q` (guard above).
            if let Some(d) = unsafe { q.take_first() } {
                if self.policy == Policy::Adv {
                    // SAFETY: as above.
                    unsafe { q.unpop_local(d) }
                } else {
                    ran += d.run(&q, max);
                }
            }
            // No more remote demands than this turn can run: a backlog stays in the remote
            // half, whose blocks are reused, instead of growing the local ring (which never
            // shrinks: a queue far behind its senders grew it to the whole backlog, copying
            // it at each doubling and faulting in fresh pages: locality work_stealing, three
            // rounds, x1.03-1.07 on five of six cells, 0.98 on the sixth). Not less either,
            // whatever the local half holds: an agent that keeps `max` demands of its own
            // there (a self-send loop) must still take in what others send it.
            let room = max.saturating_sub(ran);
            if room > 0 {
                // SAFETY: as above.
                unsafe { q.drain_remote(room.min(defaults::REMOTE_BATCH)) };
            }
            while ran < max {
                // SAFETY: as above.
                match unsafe { q.pop_local() } {
                    Some(d) if self.policy == Policy::Adv => {
                        if d.is_thread_safe() {
                            // Runs on whichever worker is free, alongside other thread-safe
                            // demands of this queue; this turn goes on to the next demand.
                            q.shared_started();
                            self.jobs.push(Job {
                                queue: q.clone(),
                                demand: d,
                            });
                            self.wake_one();
                        } else if q.shared_idle() {
                            d.run(&q, 1);
                        } else {
                            // Back at the front first: once this turn says it waits, the
                            // last thread-safe demand to finish schedules the queue, and its
                            // next runner (maybe at once, on another worker) must find the
                            // demand there; this thread no longer touches the queue.
                            // SAFETY: as above.
                            unsafe { q.unpop_local(d) };
                            if measure {
                                // SAFETY: as above (not yet waiting).
                                left = unsafe { q.len_here() };
                            }
                            if q.wait_for_shared() {
                                waiting = true;
                                break;
                            }
                            // They all finished meanwhile: the demand is first again.
                            continue;
                        }
                        ran += 1;
                    }
                    Some(d) => ran += d.run(&q, max - ran),
                    None => break,
                }
            }
            if measure && !waiting {
                // SAFETY: as above (a waiting turn no longer runs the queue).
                left = unsafe { q.len_here() };
            }
        }
        if waiting {
            return (ran, left);
        }
        // SAFETY: the turn is over and the guard dropped.
        if unsafe { q.finish_turn() } {
            match self.policy {
                Policy::Stealing => ctx.local.push(q),
                Policy::Fifo => {
                    // Nothing else waits: run it again here, unseen by the other workers.
                    if ctx.local.is_empty()
                        && self.injector.is_empty()
                        && !self.slots[ctx.index].is_occupied()
                    {
                        self.keep_in_slot(ctx, q);
                        return (ran, left);
                    }
                    // Soft affinity: the queue's next turn is on this worker, behind its other
                    // queues and behind the queues woken since (as behind one shared FIFO);
                    // another worker takes it if it runs dry or this one has more.
                    self.take_woken(ctx);
                    ctx.local.push(q)
                }
                Policy::Adv => {
                    // Nothing else waits: run it again here rather than hand it (and its
                    // agent's data) to another worker. Otherwise it queues behind the others.
                    if self.injector.is_empty() && !self.slots[ctx.index].is_occupied() {
                        self.keep_in_slot(ctx, q);
                        return (ran, left);
                    }
                    self.injector.push(q)
                }
            }
            self.wake_one();
        }
        (ran, left)
    }

    fn bind_queue(&self, params: &BindParams, coop: CoopId) -> Result<QueueRef, BindError> {
        let (fifo, max_batch) = match params {
            BindParams::Pool {
                fifo,
                max_demands_at_once,
            } => (fifo.unwrap_or(self.default_fifo), *max_demands_at_once),
            _ => (self.default_fifo, defaults::MAX_DEMANDS_AT_ONCE),
        };
        Ok(match fifo {
            Fifo::Individual => self.new_queue(max_batch),
            Fifo::Cooperation => {
                let mut cq = self.coop_queues.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((q, n)) = cq.by_coop.get_mut(&coop) {
                    *n += 1;
                    q.clone()
                } else {
                    let q = self.new_queue(max_batch);
                    cq.coop_of.insert(Arc::as_ptr(&q) as usize, coop);
                    cq.by_coop.insert(coop, (q.clone(), 1));
                    q
                }
            }
        })
    }
}

impl Schedule<Demand> for Pool {
    fn schedule(&self, q: QueueRef) {
        if self.policy == Policy::Stealing
            && let Some(w) = self.current_worker()
        {
            // Runs next on this worker: the sender's data is hot in its cache.
            match self.slots[w.index].put(q) {
                Some(prev) => {
                    w.local.push(prev);
                    self.wake_one();
                }
                None => self.wake_forever_parked(w.index),
            }
            return;
        }
        if self.is_fifo()
            && let Some(w) = self.current_worker()
        {
            // The first queue a turn wakes runs next on this worker (no hand-off to another
            // core, no wake-up); later ones go to the shared FIFO, so the order they were woken
            // in is the order they run in.
            if self.slots[w.index].is_occupied() {
                self.injector.push(q);
                self.wake_one();
            } else {
                self.keep_in_slot(w, q);
            }
            return;
        }
        let mut first = 0;
        match self.policy {
            Policy::Stealing => {
                // Back to the worker that ran it last: its agent's data may still be in that
                // core's cache.
                let (home, unstarted) = q.home_counting_unstarted();
                first = home % self.homes.len();
                if unstarted {
                    self.unstarted.fetch_add(1, Ordering::Relaxed);
                }
                self.homes[first].push(q);
            }
            _ => self.injector.push(q),
        }
        // `wake_one_from` fences (SeqCst) after the push, before this load.
        self.wake_one_from(first);
        // The workers may have exited (every agent gone) after this queue's sender saw its
        // agent alive: reject what nobody will run, counted as dead letters.
        if self.is_done() {
            self.sweep();
        }
    }
}

/// The `DispatcherCore` face of a pool.
pub(crate) struct PoolCore(pub(crate) Arc<Pool>);

impl DispatcherCore for PoolCore {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn bind(&self, params: &BindParams, coop: CoopId) -> Result<QueueRef, BindError> {
        let pool = &self.0;
        if pool.bound.fetch_add(1, Ordering::AcqRel) & SHUT != 0 {
            pool.bound.fetch_sub(1, Ordering::AcqRel);
            return Err(BindError::DispatcherShutDown {
                name: pool.name.clone(),
            });
        }
        pool.bind_queue(params, coop)
    }

    fn unbind(&self, queue: &QueueRef) {
        let pool = &self.0;
        {
            let mut cq = pool.coop_queues.lock().unwrap_or_else(|e| e.into_inner());
            let key = Arc::as_ptr(queue) as usize;
            if let Some(coop) = cq.coop_of.get(&key).copied()
                && let Some((_, n)) = cq.by_coop.get_mut(&coop)
            {
                *n -= 1;
                if *n == 0 {
                    cq.by_coop.remove(&coop);
                    cq.coop_of.remove(&key);
                }
            }
        }
        if pool.bound.fetch_sub(1, Ordering::AcqRel) == SHUT | 1 {
            pool.wake_all();
        }
    }

    fn shutdown(&self) {
        if self.0.bound.fetch_or(SHUT, Ordering::AcqRel) == 0 {
            self.0.wake_all();
        }
    }

    fn stats(&self) -> DispatcherStats {
        let kind = match self.0.policy {
            Policy::Fifo => "thread_pool",
            Policy::Adv => "adv_thread_pool",
            Policy::Stealing => "work_stealing",
        };
        let workers = self.0.probes.iter().map(|p| p.snapshot()).collect();
        DispatcherStats {
            name: self.0.name.clone(),
            kind,
            workers,
        }
    }

    fn join(&self) {
        let threads =
            std::mem::take(&mut *self.0.threads.lock().unwrap_or_else(|e| e.into_inner()));
        super::worker::join_all(&self.0.name, threads);
    }
}
