//! Deregistration on the pool dispatchers (a smaller `deregistration.rs`, run on each pool
//! and each fifo): `finish` runs after the last message pending when deregistration began, a
//! message sent after that is a dead letter, senders racing with deregistration lose
//! nothing, and children finish (and are announced) before their parent.

mod common;

use cohort::dispatcher::Fifo;
use cohort::{
    Agent, Binder, Context, CoopDeregistered, DefineError, DeliveryFailure, DeregReason, Mbox,
};
use common::{DeadLetters, Gate, PoolKind, Probe, TIMEOUT, gate, pool_binder, watchdog};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy)]
struct Item(u32);

/// Blocks in its gate on the first `Item` (if it has one), records every item, reports them
/// from `finish`.
struct Sink {
    gate: Option<Gate>,
    seen: Vec<u32>,
    finished: Sender<Vec<u32>>,
}

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Item, _: &mut Context<'_, Self>| {
            if let Some(g) = me.gate.take() {
                g.block();
            }
            me.seen.push(m.0);
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(std::mem::take(&mut self.seen));
    }
}

/// Runs `check` for each pool kind with each fifo, under one watchdog.
fn on_every_pool(check: impl Fn(PoolKind, Fifo) + Send + 'static) {
    watchdog(TIMEOUT, move || {
        for kind in PoolKind::ALL {
            for fifo in [Fifo::Individual, Fifo::Cooperation] {
                check(kind, fifo);
            }
        }
    });
}

/// The pool binder of `kind` with `fifo`, on a new two-worker pool.
fn pool(env: &cohort::Environment, kind: PoolKind, fifo: Fifo) -> Binder {
    let p = kind.build(env, &format!("dereg-{kind:?}-{fifo:?}"), 2);
    pool_binder(&p, fifo, 4)
}

/// A plain thread queues `n` items to a blocked sink, deregisters its cooperation, sends one
/// more (a dead letter), then lets the sink go: it handles all `n`, in order, before `finish`.
fn finish_after_pending(kind: PoolKind, fifo: Fifo) {
    let n = common::count(2_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let (g, control) = gate();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(pool(&env, kind, fifo));
    let sink = coop
        .add(Sink {
            gate: Some(g),
            seen: Vec::new(),
            finished: tx,
        })
        .mbox();
    let handle = env.register_coop(coop).unwrap();

    sink.send(Item(0));
    control.wait_entered();
    for i in 1..n {
        sink.send(Item(i));
    }
    handle.deregister(DeregReason::Normal);
    sink.send(Item(u32::MAX));
    assert_eq!(
        dead.of::<Item>(),
        vec![DeliveryFailure::ReceiverGone],
        "{kind:?}/{fifo:?}: a message sent after deregistration began is a dead letter"
    );
    control.open();
    let seen = common::recv(&rx, "the sink's finish");
    assert!(
        seen == (0..n).collect::<Vec<_>>(),
        "{kind:?}/{fifo:?}: finish must come after every pending message, in order \
         ({} seen, first out of place: {:?})",
        seen.len(),
        seen.iter().enumerate().find(|&(i, &v)| i as u32 != v)
    );
    env.stop_and_wait();
    assert!(handle.is_gone());
    assert_eq!(dead.all().len(), 1);
}

#[test]
fn finish_runs_after_pending_messages() {
    on_every_pool(finish_after_pending);
}

/// From `start`: sends `n` items to its peer, then deregisters its own cooperation (which
/// holds the peer). With cooperation fifo the peer shares its queue (local sends); with
/// individual fifo the sends cross queues from a worker (on `work_stealing`, through the
/// LIFO slot).
struct LocalSender {
    peer: Mbox,
    n: u32,
}

impl Agent for LocalSender {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for i in 0..self.n {
            self.peer.send(Item(i));
        }
        ctx.deregister_coop(DeregReason::User(7));
    }
}

#[test]
fn finish_runs_after_messages_sent_from_the_pool_before_deregistering() {
    on_every_pool(|kind, fifo| {
        let n = common::count(3_000) as u32;
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_binder(pool(&env, kind, fifo))
            .notify_deregistered(deregistered.mbox.clone());
        let sink = coop
            .add(Sink {
                gate: None,
                seen: Vec::new(),
                finished: tx,
            })
            .mbox();
        coop.add(LocalSender { peer: sink, n });
        let handle = env.register_coop(coop).unwrap();
        let seen = common::recv(&rx, "the sink's finish");
        assert!(
            seen == (0..n).collect::<Vec<_>>(),
            "{kind:?}/{fifo:?}: {} of {n} items seen before finish",
            seen.len()
        );
        let d = deregistered.recv("CoopDeregistered");
        assert_eq!((d.id, d.reason), (handle.id(), DeregReason::User(7)));
        env.stop_and_wait();
        assert_eq!(dead.all(), vec![], "{kind:?}/{fifo:?}");
        deregistered.shutdown();
    });
}

/// A message from one of several plain threads: (sender, sequence number).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Numbered(usize, u32);

/// Records each sender's items; deregisters its own cooperation on sender 0's item `at`.
struct Tally {
    seen: Vec<Vec<u32>>,
    at: u32,
    finished: Sender<Vec<Vec<u32>>>,
}

impl Agent for Tally {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Numbered, ctx: &mut Context<'_, Self>| {
            me.seen[m.0].push(m.1);
            if *m == Numbered(0, me.at) {
                ctx.deregister_coop(DeregReason::Normal);
            }
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(std::mem::take(&mut self.seen));
    }
}

/// Plain threads keep sending while the agent's cooperation deregisters, then drop their
/// mailboxes (with the cooperation's, the last references to the agent): each message is either handled before
/// `finish` or counted as a dead letter, each sender's handled messages are its first ones in
/// order, and nothing touches the agent after it is gone (valgrind's memcheck would see it).
/// Remote sends to a pool queue borrow the agent until its finish step: this is the race
/// that step closes.
fn senders_race_deregistration(kind: PoolKind, fifo: Fifo) {
    const SENDERS: usize = 2;
    let n = common::count(20_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(pool(&env, kind, fifo));
    let tally = coop
        .add(Tally {
            seen: vec![Vec::new(); SENDERS],
            at: n / 2,
            finished: tx,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let mbox = tally.clone();
            std::thread::spawn(move || {
                for i in 0..n {
                    mbox.send(Numbered(s, i));
                }
            })
        })
        .collect();
    drop(tally);
    for t in senders {
        t.join().unwrap();
    }
    let seen = common::recv(&rx, "the tally's finish");
    env.stop_and_wait();
    for (s, items) in seen.iter().enumerate() {
        assert!(
            items.iter().copied().eq(0..items.len() as u32),
            "{kind:?}/{fifo:?}: sender {s}'s handled items are its first ones, in order"
        );
    }
    assert!(
        seen[0].len() as u32 > n / 2,
        "{kind:?}/{fifo:?}: deregistered at n / 2"
    );
    let handled: usize = seen.iter().map(Vec::len).sum();
    let lost = dead.of::<Numbered>();
    assert!(lost.iter().all(|why| *why == DeliveryFailure::ReceiverGone));
    assert_eq!(
        handled + lost.len(),
        SENDERS * n as usize,
        "{kind:?}/{fifo:?}: every message handled or counted as a dead letter"
    );
}

#[test]
fn senders_racing_deregistration_lose_nothing() {
    on_every_pool(senders_race_deregistration);
}

type Log = Arc<Mutex<Vec<String>>>;

/// Logs `start:<name>` and `finish:<name>`.
struct Node {
    name: String,
    log: Log,
    started: Sender<()>,
}

impl Agent for Node {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("start:{}", self.name));
        let _ = self.started.send(());
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("finish:{}", self.name));
    }
}

fn position(lines: &[String], line: &str) -> usize {
    lines
        .iter()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("`{line}` missing from {lines:?}"))
}

/// Tree, every agent on the pool:  P (P.a, P.b) ── C1 (C1) ── G (G)
///                                              └─ C2 (C2.a, C2.b)
/// Deregistering P (or stopping the environment) finishes G before C1, C1 and C2 before any
/// agent of P, and announces them in that order.
fn children_first(kind: PoolKind, fifo: Fifo, by_stop: bool) {
    let deregistered: Probe<CoopDeregistered> = Probe::new();
    let env = cohort::Environment::builder().start().unwrap();
    let binder = pool(&env, kind, fifo);
    let log = Log::default();
    let (started_tx, started_rx) = mpsc::channel();
    let node = |name: &str| Node {
        name: name.to_owned(),
        log: log.clone(),
        started: started_tx.clone(),
    };
    let register = |name: &str, agents: &[&str], parent: Option<&cohort::CoopHandle>| {
        let mut coop = env.new_coop();
        coop.set_name(name)
            .set_binder(binder.clone())
            .notify_deregistered(deregistered.mbox.clone());
        if let Some(p) = parent {
            coop.set_parent(p);
        }
        for a in agents {
            coop.add(node(a));
        }
        env.register_coop(coop).unwrap()
    };
    let p = register("P", &["P.a", "P.b"], None);
    let c1 = register("C1", &["C1"], Some(&p));
    register("G", &["G"], Some(&c1));
    register("C2", &["C2.a", "C2.b"], Some(&p));
    common::recv_n(&started_rx, 6, "every start");

    if by_stop {
        env.stop();
    } else {
        p.deregister(DeregReason::User(3));
    }
    let deregs = deregistered.recv_n(4, "four CoopDeregistered");
    let order: Vec<&str> = deregs.iter().map(|d| d.name.as_deref().unwrap()).collect();
    let at = |name: &str| order.iter().position(|n| *n == name).unwrap();
    let what = format!("{kind:?}/{fifo:?}, by_stop {by_stop}");
    assert_eq!(order.last(), Some(&"P"), "{what}: parent last: {order:?}");
    assert!(at("G") < at("C1"), "{what}: grandchild first: {order:?}");
    let expected_reason = if by_stop {
        DeregReason::Shutdown
    } else {
        DeregReason::User(3)
    };
    for d in &deregs {
        let want = if d.name.as_deref() == Some("P") {
            expected_reason
        } else {
            DeregReason::Parent
        };
        assert_eq!(d.reason, want, "{what}: reason of {:?}", d.name);
    }
    env.stop_and_wait();

    let lines = log.lock().unwrap().clone();
    let parent_first = position(&lines, "finish:P.a").min(position(&lines, "finish:P.b"));
    for child in ["C1", "G", "C2.a", "C2.b"] {
        assert!(
            position(&lines, &format!("finish:{child}")) < parent_first,
            "{what}: {child} must finish before the parent's agents: {lines:?}"
        );
    }
    assert!(
        position(&lines, "finish:G") < position(&lines, "finish:C1"),
        "{what}: {lines:?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("finish:")).count(),
        6,
        "{what}: one finish per agent: {lines:?}"
    );
    assert!(
        deregistered.nothing_more(),
        "{what}: one notification per coop"
    );
    deregistered.shutdown();
}

#[test]
fn children_finish_first_on_deregistration() {
    on_every_pool(|kind, fifo| children_first(kind, fifo, false));
}

#[test]
fn children_finish_first_on_stop() {
    on_every_pool(|kind, fifo| children_first(kind, fifo, true));
}
