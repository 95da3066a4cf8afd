//! The `cohort-stats` thread: a [`RuntimeStats`] snapshot every period, sent to the
//! configured mailboxes and exported through the `metrics` facade.

use super::EnvShared;
use crate::error::DispatcherError;
use crate::stats::{RuntimeStats, StatsConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The `cohort-stats` thread and its stop flag.
pub(super) struct StatsThread {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl EnvShared {
    /// A snapshot of the statistics.
    pub(super) fn stats(&self) -> RuntimeStats {
        let dispatchers = self
            .dispatchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|d| d.stats())
            .collect();
        RuntimeStats {
            coops: self.coops.load(Ordering::Relaxed),
            agents: self.agents.load(Ordering::Relaxed),
            named_mailboxes: self.named_count(),
            timers: self.timers.active(),
            futures: self.futures.table.in_flight(),
            futures_cancelled: self.futures.table.cancelled(),
            dead_letters: self.dead_letters.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
            supervision: self.supervision.snapshot(),
            dispatchers,
        }
    }

    /// Stops the statistics thread, if any; joins it unless called from it.
    pub(super) fn stop_stats(&self) {
        let t = self
            .stats_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.stats_on.store(false, Ordering::Relaxed);
        if let Some(t) = t {
            t.stop.store(true, Ordering::Release);
            t.handle.thread().unpark();
            if t.handle.thread().id() != std::thread::current().id() {
                let _ = t.handle.join();
            }
        }
    }

    /// Starts (or restarts) the `cohort-stats` thread; see [`Environment::start_stats`](crate::Environment::start_stats).
    pub(super) fn start_stats(
        self: &Arc<Self>,
        config: StatsConfig,
    ) -> Result<(), DispatcherError> {
        if config.period < Duration::from_millis(1) {
            return Err(DispatcherError::invalid(
                "stats",
                "period",
                "must be at least 1 ms",
            ));
        }
        if self.is_stopping() {
            return Err(DispatcherError::EnvironmentStopped);
        }
        self.stop_stats();
        self.stats_on.store(true, Ordering::Relaxed);
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(self);
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("cohort-stats".into())
            .spawn(move || stats_loop(weak, stop2, config))
            .map_err(|source| DispatcherError::Spawn {
                name: "stats".into(),
                source,
            })?;
        *self.stats_thread.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(StatsThread { stop, handle });
        // A `stop` that raced with this call may have missed the thread: stop it now.
        if self.is_stopping() {
            self.stop_stats();
            return Err(DispatcherError::EnvironmentStopped);
        }
        Ok(())
    }
}

/// The body of the `cohort-stats` thread: a snapshot every period, until stopped.
fn stats_loop(env: std::sync::Weak<EnvShared>, stop: Arc<AtomicBool>, config: StatsConfig) {
    let mut next = std::time::Instant::now() + config.period;
    loop {
        let now = std::time::Instant::now();
        if now < next {
            std::thread::park_timeout(next - now);
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        if std::time::Instant::now() < next {
            continue; // woken early (spuriously): wait for the period
        }
        next += config.period;
        let Some(env) = env.upgrade() else { return };
        let snapshot = env.stats();
        if config.export_metrics {
            crate::stats::export(&snapshot);
        }
        for m in &config.targets {
            m.send(snapshot.clone());
        }
    }
}
