//! [`CoopQueues`]: a pool's cooperation-fifo queues, one per cooperation, shared by its
//! agents bound with cooperation fifo, in shards by cooperation id.

use crate::queue::QueueArc;
use crate::runtime::coop::CoopId;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Shards of the table: every worker registers and deregisters cooperations (skynet's
/// teardown on two workers waited on one lock), and cooperation ids are consecutive, so ids
/// modulo this spread them evenly.
const SHARDS: usize = 16;

/// Each cooperation's queue and how many of its agents are bound to it.
type Shard = HashMap<CoopId, (QueueArc, usize)>;

/// The table of a pool's cooperation-fifo queues.
pub(super) struct CoopQueues {
    shards: Box<[CachePadded<Mutex<Shard>>]>,
}

impl CoopQueues {
    pub(super) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Shard::new())))
                .collect(),
        }
    }

    /// The locked shard that holds `coop`'s queue.
    fn shard(&self, coop: CoopId) -> MutexGuard<'_, Shard> {
        self.shards[(coop.0 % SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// `agents` more agents of `coop` on its queue, made by `make` if it has none yet: one
    /// lock for all of them.
    pub(super) fn bind(
        &self,
        coop: CoopId,
        agents: usize,
        make: impl FnOnce() -> QueueArc,
    ) -> QueueArc {
        let mut shard = self.shard(coop);
        if let Some((q, n)) = shard.get_mut(&coop) {
            *n += agents;
            return q.clone();
        }
        let q = make();
        shard.insert(coop, (q.clone(), agents));
        q
    }

    /// `agents` agents of `coop` bound to `queue` are gone: whether they were its last (the
    /// queue leaves the table, and the caller gives back the pool's count of it).
    pub(super) fn unbind(&self, coop: CoopId, queue: &QueueArc, agents: usize) -> bool {
        let mut shard = self.shard(coop);
        match shard.get_mut(&coop) {
            Some((q, n)) if QueueArc::ptr_eq(q, queue) => {
                debug_assert!(*n >= agents, "more agents unbound than bound");
                *n = n.saturating_sub(agents);
                let last = *n == 0;
                if last {
                    shard.remove(&coop);
                }
                last
            }
            _ => {
                debug_assert!(false, "a cooperation's queue missing from the table");
                false
            }
        }
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::CoopQueues;
    use crate::queue::{EventQueue, QueueArc};
    use crate::runtime::coop::CoopId;

    #[test]
    fn a_cooperations_agents_share_its_queue_until_the_last_leaves() {
        let table = CoopQueues::new();
        let (a, b) = (CoopId(1), CoopId(17)); // the same shard
        let qa = table.bind(a, 2, EventQueue::new);
        let again = table.bind(a, 3, || unreachable!("the cooperation has its queue"));
        assert!(QueueArc::ptr_eq(&qa, &again));
        let qb = table.bind(b, 1, EventQueue::new);
        assert!(!QueueArc::ptr_eq(&qa, &qb), "a queue per cooperation");

        assert!(!table.unbind(a, &qa, 4), "one of five agents left");
        assert!(table.unbind(a, &qa, 1), "the last one");
        assert!(table.unbind(b, &qb, 1));
        let fresh = table.bind(a, 1, EventQueue::new);
        assert!(
            !QueueArc::ptr_eq(&qa, &fresh),
            "a gone cooperation's queue left the table"
        );
    }
}
