//! [`FutureTable`]: the futures each agent has running, so that they are cancelled when it
//! finishes, and the counts the run-time statistics show.
//!
//! Keyed by the agent's cell address, in shards under short locks: the agent's own thread
//! adds an entry when it spawns and removes it when it handles the output, so an agent that
//! never spawns has no entry and its cell carries nothing for this.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use tokio::task::AbortHandle;

/// A future spawned from `define`, waiting for the agent's start.
pub(crate) type Deferred = Pin<Box<dyn Future<Output = ()> + Send>>;

const SHARDS: usize = 16;

/// One agent's futures.
#[derive(Default)]
struct AgentFutures {
    next_id: u64,
    running: HashMap<u64, AbortHandle>,
    deferred: Vec<(u64, Deferred)>,
}

/// The futures of every agent of one environment.
#[derive(Default)]
pub(crate) struct FutureTable {
    shards: [Mutex<HashMap<usize, AgentFutures>>; SHARDS],
    /// Spawned and neither delivered nor cancelled.
    in_flight: AtomicUsize,
    /// Cancelled because their agent finished (or the environment stopped) first.
    cancelled: AtomicU64,
}

impl FutureTable {
    fn shard(&self, agent: usize) -> std::sync::MutexGuard<'_, HashMap<usize, AgentFutures>> {
        // Cells are at least 64-byte apart: skip the low bits that never differ.
        self.shards[(agent >> 6) % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a future of `agent`: `spawn` gets its id and starts it (under the shard's lock,
    /// so that the entry exists before its output can be handled).
    pub(crate) fn add(&self, agent: usize, spawn: impl FnOnce(u64) -> AbortHandle) -> u64 {
        let mut shard = self.shard(agent);
        let entry = shard.entry(agent).or_default();
        entry.next_id += 1;
        let id = entry.next_id;
        // Counted before it starts: whoever sees it running sees it counted.
        self.in_flight.fetch_add(1, Relaxed);
        entry.running.insert(id, spawn(id));
        id
    }

    /// Adds a future of `agent` that starts when the agent starts.
    pub(crate) fn defer(&self, agent: usize, make: impl FnOnce(u64) -> Deferred) -> u64 {
        let mut shard = self.shard(agent);
        let entry = shard.entry(agent).or_default();
        entry.next_id += 1;
        let id = entry.next_id;
        entry.deferred.push((id, make(id)));
        self.in_flight.fetch_add(1, Relaxed);
        id
    }

    /// Starts `agent`'s deferred futures with `spawn`; `None` for a handle drops them
    /// (counted as cancelled).
    pub(crate) fn start_deferred(&self, agent: usize, handle: Option<&tokio::runtime::Handle>) {
        let mut shard = self.shard(agent);
        let Some(entry) = shard.get_mut(&agent) else {
            return;
        };
        let deferred = std::mem::take(&mut entry.deferred);
        match handle {
            Some(h) => {
                for (id, fut) in deferred {
                    entry.running.insert(id, h.spawn(fut).abort_handle());
                }
            }
            None => {
                let n = deferred.len();
                self.in_flight.fetch_sub(n, Relaxed);
                self.cancelled.fetch_add(n as u64, Relaxed);
                drop(shard);
                drop(deferred);
            }
        }
    }

    /// `agent`'s future `id` delivered its output: forget it. False if it was not running
    /// (cancelled meanwhile).
    pub(crate) fn delivered(&self, agent: usize, id: u64) -> bool {
        let mut shard = self.shard(agent);
        let removed = shard
            .get_mut(&agent)
            .and_then(|e| e.running.remove(&id))
            .is_some();
        if removed {
            self.in_flight.fetch_sub(1, Relaxed);
        }
        removed
    }

    /// `agent`'s future `id` finished but its agent no longer takes its output: counted as
    /// cancelled.
    pub(crate) fn discarded(&self, agent: usize, id: u64) {
        if self.delivered(agent, id) {
            self.cancelled.fetch_add(1, Relaxed);
        }
    }

    /// Cancels every future of `agent` (it finishes): aborted, their drop runs on the
    /// runtime. Returns how many were still running.
    pub(crate) fn cancel_agent(&self, agent: usize) -> usize {
        let entry = self.shard(agent).remove(&agent);
        let Some(entry) = entry else { return 0 };
        self.cancel(entry)
    }

    fn cancel(&self, entry: AgentFutures) -> usize {
        let n = entry.running.len() + entry.deferred.len();
        // Aborted outside the shard's lock: a drop may do anything.
        for handle in entry.running.into_values() {
            handle.abort();
        }
        drop(entry.deferred);
        self.in_flight.fetch_sub(n, Relaxed);
        self.cancelled.fetch_add(n as u64, Relaxed);
        n
    }

    /// Cancels the futures of every agent (the environment stops).
    pub(crate) fn cancel_everything(&self) {
        for shard in &self.shards {
            let all = std::mem::take(&mut *shard.lock().unwrap_or_else(|e| e.into_inner()));
            for entry in all.into_values() {
                self.cancel(entry);
            }
        }
    }

    /// Futures spawned and neither delivered nor cancelled.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Relaxed)
    }

    /// Futures cancelled so far.
    pub(crate) fn cancelled(&self) -> u64 {
        self.cancelled.load(Relaxed)
    }
}
