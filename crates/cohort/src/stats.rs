//! Run-time statistics: counts, queue lengths, worker busy/idle time and events handled.
//!
//! Off by default and free when off: workers only load one flag per batch of demands. When on
//! ([`Environment::start_stats`](crate::Environment::start_stats)), workers time their
//! batches and publish their counters, and a `cohort-stats` thread sends a [`RuntimeStats`]
//! snapshot every period to the configured mailboxes and exports it through the `metrics`
//! crate facade (install a recorder, e.g. a Prometheus exporter, to serve it).
//! [`Environment::stats`](crate::Environment::stats) takes a snapshot at any time.

use crate::defaults;
use crate::mailbox::Mbox;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A snapshot of an environment's run-time statistics.
#[derive(Debug, Clone, Default)]
pub struct RuntimeStats {
    /// Registered cooperations.
    pub coops: usize,
    /// Agents of registered cooperations.
    pub agents: usize,
    /// Named mailboxes alive.
    pub named_mailboxes: usize,
    /// Active timers: scheduled, and neither fired for the last time nor cancelled.
    pub timers: usize,
    /// Futures spawned by agents ([`Context::spawn`](crate::Context::spawn)) and neither
    /// delivered nor cancelled yet.
    pub futures: usize,
    /// Futures cancelled so far because their agent finished (or the environment stopped)
    /// before their output was handled.
    pub futures_cancelled: u64,
    /// Dead letters so far.
    pub dead_letters: u64,
    /// Panics caught so far.
    pub panics: u64,
    /// What supervisors did so far (see [`crate::supervision`]).
    pub supervision: SupervisionStats,
    /// Per dispatcher: its workers.
    pub dispatchers: Vec<DispatcherStats>,
}

/// What the environment's supervisors did so far: kept always (each count is one relaxed
/// increment on a restart path, never on the message path).
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// assert_eq!(env.stats().supervision, cohort::SupervisionStats::default());
/// env.stop();
/// env.wait();
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SupervisionStats {
    /// Child cooperations registered by supervisors (first starts and restarts).
    pub child_starts: u64,
    /// Children that ended for a reason their supervisor's policy counts as a failure.
    pub child_failures: u64,
    /// Child starts that failed (the factory panicked or built an empty cooperation, or
    /// registration failed).
    pub start_failures: u64,
    /// Restarts scheduled (one per child brought back).
    pub restarts: u64,
    /// Supervisors that gave up (restart intensity exceeded) and escalated.
    pub give_ups: u64,
}

/// The supervision counters of one environment.
#[derive(Debug, Default)]
pub(crate) struct SupervisionCounters {
    pub(crate) child_starts: AtomicU64,
    pub(crate) child_failures: AtomicU64,
    pub(crate) start_failures: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) give_ups: AtomicU64,
}

impl SupervisionCounters {
    pub(crate) fn snapshot(&self) -> SupervisionStats {
        SupervisionStats {
            child_starts: self.child_starts.load(Relaxed),
            child_failures: self.child_failures.load(Relaxed),
            start_failures: self.start_failures.load(Relaxed),
            restarts: self.restarts.load(Relaxed),
            give_ups: self.give_ups.load(Relaxed),
        }
    }

    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }
}

/// The statistics of one dispatcher.
#[derive(Debug, Clone, Default)]
pub struct DispatcherStats {
    /// The dispatcher's name.
    pub name: String,
    /// Its kind: `one_thread`, `active_obj`, `active_group`, `thread_pool`, `work_stealing`,
    /// `prio_one_thread::strictly_ordered` or `prio_one_thread::quoted_round_robin`.
    pub kind: &'static str,
    /// Its worker threads (counters are only kept while statistics are on).
    pub workers: Vec<WorkerStats>,
}

/// The statistics of one worker thread.
#[derive(Debug, Clone, Default)]
pub struct WorkerStats {
    /// The thread's name.
    pub thread: String,
    /// Demands handled while statistics were on.
    pub events: u64,
    /// Time spent running demands while statistics were on.
    pub busy: Duration,
    /// Time spent spinning or parked while statistics were on.
    pub idle: Duration,
    /// Demands waiting in the queue(s) it runs, at its last batch.
    pub queue_len: usize,
}

/// How statistics are distributed.
///
/// ```
/// use std::time::Duration;
/// let cfg = cohort::StatsConfig::new()           // period: defaults::STATS_PERIOD (1 s)
///     .period(Duration::from_millis(250));
/// # let _ = cfg;
/// ```
#[derive(Debug, Clone)]
pub struct StatsConfig {
    pub(crate) period: Duration,
    pub(crate) targets: Vec<Mbox>,
    pub(crate) export_metrics: bool,
}

impl Default for StatsConfig {
    fn default() -> Self {
        Self {
            period: defaults::STATS_PERIOD,
            targets: Vec::new(),
            export_metrics: true,
        }
    }
}

impl StatsConfig {
    /// Defaults: every [`defaults::STATS_PERIOD`], exported to `metrics`, sent nowhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// How often a snapshot is taken (at least 1 ms).
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Also send each snapshot (a [`RuntimeStats`] message) to `mbox`.
    pub fn deliver_to(mut self, mbox: Mbox) -> Self {
        self.targets.push(mbox);
        self
    }

    /// Whether to export each snapshot through the `metrics` facade (default: yes).
    pub fn export_metrics(mut self, on: bool) -> Self {
        self.export_metrics = on;
        self
    }
}

/// The environment-wide switch workers look at.
pub(crate) type StatsSwitch = Arc<AtomicBool>;

/// One worker thread's counters, published by the worker while statistics are on.
#[derive(Debug)]
pub(crate) struct WorkerProbe {
    thread: String,
    on: StatsSwitch,
    events: AtomicU64,
    busy_ns: AtomicU64,
    idle_ns: AtomicU64,
    queue_len: AtomicUsize,
}

impl WorkerProbe {
    pub(crate) fn new(thread: String, on: StatsSwitch) -> Arc<Self> {
        Arc::new(Self {
            thread,
            on,
            events: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            idle_ns: AtomicU64::new(0),
            queue_len: AtomicUsize::new(0),
        })
    }

    /// The start of a batch: a clock reading when statistics are on (one relaxed load when
    /// they are off).
    #[inline]
    pub(crate) fn start(&self) -> Option<Instant> {
        if self.on.load(Relaxed) {
            Some(Instant::now())
        } else {
            None
        }
    }

    /// A batch of `events` demands started at `t0`, leaving `queue_len` waiting.
    #[cold]
    pub(crate) fn busy(&self, t0: Instant, events: usize, queue_len: usize) {
        self.events.fetch_add(events as u64, Relaxed);
        self.busy_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
        self.queue_len.store(queue_len, Relaxed);
    }

    /// Idle time (spinning or parked) since `t0`.
    #[cold]
    pub(crate) fn idle(&self, t0: Instant) {
        self.idle_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> WorkerStats {
        WorkerStats {
            thread: self.thread.clone(),
            events: self.events.load(Relaxed),
            busy: Duration::from_nanos(self.busy_ns.load(Relaxed)),
            idle: Duration::from_nanos(self.idle_ns.load(Relaxed)),
            queue_len: self.queue_len.load(Relaxed),
        }
    }
}

/// Exports a snapshot through the `metrics` facade.
pub(crate) fn export(s: &RuntimeStats) {
    metrics::gauge!("cohort_coops").set(s.coops as f64);
    metrics::gauge!("cohort_agents").set(s.agents as f64);
    metrics::gauge!("cohort_named_mailboxes").set(s.named_mailboxes as f64);
    metrics::gauge!("cohort_timers").set(s.timers as f64);
    metrics::gauge!("cohort_futures").set(s.futures as f64);
    metrics::counter!("cohort_dead_letters_total").absolute(s.dead_letters);
    metrics::counter!("cohort_panics_total").absolute(s.panics);
    for d in &s.dispatchers {
        for w in &d.workers {
            let labels = [
                ("dispatcher", d.name.clone()),
                ("kind", d.kind.to_string()),
                ("worker", w.thread.clone()),
            ];
            metrics::counter!("cohort_worker_events_total", &labels).absolute(w.events);
            metrics::gauge!("cohort_worker_busy_seconds", &labels).set(w.busy.as_secs_f64());
            metrics::gauge!("cohort_worker_idle_seconds", &labels).set(w.idle.as_secs_f64());
            metrics::gauge!("cohort_worker_queue_length", &labels).set(w.queue_len as f64);
        }
    }
}
