//! The pool behind `thread_pool`, `adv_thread_pool` and `work_stealing`: N worker threads
//! running many queues, with where queues wait decided by a [`PoolPolicy`].
//!
//! A queue bound to a pool is *scheduled* when it goes from idle to having work
//! ([`EventQueue::push_remote`](crate::queue::EventQueue::push_remote) does it, once per
//! idle period); a worker takes a scheduled queue, runs up to its `max_demands_at_once`
//! demands (a *turn*), then schedules it again if it still has work. One queue is in at most one place at a time (run queue, slot, or a
//! worker's turn), so one agent's handlers never run on two threads at once.
//!
//! Shared by every policy: each worker's own FIFO deque (stealable by the others), its LIFO
//! slot (the queue it runs next, taken by another worker only when stranded there) and the
//! LIFO deque behind it (the queues the slot gave way to, newest first: a tree of agents that
//! wake their children runs depth first, so the leaves answer and go before their cousins
//! are created; stealable oldest first, the biggest subtrees), the park/unpark protocol,
//! bindings and shutdown (`pool_core.rs`, with the cooperation-fifo table in
//! `coop_queues.rs`). The policies (`thread_pool.rs`, `adv.rs`,
//! `work_stealing.rs`) decide where a woken queue goes, what a worker runs next and where a
//! queue with work left after its turn goes.
//!
//! Idle workers spin as their own [`Spinner`] says (under `worker_spin`), then park;
//! scheduling wakes one parked worker when it puts work where others can take it (Dekker with
//! each worker's [`Wakeup`]).

mod adv;
mod asymmetric_fence;
mod coop_queues;
#[cfg(all(test, cohort_loom))]
mod loom_model;
pub(crate) mod params;
mod park;
mod policy;
mod pool_core;
mod slot;
mod thread_pool;
mod work_stealing;

pub(crate) use adv::Adv;
pub(crate) use policy::{PoolPolicy, TurnEnd};
pub(crate) use pool_core::PoolCore;
pub(crate) use thread_pool::ThreadPool;
pub(crate) use work_stealing::{HomeQueuePace, WorkStealing};

use super::reuse::bound_count::BoundCount;
use super::reuse::spin::{Spinner, WorkerSpin};
use crate::agent::demand::Demand;
use crate::defaults;
use crate::queue::wakeup::Wakeup;
use crate::queue::{RunningGuard, Schedule, Scheduled, TurnOutcome};
use crate::stats::{StatsSwitch, WorkerProbe};
use crate::sync::{Ordering, fence};
use coop_queues::CoopQueues;
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use park::ForeverParked;
use slot::{OwnSlot, Slot, SlotOwner};
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// A scheduled queue, as run queues, slots and turns hold it (see [`Scheduled`]).
pub(crate) type QueueRef = Scheduled;

/// One pool: its workers' shared state.
pub(crate) struct Pool<P: PoolPolicy> {
    name: String,
    pub(crate) policy: P,
    spin: WorkerSpin,
    stealers: Box<[Stealer<QueueRef>]>,
    /// Each worker's LIFO deque of queues displaced from its slot, for stealing.
    fresh_stealers: Box<[Stealer<QueueRef>]>,
    wakeups: Box<[Wakeup]>,
    /// Each worker's LIFO slot, one cache line each: they change every turn.
    slots: Box<[CachePadded<Slot>]>,
    /// The workers parked with no time limit (a filled LIFO slot elsewhere must wake them
    /// once, to watch for a stranded queue).
    parked_forever: ForeverParked,
    probes: Box<[Arc<WorkerProbe>]>,
    /// Bound agents, and whether the pool is shut down.
    bound: BoundCount,
    /// Cooperation-fifo queues: one per cooperation, shared by its agents.
    coop_queues: CoopQueues,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A pool worker's own state, reachable from its thread while it runs.
pub(crate) struct WorkerCtx<P: PoolPolicy> {
    pub(crate) index: usize,
    /// This worker's right to fill and empty its own slot with plain stores.
    slot_owner: SlotOwner,
    pub(crate) local: Worker<QueueRef>,
    /// The queues displaced from this worker's slot by newer ones, newest on top.
    pub(crate) fresh: Worker<QueueRef>,
    /// Last time each other worker's LIFO slot was seen occupied during the same turn of its
    /// owner: (turn seen, since when), to steal a queue stranded there (see `Slot`).
    slot_watch: RefCell<Vec<Option<(usize, Instant)>>>,
    /// How long this worker spins before it parks, learnt from its own recent waits.
    spinner: Spinner,
    /// The policy's per-worker state.
    pub(crate) policy: P::Worker,
}

/// Takes the oldest item of a shared run queue, if it has one. Looks before it takes: an
/// `Injector::steal` that finds the queue empty issues a `SeqCst` fence, and `is_empty` is two
/// plain loads, and workers often look at empty run queues.
#[inline]
pub(crate) fn take_from<T>(i: &Injector<T>) -> Option<T> {
    if i.is_empty() {
        return None;
    }
    settle(|| i.steal())
}

/// What `take` gives (a queue a worker handed itself), unless the worker took such a queue
/// [`defaults::LIFO_STREAK`] times in a row: then `None`, and the streak starts again.
#[inline(always)]
pub(crate) fn within_streak(
    streak: &mut usize,
    take: impl FnOnce() -> Option<QueueRef>,
) -> Option<QueueRef> {
    if *streak < defaults::LIFO_STREAK
        && let Some(q) = take()
    {
        *streak += 1;
        return Some(q);
    }
    *streak = 0;
    None
}

/// Retries a steal until it either takes something or finds nothing.
#[inline]
pub(crate) fn settle<T>(mut steal: impl FnMut() -> Steal<T>) -> Option<T> {
    loop {
        match steal() {
            Steal::Success(v) => return Some(v),
            Steal::Retry => continue,
            Steal::Empty => return None,
        }
    }
}

thread_local! {
    /// The pool the current thread works for and its worker context (both null on other
    /// threads); the pool's address says which policy the context was built for.
    static CURRENT_WORKER: Cell<(*const (), *const ())> =
        const { Cell::new((std::ptr::null(), std::ptr::null())) };
}

impl<P: PoolPolicy> Pool<P> {
    /// Creates the pool and starts its `threads` workers.
    pub(crate) fn start(
        name: String,
        policy: P,
        threads: usize,
        spin: WorkerSpin,
        switch: StatsSwitch,
    ) -> std::io::Result<Arc<Self>> {
        let locals: Vec<(Worker<QueueRef>, Worker<QueueRef>)> = (0..threads)
            .map(|_| (Worker::new_fifo(), Worker::new_lifo()))
            .collect();
        let stealers = locals.iter().map(|(l, _)| l.stealer()).collect();
        let fresh_stealers = locals.iter().map(|(_, f)| f.stealer()).collect();
        asymmetric_fence::start_registration();
        let pool = Arc::new(Pool {
            name: name.clone(),
            policy,
            spin,
            stealers,
            fresh_stealers,
            wakeups: (0..threads).map(|_| Wakeup::new()).collect(),
            slots: (0..threads)
                .map(|_| CachePadded::new(Slot::new()))
                .collect(),
            parked_forever: ForeverParked::new(threads),
            probes: (0..threads)
                .map(|i| WorkerProbe::new(format!("cohort-{name}-{i}"), switch.clone()))
                .collect(),
            bound: BoundCount::default(),
            coop_queues: CoopQueues::new(),
            threads: Mutex::new(Vec::new()),
        });
        let mut handles = Vec::with_capacity(threads);
        for (index, local) in locals.into_iter().enumerate() {
            let p = pool.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cohort-{}-{index}", pool.name))
                .spawn(move || p.run_worker(index, local.0, local.1));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Nothing is bound yet: the shutdown wakes every worker to exit.
                    pool.bound.shut(|| pool.wake_all());
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

    /// The worker context of the current thread, if it is one of this pool's workers.
    #[inline]
    pub(crate) fn current_worker(&self) -> Option<&WorkerCtx<P>> {
        let (pool, w) = CURRENT_WORKER.with(Cell::get);
        if !std::ptr::eq(pool, (self as *const Self).cast()) {
            return None;
        }
        // SAFETY: set by `run_worker` of this pool (so of policy `P`) on this thread, pointing
        // to its context, which lives until `run_worker` returns (it resets the pointer first).
        unsafe { w.cast::<WorkerCtx<P>>().as_ref() }
    }

    /// The queue worker `ctx` handed itself (its slot), unless it took the slot
    /// [`defaults::LIFO_STREAK`] times in a row (then the streak starts again).
    #[inline]
    pub(crate) fn take_own_slot(
        &self,
        ctx: &WorkerCtx<P>,
        lifo_streak: &mut usize,
    ) -> Option<QueueRef> {
        within_streak(lifo_streak, || self.own_slot(ctx).take())
    }

    /// Worker `ctx`'s own LIFO slot, to fill and empty.
    #[inline]
    pub(crate) fn own_slot(&self, ctx: &WorkerCtx<P>) -> OwnSlot<'_> {
        OwnSlot::of(&self.slots, &ctx.slot_owner)
    }

    /// Worker `index`'s LIFO slot, to look at or steal from.
    #[inline]
    pub(crate) fn slot(&self, index: usize) -> &Slot {
        &self.slots[index]
    }

    /// Puts `q` in worker `w`'s slot, to run next there; a queue it displaces goes on top of
    /// `w`'s LIFO deque.
    #[inline]
    pub(crate) fn put_in_slot(&self, w: &WorkerCtx<P>, q: QueueRef) {
        match self.own_slot(w).put(q) {
            Some(prev) => {
                w.fresh.push(prev);
                self.wake_one();
            }
            None => self.wake_forever_parked(w.index),
        }
    }

    /// Puts `q` in worker `w`'s slot, which the caller saw empty; should it not be, the
    /// queue it displaces goes to `overflow`.
    #[inline]
    pub(crate) fn keep_in_slot(
        &self,
        w: &WorkerCtx<P>,
        q: QueueRef,
        overflow: &Injector<QueueRef>,
    ) {
        if let Some(prev) = self.own_slot(w).put(q) {
            // Only this worker fills its slot, and it was empty: unreachable, but never lose
            // a queue.
            overflow.push(prev);
            self.wake_one();
        } else {
            self.wake_forever_parked(w.index);
        }
    }

    /// A LIFO slot was filled: workers parked with no time limit wake once to watch it.
    #[inline]
    fn wake_forever_parked(&self, filler: usize) {
        self.parked_forever.wake_others(filler, &self.wakeups);
    }

    /// Rejects the demands of every queue still scheduled (the workers are gone).
    pub(crate) fn sweep(&self) {
        self.policy.sweep();
    }

    /// Wakes one parked worker, if any.
    pub(crate) fn wake_one(&self) {
        self.wake_one_from(0);
    }

    /// Wakes one parked worker, if any, trying worker `first` first.
    pub(crate) fn wake_one_from(&self, first: usize) {
        fence(Ordering::SeqCst);
        let n = self.wakeups.len();
        for k in 0..n {
            if self.wakeups[(first + k) % n].notify_fenced() {
                return;
            }
        }
    }

    /// A queue was scheduled from outside the pool into a shared run queue: wakes a worker
    /// (trying `first` first), and rejects the queue's work if the workers are gone.
    pub(crate) fn wake_for_outside_work(&self, first: usize) {
        // `wake_one_from` fences (SeqCst) after the caller's push, before `is_done`'s load.
        self.wake_one_from(first);
        // The workers may have exited (every agent gone) after this queue's sender saw its
        // agent alive: reject what nobody will run, counted as dead letters.
        if self.is_done() {
            self.sweep();
        }
    }

    fn wake_all(&self) {
        for w in self.wakeups.iter() {
            w.force();
        }
    }

    /// Shut down, every agent gone: workers may exit once nothing is left to run.
    fn is_done(&self) -> bool {
        self.bound.is_done()
    }

    /// Whether worker `ctx` could find a queue to run.
    fn has_work(&self, ctx: &WorkerCtx<P>) -> bool {
        let others = |deques: &[Stealer<QueueRef>]| {
            deques
                .iter()
                .enumerate()
                .any(|(i, s)| i != ctx.index && !s.is_empty())
        };
        self.policy.has_shared_work()
            || !ctx.local.is_empty()
            || !ctx.fresh.is_empty()
            || others(&self.stealers)
            || others(&self.fresh_stealers)
    }

    /// Whether another worker's LIFO slot holds a queue.
    fn others_slots_occupied(&self, index: usize) -> bool {
        self.slots
            .iter()
            .enumerate()
            .any(|(j, s)| j != index && s.is_occupied())
    }

    /// Whether another worker's slot owner may fence with a compiler fence alone (then a
    /// heavy fence against it must be `membarrier`).
    fn others_fences_light(&self, index: usize) -> bool {
        self.slots
            .iter()
            .enumerate()
            .any(|(j, s)| j != index && s.owner_fence_is_light())
    }

    /// The oldest queue of another worker's own FIFO (an idle worker's last resort).
    pub(crate) fn steal_oldest(&self, ctx: &WorkerCtx<P>) -> Option<QueueRef> {
        let n = self.stealers.len();
        (1..n).find_map(|k| settle(|| self.stealers[(ctx.index + k) % n].steal()))
    }

    /// The oldest queue of another worker's LIFO deque (the root of the biggest subtree it
    /// has not started).
    pub(crate) fn steal_fresh(&self, ctx: &WorkerCtx<P>) -> Option<QueueRef> {
        let n = self.fresh_stealers.len();
        (1..n).find_map(|k| {
            let s = &self.fresh_stealers[(ctx.index + k) % n];
            // A look before the steal: a steal pins crossbeam's epoch even when it finds
            // nothing, and these deques are empty but in trees of agents.
            (!s.is_empty()).then(|| settle(|| s.steal())).flatten()
        })
    }

    /// Worker `j`'s own FIFO, for stealing.
    pub(crate) fn stealer(&self, j: usize) -> &Stealer<QueueRef> {
        &self.stealers[j]
    }

    /// Takes a queue that has waited in another worker's LIFO slot through one turn of its
    /// owner longer than [`defaults::SLOT_STEAL_AFTER`].
    pub(crate) fn steal_stranded_slot(&self, ctx: &WorkerCtx<P>) -> Option<QueueRef> {
        let mut watch = ctx.slot_watch.borrow_mut();
        for (j, slot) in self.slots.iter().enumerate() {
            if j == ctx.index {
                continue;
            }
            if !slot.is_occupied() {
                watch[j] = None;
                continue;
            }
            let turn = slot.turns();
            match watch[j] {
                Some((t, since)) if t == turn => {
                    if since.elapsed() >= defaults::SLOT_STEAL_AFTER {
                        watch[j] = None;
                        if let Some(q) = slot.steal() {
                            return Some(q);
                        }
                    }
                }
                _ => watch[j] = Some((turn, Instant::now())),
            }
        }
        None
    }

    fn run_worker(self: Arc<Self>, index: usize, local: Worker<QueueRef>, fresh: Worker<QueueRef>) {
        self.wakeups[index].register_current();
        let ctx = WorkerCtx::<P> {
            index,
            slot_owner: SlotOwner::new(index),
            local,
            fresh,
            slot_watch: RefCell::new(vec![None; self.slots.len()]),
            spinner: Spinner::new(self.spin),
            policy: self.policy.new_worker(),
        };
        CURRENT_WORKER.with(|c| {
            c.set((
                Arc::as_ptr(&self).cast(),
                (&ctx as *const WorkerCtx<P>).cast(),
            ))
        });
        let mut lifo_streak = 0;
        let probe = &*self.probes[index];
        let _turns = crate::dispatcher::turn_end::TurnScope::enter();
        // Demands run since the worker's turn last ended: it ends every `LOCAL_BATCH` of
        // them, over as many queues' turns as that takes, and whenever the worker runs dry.
        let mut since_turn_end = 0;
        loop {
            if P::run_side_work(&self) {
                continue;
            }
            if let Some(q) = P::next_queue(&self, &ctx, &mut lifo_streak) {
                let t0 = probe.start();
                let (ran, left) = self.run_turn(&ctx, q, t0.is_some());
                if let Some(t0) = t0 {
                    probe.busy(t0, ran, left);
                }
                since_turn_end += ran;
                if since_turn_end >= defaults::LOCAL_BATCH {
                    since_turn_end = 0;
                    crate::dispatcher::turn_end::end_turn();
                }
                continue;
            }
            if since_turn_end > 0 {
                since_turn_end = 0;
                crate::dispatcher::turn_end::end_turn();
                continue;
            }
            if self.is_done() {
                break;
            }
            let t0 = probe.start();
            self.idle(&ctx);
            if let Some(t0) = t0 {
                probe.idle(t0);
            }
        }
        CURRENT_WORKER.with(|c| c.set((std::ptr::null(), std::ptr::null())));
        // Whatever was scheduled after the last look goes to the dead letters.
        self.sweep();
        while let Some(q) = ctx
            .local
            .pop()
            .or_else(|| ctx.fresh.pop())
            .or_else(|| self.own_slot(&ctx).take())
        {
            q.abandon();
        }
        crate::queue::sweep_list::forget();
        crate::dispatcher::reuse::release_thread_caches();
    }

    /// A worker found nothing to run: spins, then parks until woken.
    fn idle(&self, ctx: &WorkerCtx<P>) {
        let index = ctx.index;
        let work = || self.has_work(ctx) || self.is_done();
        ctx.spinner.wait(work, || {
            if self.others_slots_occupied(index) {
                // Another worker's LIFO slot holds a queue: look again soon, in case that
                // worker is blocked and the queue needs taking (nobody would wake us).
                crate::dispatcher::reuse::release_thread_caches();
                self.wakeups[index].sleep_timeout(defaults::SLOT_STEAL_AFTER * 20, work);
            } else {
                let any_light = || self.others_fences_light(index);
                self.parked_forever.park(
                    index,
                    &self.wakeups[index],
                    any_light,
                    || work() || self.others_slots_occupied(index),
                    // Out of work for a while: the queues it left idle holding memory give
                    // it back once they have waited long enough.
                    crate::queue::sweep_list::sweep,
                );
            }
        });
    }

    /// Runs one turn of `q`, then schedules it again (as the policy says) if it has more.
    /// Returns how many demands ran and (when `measure`) how many are left in the queue.
    fn run_turn(&self, ctx: &WorkerCtx<P>, q: QueueRef, measure: bool) -> (usize, usize) {
        self.own_slot(ctx).count_turn();
        P::begin_turn(self, ctx, &q);
        let end = P::turn(self, &q, measure);
        match end.next {
            TurnOutcome::Again => P::after_turn(self, ctx, q),
            TurnOutcome::Idle { release } => q.went_idle(release),
            TurnOutcome::HandedOver => q.hand_over(),
        }
        (end.ran, end.left)
    }

    /// A turn that runs up to the queue's `max_demands_at_once` demands on this worker.
    pub(crate) fn plain_turn(&self, q: &QueueRef, measure: bool) -> TurnEnd {
        let mut ran = 0;
        let max = q.max_demands_at_once();
        // SAFETY: the queue came out of a run queue, where it was put by whoever won its
        // IDLE -> SCHEDULED transition; nobody else runs it until this turn ends.
        let running = unsafe { RunningGuard::enter(&**q) };
        let local = running.local();
        // The demand of the sender that woke the queue, if one did: the oldest, so it runs
        // first.
        if let Some(d) = local.take_first() {
            ran += d.run(q, max);
        }
        // No more remote demands than this turn can run: a backlog stays in the remote half,
        // whose blocks are reused, instead of growing the local ring.
        // Not less either, whatever the local half holds: an agent that keeps `max` demands
        // of its own there (a self-send loop) must still take in what others send it.
        let room = max.saturating_sub(ran);
        if room > 0 {
            local.drain_remote(room.min(defaults::REMOTE_BATCH));
        }
        let mut ran_local = false;
        while ran < max {
            match local.pop() {
                Some(d) => {
                    ran_local = true;
                    ran += d.run(q, max - ran);
                }
                None => break,
            }
        }
        let left = if measure { local.len() } else { 0 };
        TurnEnd {
            ran,
            left,
            next: running.end_turn(ran_local),
        }
    }
}

impl<P: PoolPolicy> Schedule<Demand> for Pool<P> {
    #[inline]
    fn schedule(&self, q: QueueRef) {
        P::schedule(self, q)
    }
}
