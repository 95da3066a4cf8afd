//! FIFO per (sender, receiver) pair under concurrent senders, with nothing lost.
//!
//! Plain threads and agents on every kind of dispatcher (the receiver's own `one_thread`
//! queue, which takes the local path, another `one_thread`, `active_obj`) send numbered
//! messages to one agent at the same time; the agent checks that each sender's numbers
//! arrive strictly increasing by one, and the total is exact.

mod common;

use cohort::{ActiveObjBuilder, Agent, Binder, Context, DefineError, OneThreadBuilder};
use common::order::{SendSeq, Seq, run_senders};
use common::{DeadLetters, TIMEOUT, watchdog};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};

/// What the receiver saw.
#[derive(Debug)]
struct Report {
    total: usize,
    /// Per sender, the next number expected (so the count received so far).
    next: Vec<u32>,
    /// The first ordering violations seen.
    errors: Vec<String>,
}

/// The receiver: checks per-sender order, reports once `expected` messages have arrived, and
/// again from `finish` (so nothing arriving after the count was reached goes unnoticed).
struct Checker {
    next: Vec<u32>,
    total: usize,
    expected: usize,
    errors: Vec<String>,
    reached: Sender<()>,
    finished: Sender<Report>,
}

impl Agent for Checker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Seq, _: &mut Context<'_, Self>| {
            let s = m.sender as usize;
            if m.n != me.next[s] && me.errors.len() < 10 {
                me.errors.push(format!(
                    "sender {}: expected #{} got #{} (after {} messages in all)",
                    s, me.next[s], m.n, me.total
                ));
            }
            me.next[s] = m.n + 1;
            me.total += 1;
            if me.total == me.expected {
                let _ = me.reached.send(());
            }
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(Report {
            total: self.total,
            next: self.next.clone(),
            errors: std::mem::take(&mut self.errors),
        });
    }
}

#[derive(Clone, Copy, Debug)]
enum ReceiverOn {
    /// The environment's default `one_thread` dispatcher.
    Default,
    /// An `active_obj` dispatcher (a thread of its own).
    ActiveObj,
}

/// Runs `threads` plain threads and five sender agents (on the receiver's dispatcher, the
/// default one, another `one_thread`, and twice `active_obj`), each sending `per_sender`
/// messages to one receiver placed as `receiver_on` says.
fn run_fifo(receiver_on: ReceiverOn, threads: u32, per_sender: u32) {
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let one_thread = OneThreadBuilder::new().name("senders").build(&env).unwrap();
    let active = ActiveObjBuilder::new().name("active").build(&env).unwrap();

    // Agent senders: on the receiver's dispatcher, on another one_thread, on active_obj
    // (twice: two threads of their own).
    let receiver_binder: Binder = match receiver_on {
        ReceiverOn::Default => env.default_binder(),
        ReceiverOn::ActiveObj => active.binder(),
    };
    let agent_binders: Vec<Binder> = vec![
        receiver_binder.clone(),
        env.default_binder(),
        one_thread.binder(),
        active.binder(),
        active.binder(),
    ];
    let senders = threads as usize + agent_binders.len();
    let expected = senders * per_sender as usize;

    let (reached_tx, reached_rx) = mpsc::channel();
    let (finished_tx, finished_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_name("receiver");
    let receiver = coop
        .add_with_binder(
            Checker {
                next: vec![0; senders],
                total: 0,
                expected,
                errors: Vec::new(),
                reached: reached_tx,
                finished: finished_tx,
            },
            receiver_binder,
        )
        .mbox();
    let receiver_coop = env.register_coop(coop).unwrap();

    // Plain threads start together, and with the agents.
    let target = receiver.clone();
    let send: SendSeq = Arc::new(move |sender, n| target.send(Seq { sender, n }));
    let agents = agent_binders.into_iter().map(|b| (b, 97)).collect();
    run_senders(&env, threads, agents, per_sender, send);

    common::recv(&reached_rx, "the receiver to get every message");
    receiver_coop.deregister(cohort::DeregReason::Normal);
    let report = common::recv(&finished_rx, "the receiver's finish");
    env.stop_and_wait();

    assert!(
        report.errors.is_empty(),
        "FIFO violated ({:?}): {:#?}",
        receiver_on,
        report.errors
    );
    assert_eq!(report.total, expected, "messages received in all");
    assert_eq!(
        report.next,
        vec![per_sender; senders],
        "messages received per sender"
    );
    assert_eq!(dead.all(), vec![], "no message may become a dead letter");
}

#[test]
fn fifo_per_sender_receiver_on_one_thread() {
    watchdog(TIMEOUT, || {
        run_fifo(ReceiverOn::Default, 4, common::count(20_000) as u32)
    });
}

#[test]
fn fifo_per_sender_receiver_on_active_obj() {
    watchdog(TIMEOUT, || {
        run_fifo(ReceiverOn::ActiveObj, 4, common::count(20_000) as u32)
    });
}

/// Many senders, few messages each: the interleaving changes at every message.
#[test]
fn fifo_with_many_short_senders() {
    watchdog(TIMEOUT, || {
        run_fifo(ReceiverOn::Default, 16, common::count(500) as u32)
    });
}
