//! Order per sender: numbered messages, the receiver-side check, and the check of what every
//! receiver reported (`pool_fifo.rs`, `named_fan_out.rs`).

use std::sync::mpsc::Sender;

/// Message `n` of sender `sender`.
#[derive(Debug, Clone, Copy)]
pub struct Seq {
    pub sender: u32,
    pub n: u32,
}

/// What a receiver saw, reported from `finish`.
#[derive(Debug)]
pub struct Report {
    pub index: usize,
    pub total: usize,
    pub next: Vec<u32>,
    pub errors: Vec<String>,
}

/// A receiver's side: checks that each sender's numbers arrive strictly in order, and says
/// once `expected` messages have arrived.
pub struct SeqCheck {
    pub index: usize,
    next: Vec<u32>,
    total: usize,
    expected: usize,
    errors: Vec<String>,
    reached: Sender<usize>,
}

impl SeqCheck {
    pub fn new(index: usize, senders: usize, expected: usize, reached: Sender<usize>) -> Self {
        Self {
            index,
            next: vec![0; senders],
            total: 0,
            expected,
            errors: Vec::new(),
            reached,
        }
    }

    /// Records message `m`.
    pub fn on(&mut self, m: &Seq) {
        let s = m.sender as usize;
        if m.n != self.next[s] && self.errors.len() < 10 {
            self.errors.push(format!(
                "sender {s}: expected #{} got #{} (after {} messages in all)",
                self.next[s], m.n, self.total
            ));
        }
        self.next[s] = m.n + 1;
        self.total += 1;
        if self.total == self.expected {
            let _ = self.reached.send(self.index);
        }
    }

    /// What this receiver saw (taking its errors).
    pub fn report(&mut self) -> Report {
        Report {
            index: self.index,
            total: self.total,
            next: self.next.clone(),
            errors: std::mem::take(&mut self.errors),
        }
    }
}

/// Checks that every receiver got `per_sender` messages from each of `senders`, in order.
#[track_caller]
pub fn check_reports(mut reports: Vec<Report>, senders: usize, per_sender: u32, what: &str) {
    reports.sort_by_key(|r| r.index);
    for r in reports {
        assert_eq!(
            r.errors,
            Vec::<String>::new(),
            "{what}, receiver {}",
            r.index
        );
        assert_eq!(
            r.total,
            senders * per_sender as usize,
            "{what}, receiver {}",
            r.index
        );
        assert_eq!(
            r.next,
            vec![per_sender; senders],
            "{what}, receiver {}",
            r.index
        );
    }
}
