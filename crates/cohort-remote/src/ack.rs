//! Cumulative acknowledgements: what closes the "written just before the break" hole.
//!
//! Each side counts the `Message` frames it reads on a connection and sends that count back
//! in an `Ack` frame ([`frame`](crate::frame)), inside its own batches (no extra write on
//! the hot path), at its heartbeat, or alone after [`ACK_EVERY`](crate::defaults::ACK_EVERY)
//! messages when it has nothing to send. The sending side keeps, for the messages it wrote
//! and the peer has not acknowledged, only their count per run of one type ([`Unacked`]);
//! at a break each of them is counted as a dead letter with
//! [`DeliveryFailure::InDoubt`](cohort::DeliveryFailure::InDoubt): handled there or not,
//! nobody knows, and nothing is resent.

use crate::defaults::ACK_EVERY;
use crate::node::NodeShared;
use crate::stats::Counters;
use cohort::DeliveryFailure;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::Notify;

/// The acknowledgement counters of one connection, shared by its reader, its writer and
/// the senders' direct writes.
#[derive(Default)]
pub(crate) struct AckState {
    /// `Message` frames this side read (and handed over) on the connection (reader).
    pub(crate) received: AtomicU64,
    /// The highest `received` this side put in an `Ack` (writer).
    pub(crate) sent: AtomicU64,
    /// The highest count the peer acknowledged (reader).
    pub(crate) acked: AtomicU64,
    /// The peer said `Bye`: the writer sends a last `Ack` and ends the connection.
    pub(crate) peer_bye: AtomicBool,
    /// Set while the writer, after its own `Bye`, waits for the last `Ack`.
    awaiting: AtomicBool,
    arrived: Notify,
}

impl AckState {
    /// Records the peer's acknowledgement (reader).
    #[inline]
    pub(crate) fn peer_acked(&self, received: u64) {
        self.acked.fetch_max(received, Ordering::AcqRel);
        if self.awaiting.load(Ordering::Acquire) {
            self.arrived.notify_one();
        }
    }

    /// Waits until the peer acknowledged `written` messages, or `deadline` (writer, after
    /// its `Bye`); returns whether all were acknowledged.
    pub(crate) async fn wait_for(&self, written: u64, deadline: tokio::time::Instant) -> bool {
        self.awaiting.store(true, Ordering::Release);
        loop {
            if self.acked.load(Ordering::Acquire) >= written {
                return true;
            }
            if tokio::time::timeout_at(deadline, self.arrived.notified())
                .await
                .is_err()
            {
                return self.acked.load(Ordering::Acquire) >= written;
            }
        }
    }

    /// Whether this side should write an `Ack` now (its peer is owed one).
    #[inline]
    pub(crate) fn owed(&self) -> Option<u64> {
        let r = self.received.load(Ordering::Acquire);
        (r > self.sent.load(Ordering::Relaxed)).then_some(r)
    }

    /// Whether an `Ack` of `received` goes even in a write of its own: the peer's count in
    /// doubt is kept under [`ACK_EVERY`] when this side has nothing to send (a one-way
    /// stream); otherwise it waits for a message or the heartbeat to ride on.
    #[inline]
    pub(crate) fn due_alone(&self, received: u64) -> bool {
        received.saturating_sub(self.sent.load(Ordering::Relaxed)) >= ACK_EVERY
    }
}

/// Messages written on one connection and not yet acknowledged, as runs of one type:
/// `(end, entry)` covers the messages numbered from the previous run's end (or the
/// acknowledged count) up to `end`, all of registry entry `entry`. The last run is kept
/// open outside the deque (`open`, ending at `written`), so a message of the same type as
/// the one before costs an add and a compare.
#[derive(Default)]
pub(crate) struct Unacked {
    /// Messages written on this connection.
    pub(crate) written: u64,
    /// The closed runs, oldest first.
    runs: VecDeque<(u64, u32)>,
    /// The registry entry of the open run, which ends at `written`.
    open: u32,
    /// Counted at the break: no message may be written on the connection any more.
    pub(crate) settled: bool,
}

impl Unacked {
    /// Records one more message of registry entry `entry` written.
    #[inline]
    pub(crate) fn record(&mut self, entry: u32) {
        if entry != self.open {
            self.switch(entry);
        }
        self.written += 1;
    }

    /// Closes the open run (if it holds any message) and opens one of `entry`.
    #[cold]
    fn switch(&mut self, entry: u32) {
        let from = self.runs.back().map_or(0, |&(end, _)| end);
        if self.written > from {
            self.runs.push_back((self.written, self.open));
        }
        self.open = entry;
    }

    /// Forgets the runs the peer acknowledged whole.
    #[inline]
    pub(crate) fn trim(&mut self, acked: u64) {
        while let Some(&(end, _)) = self.runs.front() {
            if end > acked {
                break;
            }
            self.runs.pop_front();
        }
    }

    /// At the break (once): counts every message written past `acked` as in doubt; returns
    /// how many.
    pub(crate) fn settle(&mut self, acked: u64, node: &NodeShared) -> u64 {
        if std::mem::replace(&mut self.settled, true) {
            return 0;
        }
        // A peer that acknowledges more than was written is believed up to what was.
        let mut from = acked.min(self.written);
        let mut total = 0;
        let open = (self.written, self.open);
        for (end, entry) in self.runs.drain(..).chain(std::iter::once(open)) {
            let n = end.saturating_sub(from);
            from = from.max(end);
            if n == 0 {
                continue;
            }
            total += n;
            let name = node.registry.entry(entry).type_name;
            for _ in 0..n {
                node.undeliverable(name, DeliveryFailure::InDoubt);
            }
        }
        Counters::add(&node.counters.in_doubt, total);
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs not acknowledged whole, the open one last (when it holds any message past
    /// the closed ones and past `acked`).
    fn runs(u: &Unacked, acked: u64) -> Vec<(u64, u32)> {
        let mut v: Vec<_> = u.runs.iter().copied().collect();
        let from = v.last().map_or(0, |&(end, _)| end).max(acked);
        if u.written > from {
            v.push((u.written, u.open));
        }
        v
    }

    #[test]
    fn runs_merge_by_type_and_trim_by_acknowledgement() {
        let mut u = Unacked::default();
        for e in [1, 1, 1, 2, 2, 1] {
            u.record(e);
        }
        assert_eq!(runs(&u, 0), vec![(3, 1), (5, 2), (6, 1)]);
        u.trim(3);
        assert_eq!(runs(&u, 3), vec![(5, 2), (6, 1)]);
        // A partial acknowledgement keeps the run: its count is taken at the break.
        u.trim(4);
        assert_eq!(runs(&u, 4), vec![(5, 2), (6, 1)]);
        u.trim(6);
        assert!(runs(&u, 6).is_empty());
        assert_eq!(u.written, 6);
        // Entry 0 first (the open run's initial entry): no empty run in front of it.
        let mut u = Unacked::default();
        for e in [0, 0, 3] {
            u.record(e);
        }
        assert_eq!(runs(&u, 0), vec![(2, 0), (3, 3)]);
    }
}
