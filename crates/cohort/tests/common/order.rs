//! Order per sender: numbered messages, the senders (plain threads and agents started
//! together), the receiver-side check, and the check of what every receiver reported
//! (`dispatchers/fifo.rs`, `messaging/named_fan_out.rs`).

use cohort::{Agent, Binder, Context, DefineError, Environment};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier};

/// Message `n` of sender `sender`.
#[derive(Debug, Clone, Copy)]
pub struct Seq {
    pub sender: u32,
    pub n: u32,
}

/// How message `n` of sender `sender` is sent (to one receiver, to several, or along some
/// path through mailboxes).
pub type SendSeq = Arc<dyn Fn(u32, u32) + Send + Sync>;

/// Asks a [`SeqSender`] for its next chunk (sent to itself, so the sends of one sender
/// interleave with everything else its worker runs).
#[derive(Debug, Clone, Copy)]
pub struct Continue;

/// An agent that sends `count` numbered messages through `send`, `chunk` per event.
pub struct SeqSender {
    id: u32,
    send: SendSeq,
    next: u32,
    count: u32,
    chunk: u32,
}

impl Agent for SeqSender {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Continue, ctx: &mut Context<'_, Self>| {
            let end = (me.next + me.chunk).min(me.count);
            while me.next < end {
                (me.send)(me.id, me.next);
                me.next += 1;
            }
            if me.next < me.count {
                ctx.send_self(Continue);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_self(Continue);
    }
}

/// Plain threads `0..threads`, then one [`SeqSender`] agent per `(binder, chunk)` (sender
/// ids from `threads` on), each send `per_sender` numbered messages through `send`; the
/// threads are released together, and with the agents' cooperation. Returns once the
/// threads are done (the agents may still be sending).
pub fn run_senders(
    env: &Environment,
    threads: u32,
    agents: Vec<(Binder, u32)>,
    per_sender: u32,
    send: SendSeq,
) {
    let barrier = Arc::new(Barrier::new(threads as usize + 1));
    let handles: Vec<_> = (0..threads)
        .map(|id| {
            let (send, barrier) = (send.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for n in 0..per_sender {
                    send(id, n);
                }
            })
        })
        .collect();
    let mut coop = env.new_coop();
    coop.set_name("agent senders");
    for (i, (binder, chunk)) in agents.into_iter().enumerate() {
        coop.add_with_binder(
            SeqSender {
                id: threads + i as u32,
                send: send.clone(),
                next: 0,
                count: per_sender,
                chunk,
            },
            binder,
        );
    }
    barrier.wait();
    env.register_coop(coop).unwrap();
    for h in handles {
        h.join().unwrap();
    }
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
