//! Ordering on the pool dispatchers.
//!
//! - **Individual fifo**: FIFO per sender-receiver pair. Plain threads and agents (on the same
//!   pool, where an agent's sends come from whichever worker runs it, and on the default
//!   dispatcher) send numbered messages to several agents at once; every receiver checks that
//!   each sender's numbers arrive strictly in order, and the totals are exact.
//! - **Cooperation fifo**: the agents of one cooperation share one queue, so they never run in
//!   parallel and keep one total order: a plain thread sends to agents `A` and `B` of one
//!   cooperation in an irregular pattern, the handlers append to one log per cooperation, and
//!   the log is exactly the send order. Several cooperations run at once on a four-worker
//!   pool, so a broken queue would show.

mod common;

use cohort::dispatcher::Fifo;
use cohort::{Agent, Binder, Context, DefineError, Mbox};
use common::order::{Report, SendSeq, Seq, SeqCheck, check_reports, run_senders};
use common::{DeadLetters, PoolKind, TIMEOUT, pool_binder, watchdog};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier, Mutex};

/// Checks per-sender order; reports once every message has arrived, and from `finish`.
struct Checker {
    check: SeqCheck,
    finished: Sender<Report>,
}

impl Agent for Checker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Seq, _: &mut Context<'_, Self>| me.check.on(m))?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(self.check.report());
    }
}

const RECEIVERS: usize = 3;
const THREADS: u32 = 3;

fn fifo_per_pair(kind: PoolKind, name: &str) {
    let per_sender = common::count(3_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let pool = kind.build(&env, name, 4);
    let binder = pool_binder(&pool, Fifo::Individual, 4);
    let agent_binders: Vec<Binder> = vec![binder.clone(), binder.clone(), env.default_binder()];
    let senders = THREADS as usize + agent_binders.len();
    let expected = senders * per_sender as usize;

    let (reached_tx, reached_rx) = mpsc::channel();
    let (finished_tx, finished_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(binder);
    let receivers: Vec<Mbox> = (0..RECEIVERS)
        .map(|index| {
            coop.add(Checker {
                check: SeqCheck::new(index, senders, expected, reached_tx.clone()),
                finished: finished_tx.clone(),
            })
            .mbox()
        })
        .collect();
    env.register_coop(coop).unwrap();

    let targets = receivers.clone();
    let send: SendSeq = Arc::new(move |sender, n| {
        for r in &targets {
            r.send(Seq { sender, n });
        }
    });
    let agents = agent_binders
        .into_iter()
        .enumerate()
        .map(|(i, b)| (b, 7 + 10 * i as u32))
        .collect();
    run_senders(&env, THREADS, agents, per_sender, send);
    common::recv_n(
        &reached_rx,
        RECEIVERS,
        "every receiver to get all its messages",
    );
    env.stop_and_wait();

    let reports = common::recv_n(&finished_rx, RECEIVERS, "every finish");
    check_reports(reports, senders, per_sender, &format!("{kind:?}"));
    assert_eq!(dead.all(), vec![], "{kind:?}: no dead letter");
}

#[test]
fn thread_pool_individual_fifo_keeps_order_per_sender() {
    watchdog(TIMEOUT, || fifo_per_pair(PoolKind::ThreadPool, "fifo-tp"));
}

#[test]
fn work_stealing_individual_fifo_keeps_order_per_sender() {
    watchdog(TIMEOUT, || fifo_per_pair(PoolKind::WorkStealing, "fifo-ws"));
}

/// What the agents of one cooperation share.
struct CoopShared {
    inside: AtomicBool,
    overlaps: AtomicUsize,
    log: Mutex<Vec<u32>>,
    expected: usize,
    index: usize,
    done: Mutex<Sender<usize>>,
}

#[derive(Debug, Clone, Copy)]
struct Step(u32);

/// An agent of a cooperation-fifo cooperation: appends every step to the shared log.
struct Member {
    shared: Arc<CoopShared>,
}

impl Agent for Member {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Step, _: &mut Context<'_, Self>| {
            let s = &me.shared;
            if s.inside.swap(true, Ordering::SeqCst) {
                s.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            let len = {
                let mut log = s.log.lock().unwrap();
                log.push(m.0);
                log.len()
            };
            if m.0.is_multiple_of(61) {
                std::thread::yield_now();
            }
            s.inside.store(false, Ordering::SeqCst);
            if len == s.expected {
                let _ = s.done.lock().unwrap().send(s.index);
            }
        })?;
        Ok(())
    }
}

/// Whether step `i` goes to `A` (else `B`): an irregular mix of runs and alternations.
fn to_a(i: u32) -> bool {
    !(i * 7 + i / 5).is_multiple_of(3)
}

const COOPS: usize = 4;

fn cooperation_fifo(pool_of: impl FnOnce(&cohort::Environment) -> Binder) {
    let steps = common::count(4_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let binder = pool_of(&env);
    let (done_tx, done_rx) = mpsc::channel();
    let mut pairs = Vec::new();
    let mut shared = Vec::new();
    for index in 0..COOPS {
        let s = Arc::new(CoopShared {
            inside: AtomicBool::new(false),
            overlaps: AtomicUsize::new(0),
            log: Mutex::new(Vec::with_capacity(steps as usize)),
            expected: steps as usize,
            index,
            done: Mutex::new(done_tx.clone()),
        });
        let mut coop = env.new_coop();
        coop.set_binder(binder.clone());
        let a = coop.add(Member { shared: s.clone() }).mbox();
        let b = coop.add(Member { shared: s.clone() }).mbox();
        env.register_coop(coop).unwrap();
        pairs.push((a, b));
        shared.push(s);
    }

    let barrier = Arc::new(Barrier::new(COOPS));
    let threads: Vec<_> = pairs
        .into_iter()
        .map(|(a, b)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..steps {
                    if to_a(i) { &a } else { &b }.send(Step(i));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    common::recv_n(&done_rx, COOPS, "every cooperation to handle its steps");
    env.stop_and_wait();

    for s in &shared {
        assert_eq!(
            s.overlaps.load(Ordering::SeqCst),
            0,
            "cooperation {}: two of its agents ran in parallel",
            s.index
        );
        let log = s.log.lock().unwrap();
        let bad = log.iter().enumerate().find(|&(i, &n)| i as u32 != n);
        assert!(
            log.len() == steps as usize && bad.is_none(),
            "cooperation {}: the handled order is not the send order (first difference at {:?}, \
             {} steps handled of {steps})",
            s.index,
            bad,
            log.len()
        );
    }
    assert_eq!(dead.all(), vec![]);
}

/// `thread_pool`'s default binding is cooperation fifo.
#[test]
fn thread_pool_cooperation_fifo_is_the_default_and_keeps_one_order() {
    watchdog(TIMEOUT, || {
        cooperation_fifo(|env| PoolKind::ThreadPool.build(env, "coop-tp", 4).binder())
    });
}

#[test]
fn work_stealing_cooperation_fifo_keeps_one_order() {
    watchdog(TIMEOUT, || {
        cooperation_fifo(|env| {
            let pool = PoolKind::WorkStealing.build(env, "coop-ws", 4);
            pool_binder(&pool, Fifo::Cooperation, 4)
        })
    });
}
