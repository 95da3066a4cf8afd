//! [`QueueGroup`]: a broadcast log's group as the runtime has it, the subscribers of one
//! type bound to one event queue.

use super::log::{LogGroup, Marker};
use crate::agent::demand::{BroadcastTargets, Demand};
use crate::message::Envelope;
use crate::queue::QueueArc;
use std::sync::Arc;

/// The subscribers of one type on one queue, reached through a [`super::log::BroadcastLog`].
pub(crate) struct QueueGroup {
    pub(crate) queue: QueueArc,
    pub(crate) targets: Arc<BroadcastTargets>,
    pub(crate) type_name: &'static str,
}

impl LogGroup for QueueGroup {
    /// The message and the finish epoch it was sent at (see [`BroadcastTargets::run`]).
    type Entry = (Envelope, u32);

    #[inline]
    fn push_marker(&self, marker: Marker<Self>) {
        self.queue.push_remote(Demand::log(marker))
    }

    #[inline]
    fn handle(&self, (entry, sent_at): &(Envelope, u32)) {
        // Only envelopes that can be duplicated go into a log: `duplicate` reads the payload
        // through `&self` (a shared-payload count or a copy of one word), safe from any thread.
        match entry.duplicate() {
            Some(msg) => self.targets.run(msg, *sent_at),
            None => self.reject(1),
        }
    }

    #[cold]
    fn reject(&self, n: u64) {
        self.targets.reject(self.type_name, n)
    }
}
