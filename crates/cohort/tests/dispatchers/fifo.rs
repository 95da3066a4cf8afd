//! Order on every dispatcher kind.
//!
//! - **FIFO per sender-receiver pair**, with nothing lost: plain threads and agents (on the
//!   receivers' dispatcher, where an agent's sends may take the local path or come from
//!   whichever worker runs it, on the default dispatcher, on another `one_thread`, and twice
//!   on `active_obj`) send numbered messages to one or several agents at once; every receiver
//!   checks that each sender's numbers arrive strictly in order, and the totals are exact.
//! - **Cooperation fifo**: the agents of one cooperation share one queue, so they never run in
//!   parallel and keep one total order: a plain thread sends to agents `A` and `B` of one
//!   cooperation in an irregular pattern, the handlers append to one log per cooperation, and
//!   the log is exactly the send order. Several cooperations run at once on a four-worker
//!   pool, so a broken queue would show.

use crate::common;

use cohort::dispatcher::Fifo;
use cohort::{Agent, Binder, Context, DefineError, Mbox};
use common::dispatchers::{self, Kind, PoolKind};
use common::order::{Report, SendSeq, Seq, SeqCheck, check_reports, run_senders};
use common::{DeadLetters, TIMEOUT, watchdog};
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

/// `threads` plain threads and six sender agents (twice on the receivers' dispatcher, on the
/// default one, on another `one_thread`, twice on `active_obj`; agent `i` sends `chunk(i)`
/// messages per event) each send `per_sender` numbered messages to every one of `receivers`
/// agents on a dispatcher of `kind` (pools of four workers).
fn fifo_per_pair(
    kind: Kind,
    threads: u32,
    per_sender: u32,
    receivers: usize,
    chunk: impl Fn(usize) -> u32,
) {
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let binder = kind.binder_with_threads(&env, "fifo", 4);
    let one_thread = Kind::OneThread.binder(&env, "senders");
    let active = Kind::ActiveObj.binder(&env, "active");
    let agent_binders: Vec<Binder> = vec![
        binder.clone(),
        binder.clone(),
        env.default_binder(),
        one_thread,
        active.clone(),
        active,
    ];
    let senders = threads as usize + agent_binders.len();
    let expected = senders * per_sender as usize;

    let (reached_tx, reached_rx) = mpsc::channel();
    let (finished_tx, finished_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_name("receivers").set_binder(binder);
    let receivers: Vec<Mbox> = (0..receivers)
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
        .map(|(i, b)| (b, chunk(i)))
        .collect();
    run_senders(&env, threads, agents, per_sender, send);
    common::recv_n(
        &reached_rx,
        receivers.len(),
        "every receiver to get all its messages",
    );
    env.stop_and_wait();

    let reports = common::recv_n(&finished_rx, receivers.len(), "every finish");
    check_reports(reports, senders, per_sender, &format!("{kind:?}"));
    assert_eq!(
        dead.all(),
        vec![],
        "{kind:?}: no message may become a dead letter"
    );
}

/// One receiver, long runs from each sender: 20 000 messages per sender on `one_thread` and
/// `active_obj`, 3 000 on the other kinds (the counts of the tests this one merged).
#[test]
fn fifo_per_sender_to_one_receiver() {
    dispatchers::on_every_kind(|kind| {
        let per_sender = match kind {
            Kind::OneThread | Kind::ActiveObj => 20_000,
            _ => 3_000,
        };
        fifo_per_pair(kind, 4, common::count(per_sender) as u32, 1, |_| 97)
    });
}

/// Several receivers of every send, chunks of different lengths.
#[test]
fn fifo_per_sender_to_several_receivers() {
    dispatchers::on_every_kind(|kind| {
        fifo_per_pair(kind, 3, common::count(3_000) as u32, 3, |i| {
            7 + 10 * i as u32
        })
    });
}

/// Many senders, few messages each: the interleaving changes at every message.
#[test]
fn fifo_with_many_short_senders() {
    dispatchers::on_every_kind(|kind| {
        fifo_per_pair(kind, 16, common::count(500) as u32, 1, |_| 97)
    });
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

/// `split`: an agent on the environment's default dispatcher is added between the two members,
/// so they are bound in two calls to the pool and must still land on one queue.
fn cooperation_fifo(pool_of: impl FnOnce(&cohort::Environment) -> Binder, split: bool) {
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
        if split {
            coop.add_with_binder(common::Idle, env.default_binder());
        }
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
        cooperation_fifo(
            |env| {
                PoolKind::ThreadPool
                    .build(env, "coop-tp", 4)
                    .default_binder()
            },
            false,
        )
    });
}

/// A cooperation's agents on a pool with cooperation fifo share one queue even when agents on
/// another dispatcher come between them (the pool binds each run of them in its own call).
#[test]
fn cooperation_fifo_holds_across_runs_of_binders() {
    watchdog(TIMEOUT, || {
        for kind in PoolKind::ALL {
            cooperation_fifo(
                |env| {
                    kind.build(env, "coop-split", 4)
                        .binder(Fifo::Cooperation, 4)
                },
                true,
            )
        }
    });
}

/// Every kind that gives the agents of one cooperation one queue (not `active_obj`, a thread
/// per agent, nor a pool with individual fifo, a queue per agent).
#[test]
fn cooperation_fifo_keeps_one_order() {
    let kinds: Vec<Kind> = dispatchers::ALL
        .into_iter()
        .filter(|k| k.one_queue_per_cooperation())
        .collect();
    dispatchers::on_each(&kinds, |kind| {
        cooperation_fifo(|env| kind.binder_with_threads(env, "coop", 4), false)
    });
}
