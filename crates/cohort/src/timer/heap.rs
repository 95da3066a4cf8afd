//! The timer queue as a binary min-heap of deadlines.
//!
//! O(log n) to schedule and to fire, one 32-byte entry per pending timer (plus the vector's
//! spare capacity). A cancelled timer stays in the heap until its deadline or until the
//! service compacts the heap (when cancelled entries outnumber live ones).

use super::Entry;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A min-heap of entries by (deadline, sequence number).
#[derive(Default)]
pub(crate) struct HeapQueue {
    heap: BinaryHeap<Reverse<Entry>>,
}

impl HeapQueue {
    pub(crate) fn push(&mut self, e: Entry) {
        self.heap.push(Reverse(e));
    }

    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    /// Moves every entry due at `now` to `out`, earliest first.
    pub(crate) fn pop_due(&mut self, now: u64, out: &mut Vec<Entry>) {
        while self.heap.peek().is_some_and(|Reverse(e)| e.at <= now) {
            if let Some(Reverse(e)) = self.heap.pop() {
                out.push(e);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Moves the entries of inactive (cancelled) timers to `out`.
    pub(crate) fn remove_inactive(&mut self, out: &mut Vec<Entry>) {
        let all = std::mem::take(&mut self.heap).into_vec();
        let mut live = Vec::with_capacity(all.len() - all.len() / 2);
        for Reverse(e) in all {
            if !e.task.surely_inactive() {
                live.push(Reverse(e));
            } else {
                out.push(e);
            }
        }
        self.heap = BinaryHeap::from(live);
    }

    /// Moves every entry to `out`.
    pub(crate) fn take_all(&mut self, out: &mut Vec<Entry>) {
        out.extend(
            std::mem::take(&mut self.heap)
                .into_iter()
                .map(|Reverse(e)| e),
        );
    }
}
