//! One agent's handlers never run on two threads at once, under load, on every dispatcher
//! kind (pools of four workers, where with individual fifo each agent has a queue of its own).
//!
//! Several agents receive messages from plain threads and from agents (on the same
//! dispatcher, so sends from its workers, and on the default dispatcher) at the same time.
//! Each handler sets an "inside" flag with a swap that must find it clear, works a little
//! (yielding now and then to widen the window), and clears it: a second thread running the
//! same agent would find the flag set. Every count is exact.

use crate::common;

use cohort::{Agent, Binder, Context, DefineError, Mbox};
use common::DeadLetters;
use common::dispatchers::{self, Kind};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier};

#[derive(Debug, Clone, Copy)]
struct Work(u64);

/// A little CPU work, so handlers overlap in time.
fn busy(seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..64 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// The agent under test.
struct Target {
    index: usize,
    inside: Arc<AtomicBool>,
    overlaps: Arc<AtomicUsize>,
    seen: usize,
    expected: usize,
    sum: u64,
    done: Sender<usize>,
    finished: Sender<(usize, usize)>,
}

impl Agent for Target {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Work, _: &mut Context<'_, Self>| {
            if me.inside.swap(true, Ordering::SeqCst) {
                me.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            me.sum = me.sum.wrapping_add(busy(m.0));
            if me.seen.is_multiple_of(97) {
                std::thread::yield_now();
            }
            me.seen += 1;
            me.inside.store(false, Ordering::SeqCst);
            if me.seen == me.expected {
                let _ = me.done.send(me.index);
            }
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send((self.index, self.seen));
    }
}

#[derive(Debug, Clone, Copy)]
struct Continue;

/// Sends `per_target` messages to each target, `chunk` per event (a self-sent `Continue`
/// between chunks, so the sends of one agent interleave with everything else on its worker).
struct Spray {
    targets: Vec<Mbox>,
    per_target: usize,
    sent: usize,
    chunk: usize,
}

impl Agent for Spray {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Continue, ctx: &mut Context<'_, Self>| {
            let end = (me.sent + me.chunk).min(me.per_target);
            while me.sent < end {
                for t in &me.targets {
                    t.send(Work(me.sent as u64));
                }
                me.sent += 1;
            }
            if me.sent < me.per_target {
                ctx.send_self(Continue);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_self(Continue);
    }
}

const TARGETS: usize = 6;
const THREADS: usize = 3;

fn exclusive_under_load(kind: Kind) {
    // The pools' count (this test's before it ran on every kind); less on the other kinds,
    // where one thread runs all targets and every yield in a handler waits for the CPU.
    let per_pair = common::count(if kind.is_pool() { 1_000 } else { 200 });
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let binder = kind.binder_with_threads(&env, "excl", 4);
    // Senders: the plain threads, two agents on the receivers' dispatcher, two on the default
    // one.
    let sender_binders: Vec<Binder> = vec![
        binder.clone(),
        binder.clone(),
        env.default_binder(),
        env.default_binder(),
    ];
    let senders = THREADS + sender_binders.len();
    let expected = senders * per_pair;

    let overlaps = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = mpsc::channel();
    let (finished_tx, finished_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(binder);
    let targets: Vec<Mbox> = (0..TARGETS)
        .map(|index| {
            coop.add(Target {
                index,
                inside: Arc::new(AtomicBool::new(false)),
                overlaps: overlaps.clone(),
                seen: 0,
                expected,
                sum: 0,
                done: done_tx.clone(),
                finished: finished_tx.clone(),
            })
            .mbox()
        })
        .collect();
    env.register_coop(coop).unwrap();

    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let targets = targets.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..per_pair {
                    for m in &targets {
                        m.send(Work((t * per_pair + i) as u64));
                    }
                }
            })
        })
        .collect();
    let mut coop = env.new_coop();
    for (i, b) in sender_binders.into_iter().enumerate() {
        coop.add_with_binder(
            Spray {
                targets: targets.clone(),
                per_target: per_pair,
                sent: 0,
                chunk: 16 + i,
            },
            b,
        );
    }
    barrier.wait();
    env.register_coop(coop).unwrap();
    for t in threads {
        t.join().unwrap();
    }

    let mut done = common::recv_n(&done_rx, TARGETS, "every target to get all its messages");
    done.sort_unstable();
    assert_eq!(done, (0..TARGETS).collect::<Vec<_>>());
    env.stop_and_wait();

    let mut finished = common::recv_n(&finished_rx, TARGETS, "every finish");
    finished.sort_unstable();
    assert_eq!(
        finished,
        (0..TARGETS).map(|i| (i, expected)).collect::<Vec<_>>(),
        "{kind:?}: (target, messages handled) at finish"
    );
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "{kind:?}: a handler found its agent's `inside` flag set: two workers ran one agent"
    );
    assert_eq!(dead.all(), vec![], "{kind:?}: no dead letter");
}

#[test]
fn each_agent_runs_on_one_thread_at_a_time() {
    dispatchers::on_every_kind(exclusive_under_load);
}
