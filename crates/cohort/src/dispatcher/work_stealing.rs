//! `work_stealing`: N workers with their own run queues, a LIFO slot and stealing (the policy
//! is in [`pool::work_stealing`](super::pool)).

use super::pool::WorkStealing;
use super::pool::params::{PoolParams, pool_builder_setters, pool_handle};
use crate::error::DispatcherError;
use crate::runtime::env::Environment;
use std::time::Duration;

/// Builds a `work_stealing` dispatcher: N workers with their own run queues. An agent woken by
/// a send from a worker runs next on that worker (a LIFO slot, taken at most
/// [`defaults::LIFO_STREAK`](crate::defaults::LIFO_STREAK) times in a row), stays there while it has work, and is stolen,
/// oldest first, only by an idle worker. An agent woken by a send from outside the pool goes
/// back to the worker that ran it last (its home), whose cache may still hold its state.
/// Default binding: [`Fifo::Individual`](super::Fifo::Individual),
/// [`defaults::MAX_DEMANDS_AT_ONCE`](crate::defaults::MAX_DEMANDS_AT_ONCE).
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// let ws = cohort::WorkStealingBuilder::new().threads(2).build(&env).unwrap();
/// let mut coop = env.new_coop();
/// coop.set_binder(ws.binder());
/// ```
#[derive(Debug, Clone)]
pub struct WorkStealingBuilder {
    params: PoolParams,
}

impl Default for WorkStealingBuilder {
    fn default() -> Self {
        Self {
            params: PoolParams::named("work_stealing"),
        }
    }
}

impl WorkStealingBuilder {
    /// Default parameters (name `"work_stealing"`).
    pub fn new() -> Self {
        Self::default()
    }

    pool_builder_setters!();

    /// Every how many turns a worker kept busy by its own agents looks at its home run queue
    /// (agents woken by sends from outside the pool) and, once that run queue has held work
    /// for [`home_queue_wait`](Self::home_queue_wait), serves it before its own deque, as
    /// tokio's `global_queue_interval`. At least 1. Default:
    /// [`defaults::HOME_QUEUE_INTERVAL`](crate::defaults::HOME_QUEUE_INTERVAL) (61).
    ///
    /// With the wait, such a worker takes one agent woken from outside per wait, at its first
    /// look after the wait ran out (see [`home_queue_wait`](Self::home_queue_wait)). With no
    /// wait (`home_queue_wait(Duration::ZERO)`), it takes one at every look: an agent woken
    /// from outside waits behind the worker's busy agents about this many turns of up to
    /// `max_demands_at_once` demands each per agent ahead of it, and 1 serves work from
    /// outside first at every turn.
    ///
    /// ```
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let ws = cohort::WorkStealingBuilder::new()
    ///     .threads(2)
    ///     .home_queue_interval(509)
    ///     .build(&env)
    ///     .unwrap();
    /// # let _ = ws;
    /// let err = cohort::WorkStealingBuilder::new().home_queue_interval(0).build(&env);
    /// assert!(err.unwrap_err().to_string().contains("home_queue_interval"));
    /// ```
    pub fn home_queue_interval(mut self, turns: usize) -> Self {
        self.params.home.interval = turns;
        self
    }

    /// How long a worker kept busy by its own agents lets its home run queue (agents woken by
    /// sends from outside the pool) hold work before it serves it first, at its next look
    /// (every [`home_queue_interval`](Self::home_queue_interval) turns); the wait starts
    /// again after each agent so taken. A worker whose own deque runs dry serves its home run
    /// queue at once, and an idle worker steals from it at once. `Duration::ZERO` serves it at
    /// every look. Default: [`defaults::HOME_QUEUE_WAIT`](crate::defaults::HOME_QUEUE_WAIT) (1 ms).
    ///
    /// So a worker busy with its own agents takes one agent woken from outside per wait (plus
    /// up to the interval's turns), oldest first: the k-th in line waits about k waits. The
    /// others gather messages meanwhile and join that worker's round together when it runs
    /// out of its own work (or an idle worker takes them at once), instead of one per look:
    /// what keeps a pool fed by a plain thread as fast as `thread_pool` on a few hundred
    /// agents with small states, and faster than with no wait on many agents with large
    /// states (`docs/BENCHMARKS.md`, locality). Agents that have not run yet
    /// (just bound, their `start` waiting) skip the wait: a burst of them on a busy pool
    /// starts at the interval's pace. What waits is work for agents that ran before.
    ///
    /// ```
    /// use std::time::Duration;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// // Work from outside first at every turn: lowest latency for it, tokio's order.
    /// let ws = cohort::WorkStealingBuilder::new()
    ///     .threads(2)
    ///     .home_queue_interval(1)
    ///     .home_queue_wait(Duration::ZERO)
    ///     .build(&env)
    ///     .unwrap();
    /// # let _ = ws;
    /// ```
    pub fn home_queue_wait(mut self, wait: Duration) -> Self {
        self.params.home.wait = wait;
        self
    }

    /// Starts the workers and registers the dispatcher with `env`.
    pub fn build(self, env: &Environment) -> Result<WorkStealingHandle, DispatcherError> {
        self.params
            .build(env, WorkStealing::new)
            .map(|h| WorkStealingHandle(h.0))
    }
}

pool_handle!(
    /// A handle to a `work_stealing` dispatcher.
    WorkStealingHandle
);
