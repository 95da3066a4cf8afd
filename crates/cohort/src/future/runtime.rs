//! [`AsyncRuntime`]: the tokio runtime an environment's futures run on, either the
//! application's (a `Handle` given to the builder) or a small one of its own, started on
//! first use and shut down with the environment.

use super::table::FutureTable;
use crate::defaults;
use crate::error::AsyncError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use tokio::runtime::{Handle, Runtime};

/// Where an environment's futures run, as the builder chose.
#[derive(Debug, Clone)]
pub(crate) enum RuntimeChoice {
    /// The application's runtime: never started nor shut down by the environment.
    Handle(Handle),
    /// A multi-thread runtime of the environment's own, with that many worker threads.
    Embedded(usize),
}

impl Default for RuntimeChoice {
    fn default() -> Self {
        RuntimeChoice::Embedded(defaults::ASYNC_THREADS)
    }
}

/// One environment's async side: the runtime (started lazily) and its futures.
pub(crate) struct AsyncRuntime {
    choice: RuntimeChoice,
    /// Set on first use: the handle futures are spawned on.
    handle: OnceLock<Handle>,
    /// The embedded runtime, owned until the environment shuts it down.
    owned: Mutex<Option<Runtime>>,
    /// Set when the environment stops: no runtime is started any more.
    stopped: AtomicBool,
    /// The futures of every agent, for cancellation at finish and for the counts.
    pub(crate) table: FutureTable,
}

impl AsyncRuntime {
    pub(crate) fn new(choice: RuntimeChoice) -> Self {
        Self {
            choice,
            handle: OnceLock::new(),
            owned: Mutex::new(None),
            stopped: AtomicBool::new(false),
            table: FutureTable::default(),
        }
    }

    /// The handle to spawn on, starting the embedded runtime on first use.
    pub(crate) fn handle(&self) -> Result<&Handle, AsyncError> {
        if let Some(h) = self.handle.get()
            && !self.is_stopped()
        {
            return Ok(h);
        }
        // The lock orders a start against `shutdown`: no runtime starts after it.
        let mut owned = self.owned.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopped.load(Ordering::Acquire) {
            return Err(AsyncError::EnvironmentStopped);
        }
        if let Some(h) = self.handle.get() {
            return Ok(h);
        }
        let handle = match &self.choice {
            RuntimeChoice::Handle(h) => h.clone(),
            RuntimeChoice::Embedded(threads) => {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(*threads)
                    .thread_name(defaults::ASYNC_THREAD_NAME)
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        tracing::error!(error = %e, "the embedded async runtime failed to start");
                        AsyncError::EnvironmentStopped
                    })?;
                let h = rt.handle().clone();
                *owned = Some(rt);
                h
            }
        };
        Ok(self.handle.get_or_init(|| handle))
    }

    /// Refuses new futures, cancels those still running and stops the embedded runtime,
    /// waiting for its threads (unless called from one of them). Idempotent.
    pub(crate) fn shutdown(&self) {
        let rt = {
            let mut owned = self.owned.lock().unwrap_or_else(|e| e.into_inner());
            self.stopped.store(true, Ordering::Release);
            owned.take()
        };
        self.table.cancel_everything();
        if let Some(rt) = rt {
            if Handle::try_current().is_ok() {
                // Blocking inside a runtime is not allowed: its threads end on their own.
                rt.shutdown_background();
            } else {
                rt.shutdown_timeout(defaults::ASYNC_SHUTDOWN_TIMEOUT);
            }
        }
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

impl Drop for AsyncRuntime {
    fn drop(&mut self) {
        self.shutdown();
    }
}
