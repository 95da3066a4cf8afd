//! Every dispatcher kind, and the one place where the tests build dispatchers and binders:
//! a test that must hold on every dispatcher loops over [`ALL`]; a test of one pool's
//! scheduling uses a [`Pool`].

use super::{TIMEOUT, watchdog};
use cohort::dispatcher::{Fifo, PoolBindParams, PoolHandle, Priority};
use cohort::{Binder, DispatcherHandle, Environment};
use std::sync::Arc;
use std::time::Duration;

/// A dispatcher kind with the binding its agents get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `one_thread`: one thread, one queue for every agent bound to it.
    OneThread,
    /// `active_obj`: a thread per agent.
    ActiveObj,
    /// `active_group`: every agent bound here in one group, so one thread.
    ActiveGroup,
    /// `prio_one_thread` strictly ordered; agents at priority `P3`.
    PrioStrict,
    /// `prio_one_thread` with quoted round robin; agents at priority `P5`.
    PrioQuoted,
    /// `thread_pool` with the given fifo (`max_demands_at_once` 4).
    ThreadPool(Fifo),
    /// `adv_thread_pool` with the given fifo (`max_demands_at_once` 4).
    AdvThreadPool(Fifo),
    /// `work_stealing` with the given fifo (`max_demands_at_once` 4).
    WorkStealing(Fifo),
}

/// Every dispatcher kind, pools with each fifo. A test that excludes some of them says why
/// where it filters.
pub const ALL: [Kind; 11] = [
    Kind::OneThread,
    Kind::ActiveObj,
    Kind::ActiveGroup,
    Kind::PrioStrict,
    Kind::PrioQuoted,
    Kind::ThreadPool(Fifo::Individual),
    Kind::ThreadPool(Fifo::Cooperation),
    Kind::AdvThreadPool(Fifo::Individual),
    Kind::AdvThreadPool(Fifo::Cooperation),
    Kind::WorkStealing(Fifo::Individual),
    Kind::WorkStealing(Fifo::Cooperation),
];

/// Runs `check` on each kind of `kinds`, each under its own [`watchdog`]; a failure names
/// the kind.
pub fn on_each(kinds: &[Kind], check: impl Fn(Kind) + Send + Sync + 'static) {
    let check = Arc::new(check);
    for &kind in kinds {
        let check = check.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            watchdog(TIMEOUT, move || check(kind))
        }));
        if let Err(panic) = result {
            eprintln!("failed on dispatcher kind {kind:?}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// Runs `check` on every kind of [`ALL`] (see [`on_each`]).
pub fn on_every_kind(check: impl Fn(Kind) + Send + Sync + 'static) {
    on_each(&ALL, check);
}

/// How many workers a pool of [`Kind::binder`] gets.
pub const POOL_THREADS: usize = 2;

impl Kind {
    /// A binder to a new dispatcher of this kind named `name` (pools of [`POOL_THREADS`]).
    #[track_caller]
    pub fn binder(self, env: &Environment, name: &str) -> Binder {
        self.build(env, name, POOL_THREADS).binder
    }

    /// A binder to a new dispatcher of this kind named `name`; a pool gets `threads` workers.
    #[track_caller]
    pub fn binder_with_threads(self, env: &Environment, name: &str, threads: usize) -> Binder {
        self.build(env, name, threads).binder
    }

    /// A new dispatcher of this kind named `name` (a pool gets `threads` workers), with the
    /// binder its agents get.
    #[track_caller]
    pub fn build(self, env: &Environment, name: &str, threads: usize) -> Dispatcher {
        let built = match self {
            Kind::OneThread => cohort::OneThreadBuilder::new()
                .name(name)
                .build(env)
                .map(|d| (d.binder(), d)),
            Kind::ActiveObj => cohort::ActiveObjBuilder::new()
                .name(name)
                .build(env)
                .map(|d| (d.binder(), d)),
            Kind::ActiveGroup => cohort::ActiveGroupBuilder::new()
                .name(name)
                .build(env)
                .map(|d| (d.group_binder("group"), d.into())),
            Kind::PrioStrict => cohort::PrioOneThreadBuilder::new()
                .name(name)
                .strictly_ordered()
                .build(env)
                .map(|d| (d.priority_binder(Priority::P3), d.into())),
            Kind::PrioQuoted => cohort::PrioOneThreadBuilder::new()
                .name(name)
                .quoted_round_robin([2, 1, 1, 1, 3, 1, 1, 1])
                .build(env)
                .map(|d| (d.priority_binder(Priority::P5), d.into())),
            Kind::ThreadPool(fifo) => Ok(PoolKind::ThreadPool.build(env, name, threads).with(fifo)),
            Kind::AdvThreadPool(fifo) => {
                Ok(PoolKind::AdvThreadPool.build(env, name, threads).with(fifo))
            }
            Kind::WorkStealing(fifo) => {
                Ok(PoolKind::WorkStealing.build(env, name, threads).with(fifo))
            }
        };
        let (binder, handle) = built.unwrap_or_else(|e| panic!("build {self:?} `{name}`: {e}"));
        Dispatcher { binder, handle }
    }

    /// True for the pool dispatchers.
    pub fn is_pool(self) -> bool {
        matches!(
            self,
            Kind::ThreadPool(_) | Kind::AdvThreadPool(_) | Kind::WorkStealing(_)
        )
    }

    /// True when the agents of one cooperation bound through one binder share one queue (so
    /// never run in parallel and keep one order): not `active_obj` (a thread per agent), nor a
    /// pool with individual fifo (a queue per agent).
    pub fn one_queue_per_cooperation(self) -> bool {
        match self {
            Kind::ActiveObj => false,
            Kind::ThreadPool(fifo) | Kind::AdvThreadPool(fifo) | Kind::WorkStealing(fifo) => {
                fifo == Fifo::Cooperation
            }
            Kind::OneThread | Kind::ActiveGroup | Kind::PrioStrict | Kind::PrioQuoted => true,
        }
    }
}

/// The pool dispatchers, for tests of a pool's scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// `thread_pool`: a shared FIFO for woken queues, a FIFO per worker for busy ones.
    ThreadPool,
    /// `work_stealing`: per-worker deques, a LIFO slot, stealing.
    WorkStealing,
    /// `adv_thread_pool`: `thread_pool`'s scheduling, and thread-safe handlers of one agent
    /// run in parallel.
    AdvThreadPool,
}

impl PoolKind {
    /// Every pool dispatcher.
    pub const ALL: [PoolKind; 3] = [
        PoolKind::ThreadPool,
        PoolKind::WorkStealing,
        PoolKind::AdvThreadPool,
    ];

    /// Builds a pool of this kind named `name` with `threads` workers (threads
    /// `cohort-<name>-<i>`).
    #[track_caller]
    pub fn build(self, env: &Environment, name: &str, threads: usize) -> Pool {
        let handle = match self {
            PoolKind::ThreadPool => cohort::ThreadPoolBuilder::new()
                .name(name)
                .threads(threads)
                .build(env)
                .map(PoolHandle::from),
            PoolKind::WorkStealing => cohort::WorkStealingBuilder::new()
                .name(name)
                .threads(threads)
                .build(env)
                .map(PoolHandle::from),
            PoolKind::AdvThreadPool => cohort::AdvThreadPoolBuilder::new()
                .name(name)
                .threads(threads)
                .build(env)
                .map(PoolHandle::from),
        }
        .unwrap_or_else(|e| panic!("build {self:?} `{name}`: {e}"));
        Pool { handle }
    }
}

/// A one-worker `work_stealing` pool named `name` with the given home run queue pace.
#[track_caller]
pub fn one_worker_stealing(env: &Environment, name: &str, interval: usize, wait: Duration) -> Pool {
    let handle = cohort::WorkStealingBuilder::new()
        .name(name)
        .threads(1)
        .home_queue_interval(interval)
        .home_queue_wait(wait)
        .build(env)
        .unwrap_or_else(|e| panic!("build work_stealing `{name}`: {e}"))
        .into();
    Pool { handle }
}

/// A dispatcher of some [`Kind`] and the binder its agents get.
pub struct Dispatcher {
    pub binder: Binder,
    handle: DispatcherHandle,
}

impl Dispatcher {
    /// Shuts the dispatcher down (see `DispatcherHandle::shutdown`).
    pub fn shutdown(&self) {
        self.handle.shutdown()
    }
}

/// A pool dispatcher, and the binders to it.
pub struct Pool {
    handle: PoolHandle,
}

impl Pool {
    /// A binder with the given fifo and `max_demands_at_once`.
    #[track_caller]
    pub fn binder(&self, fifo: Fifo, max_demands_at_once: usize) -> Binder {
        self.handle
            .pool_binder(
                PoolBindParams::new()
                    .fifo(fifo)
                    .max_demands_at_once(max_demands_at_once),
            )
            .expect("valid pool binding parameters")
    }

    /// The binder of [`Kind`]: `fifo`, `max_demands_at_once` 4.
    fn with(self, fifo: Fifo) -> (Binder, DispatcherHandle) {
        (self.binder(fifo, 4), self.handle.into())
    }

    /// A binder with the pool's default parameters.
    pub fn default_binder(&self) -> Binder {
        self.handle.binder()
    }

    /// Shuts the pool down (see `DispatcherHandle::shutdown`).
    pub fn shutdown(&self) {
        self.handle.shutdown()
    }
}
