//! [`FutureTable`]: the futures each agent has running, so that they are cancelled when it
//! finishes, and the counts the run-time statistics show.
//!
//! Keyed by the agent's cell address, in shards under short locks: the agent's own thread
//! adds an entry when it spawns and removes it when it handles the output, so an agent that
//! never spawns has no entry and its cell carries nothing for this. The maps hash their
//! keys (cell addresses, sequential ids) with [`IdHasher`].

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use tokio::task::AbortHandle;

/// A future spawned from `define`, waiting for the agent's start.
pub(crate) type Deferred = Pin<Box<dyn Future<Output = ()> + Send>>;

const SHARDS: usize = 16;

/// Hashes an integer key with one folded multiply: the table's keys are addresses and
/// sequential ids, never chosen by an adversary, so SipHash's protection would only add cost
/// to every spawn and every delivered output.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

/// An odd constant with well-spread bits (2^64 divided by the golden ratio).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // The high half of the product carries every key bit into the low bits that pick
        // the bucket; the low half, into the top bits that tag it.
        let full = u128::from(self.0 ^ n) * u128::from(MULTIPLIER);
        self.0 = (full as u64) ^ ((full >> 64) as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by an address or an id.
type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// One agent's futures.
#[derive(Default)]
struct AgentFutures {
    next_id: u64,
    running: IdMap<u64, AbortHandle>,
    deferred: Vec<(u64, Deferred)>,
}

/// The futures of every agent of one environment.
#[derive(Default)]
pub(crate) struct FutureTable {
    shards: [Mutex<IdMap<usize, AgentFutures>>; SHARDS],
    /// Spawned and neither delivered nor cancelled.
    in_flight: AtomicUsize,
    /// Cancelled because their agent finished (or the environment stopped) first.
    cancelled: AtomicU64,
}

impl FutureTable {
    fn shard(&self, agent: usize) -> std::sync::MutexGuard<'_, IdMap<usize, AgentFutures>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    /// How many of `buckets` (a power of two) the keys' hashes land in.
    fn buckets_hit(keys: impl Iterator<Item = u64>, buckets: u64) -> usize {
        let build = BuildHasherDefault::<IdHasher>::default();
        keys.map(|k| build.hash_one(k) & (buckets - 1))
            .collect::<HashSet<_>>()
            .len()
    }

    #[test]
    fn sequential_ids_and_cell_addresses_spread_over_the_buckets() {
        // Random keys would hit about 63 % of as many buckets as keys.
        let ids = buckets_hit(1..=4096, 4096);
        let addresses = buckets_hit((0..4096).map(|i| 0x7f00_0000_0000 + i * 128), 4096);
        assert!(ids > 2400, "sequential ids hit {ids} of 4096 buckets");
        assert!(
            addresses > 2400,
            "addresses hit {addresses} of 4096 buckets"
        );
    }

    #[test]
    fn the_tag_bits_differ_between_neighbouring_ids() {
        let build = BuildHasherDefault::<IdHasher>::default();
        let tags: HashSet<u64> = (1..=1024u64).map(|k| build.hash_one(k) >> 57).collect();
        assert!(tags.len() > 100, "only {} of 128 tags used", tags.len());
    }
}
