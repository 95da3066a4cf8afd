//! Loom models of the queue, and what every queue model shares: the item pushed and the FIFO
//! check.

mod dedicated_queue;
mod pool_queue;
mod wakeup;

use super::{QueueArc, QueueItem};

/// The item the loom models push through queues: (producer or queue, sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoomItem(pub(crate) u8, pub(crate) u8);

impl QueueItem for LoomItem {
    type Early = ();

    fn reject(self) {
        panic!("item {self:?} was never executed");
    }

    /// As a demand's: a pool turn that leaves the queue idle keeps its blocks, for a sweep to
    /// give back (the models race `EventQueue::give_back_idle` with senders and workers),
    /// with no list (no worker sweeps here).
    fn idle_memory() -> crate::queue::IdleMemory {
        crate::queue::IdleMemory::Keep
    }
}

/// Checks that `log` holds `per_producer` items of each of `producers` producers (items
/// `LoomItem(p, 0..per_producer)`), each producer's in the order it pushed them.
pub(crate) fn assert_fifo_per_producer(log: &[LoomItem], producers: u8, per_producer: u8) {
    assert_eq!(
        log.len(),
        usize::from(producers) * usize::from(per_producer),
        "every item ran once: {log:?}"
    );
    for p in 0..producers {
        let seq: Vec<u8> = log.iter().filter(|it| it.0 == p).map(|it| it.1).collect();
        assert_eq!(
            seq,
            (0..per_producer).collect::<Vec<_>>(),
            "FIFO per producer: {log:?}"
        );
    }
}

/// Spawns `producers` threads, producer `p` pushing `LoomItem(p, 0..per_producer)` to `q` from
/// outside, in order.
pub(crate) fn spawn_producers(
    q: &QueueArc<LoomItem>,
    producers: u8,
    per_producer: u8,
) -> Vec<loom::thread::JoinHandle<()>> {
    (0..producers)
        .map(|p| {
            let q = q.clone();
            loom::thread::spawn(move || {
                for i in 0..per_producer {
                    q.push_remote(LoomItem(p, i));
                }
            })
        })
        .collect()
}
