//! Deregistration: `finish` runs after the messages pending when deregistration began (on
//! every dispatcher kind), a message sent after that is a dead letter, senders racing with
//! deregistration lose nothing; children go first (their `finish` hooks and their
//! `CoopDeregistered` notifications come before their parent's); notifications carry the
//! right reason.

use crate::common;

use cohort::{
    ActiveObjBuilder, Agent, Binder, Context, CoopDeregistered, CoopRegistered, DefineError,
    DeliveryFailure, DeregReason, Mbox, OneThreadBuilder,
};
use common::dispatchers::{Kind, on_every_kind};
use common::{DeadLetters, Gate, Probe, TIMEOUT, gate, watchdog};
use std::collections::HashMap;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy)]
struct Item(u32);

/// Blocks in its gate on the first `Item`, then records every item; reports from `finish`.
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

/// A plain thread queues `n` items to a blocked sink, deregisters its cooperation, sends one
/// more (a dead letter), then lets the sink go: it handles all `n`, in order, before `finish`.
fn finish_after_pending(kind: Kind) {
    let n = common::count(2_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let (g, control) = gate();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(kind.binder(&env, "dereg"));
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
        "{kind:?}: a message sent after deregistration began is a dead letter"
    );
    control.open();
    let seen = common::recv(&rx, "the sink's finish");
    assert!(
        seen == (0..n).collect::<Vec<_>>(),
        "{kind:?}: finish must come after every pending message, in order \
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
    on_every_kind(finish_after_pending);
}

/// From `start`: sends `n` items to its peer, then deregisters its own cooperation (which
/// holds the peer). On a single-thread dispatcher, and with cooperation fifo, the peer shares
/// its queue (local sends); with individual fifo the sends cross queues from a worker (on
/// `work_stealing`, through the LIFO slot).
struct LocalSender {
    peer: Mbox,
    n: u32,
    reason: DeregReason,
}

impl Agent for LocalSender {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for i in 0..self.n {
            self.peer.send(Item(i));
        }
        ctx.deregister_coop(self.reason);
    }
}

#[test]
fn finish_runs_after_messages_sent_from_the_dispatcher_and_reports_user_reason() {
    on_every_kind(|kind| {
        let n = common::count(5_000) as u32;
        let registered: Probe<CoopRegistered> = Probe::new();
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_name("local")
            .set_binder(kind.binder(&env, "dereg"))
            .notify_registered(registered.mbox.clone())
            .notify_deregistered(deregistered.mbox.clone());
        let sink = coop
            .add(Sink {
                gate: None,
                seen: Vec::new(),
                finished: tx,
            })
            .mbox();
        coop.add(LocalSender {
            peer: sink,
            n,
            reason: DeregReason::User(7),
        });
        let handle = env.register_coop(coop).unwrap();

        let seen = common::recv(&rx, "the sink's finish");
        assert!(
            seen == (0..n).collect::<Vec<_>>(),
            "{kind:?}: {} of {n} items seen before finish, first out of place: {:?}",
            seen.len(),
            seen.iter().enumerate().find(|&(i, &v)| i as u32 != v)
        );
        let r = registered.recv("CoopRegistered");
        assert_eq!(r.id, handle.id());
        assert_eq!(r.name.as_deref(), Some("local"));
        let d = deregistered.recv("CoopDeregistered");
        assert_eq!(d.id, handle.id());
        assert_eq!(d.name.as_deref(), Some("local"));
        assert_eq!(d.reason, DeregReason::User(7));
        env.stop_and_wait();
        assert_eq!(dead.all(), vec![], "{kind:?}");
        assert!(registered.nothing_more() && deregistered.nothing_more());
        registered.shutdown();
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
/// Remote sends to a queue borrow the agent until its finish step: this is the race that step
/// closes.
fn senders_race_deregistration(kind: Kind) {
    const SENDERS: usize = 2;
    let n = common::count(20_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(kind.binder(&env, "dereg"));
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
            "{kind:?}: sender {s}'s handled items are its first ones, in order"
        );
    }
    assert!(
        seen[0].len() as u32 > n / 2,
        "{kind:?}: deregistered at n / 2"
    );
    let handled: usize = seen.iter().map(Vec::len).sum();
    let lost = dead.of::<Numbered>();
    assert!(lost.iter().all(|why| *why == DeliveryFailure::ReceiverGone));
    assert_eq!(
        handled + lost.len(),
        SENDERS * n as usize,
        "{kind:?}: every message handled or counted as a dead letter"
    );
}

#[test]
fn senders_racing_deregistration_lose_nothing() {
    on_every_kind(senders_race_deregistration);
}

/// The order in which hooks ran, shared by every agent of a test.
type Log = Arc<Mutex<Vec<String>>>;

fn log(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

/// A child coop to create from a [`Node`]'s `start`.
#[derive(Clone)]
struct Spec {
    name: &'static str,
    binder: Option<Binder>,
    children: Vec<Spec>,
}

/// What every coop of a tree reports to.
#[derive(Clone)]
struct Observers {
    log: Log,
    registered: Mbox,
    deregistered: Mbox,
}

/// An agent that creates child coops (through its context) in `start` and logs its hooks.
struct Node {
    name: String,
    children: Vec<Spec>,
    obs: Observers,
}

impl Node {
    fn new(name: &str, children: Vec<Spec>, obs: &Observers) -> Self {
        Self {
            name: name.to_owned(),
            children,
            obs: obs.clone(),
        }
    }
}

impl Agent for Node {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        log(&self.obs.log, format!("start:{}", self.name));
        for spec in std::mem::take(&mut self.children) {
            let mut coop = ctx.new_child_coop();
            coop.set_name(spec.name)
                .notify_registered(self.obs.registered.clone())
                .notify_deregistered(self.obs.deregistered.clone());
            let node = Node::new(spec.name, spec.children, &self.obs);
            match spec.binder {
                Some(b) => coop.add_with_binder(node, b),
                None => coop.add(node),
            };
            ctx.register_coop(coop).expect("register a child coop");
        }
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        log(&self.obs.log, format!("finish:{}", self.name));
    }
}

fn position(lines: &[String], line: &str) -> usize {
    lines
        .iter()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("`{line}` missing from {lines:?}"))
}

/// Tree:  P (two agents: one_thread "parent" + active_obj)
///        ├── C1 (active_obj)            registered by P's first agent, through its context
///        ├── C2 (default one_thread)    idem
///        └── C3 (default one_thread)    registered from the test with `Coop::set_parent`
///            └── G (active_obj)         registered by C3's agent, through its context
#[test]
fn children_go_first_and_notifications_carry_reasons() {
    watchdog(TIMEOUT, || {
        let registered: Probe<CoopRegistered> = Probe::new();
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let parent_disp = OneThreadBuilder::new().name("parent").build(&env).unwrap();
        let ao = ActiveObjBuilder::new().build(&env).unwrap();
        let obs = Observers {
            log: Log::default(),
            registered: registered.mbox.clone(),
            deregistered: deregistered.mbox.clone(),
        };

        let mut coop = env.new_coop();
        coop.set_name("P")
            .set_binder(parent_disp.binder())
            .notify_registered(obs.registered.clone())
            .notify_deregistered(obs.deregistered.clone());
        let spec = |name, binder| Spec {
            name,
            binder,
            children: vec![],
        };
        coop.add(Node::new(
            "P.a",
            vec![spec("C1", Some(ao.binder())), spec("C2", None)],
            &obs,
        ));
        coop.add_with_binder(Node::new("P.b", vec![], &obs), ao.binder());
        let p = env.register_coop(coop).unwrap();

        let mut coop = env.new_coop();
        coop.set_name("C3")
            .set_parent(&p)
            .set_binder(env.default_binder())
            .notify_registered(obs.registered.clone())
            .notify_deregistered(obs.deregistered.clone());
        coop.add(Node::new("C3", vec![spec("G", Some(ao.binder()))], &obs));
        let c3 = env.register_coop(coop).unwrap();

        // Every coop announces its registration, with its id and name.
        let regs: HashMap<String, cohort::CoopId> = registered
            .recv_n(5, "five CoopRegistered")
            .into_iter()
            .map(|r| (r.name.expect("every coop has a name"), r.id))
            .collect();
        assert_eq!(regs.len(), 5, "{regs:?}");
        assert_eq!(regs["P"], p.id());
        assert_eq!(regs["C3"], c3.id());
        assert_eq!(p.child_count(), 3);
        assert_eq!(c3.child_count(), 1);
        assert_eq!(env.coop_count(), 5);

        p.deregister(DeregReason::User(42));
        let deregs = deregistered.recv_n(5, "five CoopDeregistered");
        let order: Vec<&str> = deregs.iter().map(|d| d.name.as_deref().unwrap()).collect();
        let reason = |name: &str| {
            deregs
                .iter()
                .find(|d| d.name.as_deref() == Some(name))
                .unwrap()
                .reason
        };
        let at = |name: &str| order.iter().position(|n| *n == name).unwrap();
        assert_eq!(
            order.last(),
            Some(&"P"),
            "the parent is announced last: {order:?}"
        );
        assert!(at("G") < at("C3"), "grandchild before child: {order:?}");
        assert_eq!(reason("P"), DeregReason::User(42));
        for child in ["C1", "C2", "C3", "G"] {
            assert_eq!(reason(child), DeregReason::Parent, "reason of {child}");
        }
        for d in &deregs {
            assert_eq!(regs[d.name.as_deref().unwrap()], d.id, "ids match");
        }

        // `finish` hooks: every child's before any agent of the parent.
        let lines = obs.log.lock().unwrap().clone();
        let first_parent_finish =
            position(&lines, "finish:P.a").min(position(&lines, "finish:P.b"));
        for child in ["C1", "C2", "C3", "G"] {
            assert!(
                position(&lines, &format!("finish:{child}")) < first_parent_finish,
                "{child} must finish before the parent's agents: {lines:?}"
            );
        }
        assert!(
            position(&lines, "finish:G") < position(&lines, "finish:C3"),
            "{lines:?}"
        );
        assert_eq!(lines.iter().filter(|l| l.starts_with("finish:")).count(), 6);
        assert!(p.is_gone() && c3.is_gone());
        env.stop_and_wait();
    });
}

#[test]
fn stopping_the_environment_deregisters_with_shutdown_and_children_with_parent() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let registered: Probe<CoopRegistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let obs = Observers {
            log: Log::default(),
            registered: registered.mbox.clone(),
            deregistered: deregistered.mbox.clone(),
        };
        for (name, children) in [("A", vec![]), ("B", vec!["B.child"])] {
            let mut coop = env.new_coop();
            coop.set_name(name)
                .notify_registered(obs.registered.clone())
                .notify_deregistered(obs.deregistered.clone());
            let specs = children
                .into_iter()
                .map(|name| Spec {
                    name,
                    binder: None,
                    children: vec![],
                })
                .collect();
            coop.add(Node::new(name, specs, &obs));
            env.register_coop(coop).unwrap();
        }
        registered.recv_n(3, "three CoopRegistered");

        env.stop();
        env.stop(); // idempotent
        let deregs = deregistered.recv_n(3, "three CoopDeregistered");
        let reasons: HashMap<String, DeregReason> = deregs
            .into_iter()
            .map(|d| (d.name.unwrap(), d.reason))
            .collect();
        assert_eq!(reasons["A"], DeregReason::Shutdown);
        assert_eq!(reasons["B"], DeregReason::Shutdown);
        assert_eq!(reasons["B.child"], DeregReason::Parent);
        env.wait();
        assert_eq!(env.coop_count(), 0);
        let lines = obs.log.lock().unwrap().clone();
        assert!(position(&lines, "finish:B.child") < position(&lines, "finish:B"));
    });
}

/// Deregisters its own coop from `start`.
struct Quitter;

impl Agent for Quitter {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.deregister_coop(DeregReason::Normal);
        // Idempotent: the first reason wins.
        ctx.deregister_coop(DeregReason::User(99));
    }
}

#[test]
fn normal_reason_and_first_reason_wins() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();

        let mut coop = env.new_coop();
        coop.notify_deregistered(deregistered.mbox.clone());
        coop.add(Quitter);
        let quitter = env.register_coop(coop).unwrap();
        let d = deregistered.recv("CoopDeregistered of the quitter");
        assert_eq!(d.id, quitter.id());
        assert_eq!(d.name, None);
        assert_eq!(d.reason, DeregReason::Normal);

        let mut coop = env.new_coop();
        coop.notify_deregistered(deregistered.mbox.clone());
        coop.add(common::Idle);
        let idle = env.register_coop(coop).unwrap();
        idle.deregister(DeregReason::User(1));
        idle.deregister(DeregReason::User(2));
        let d = deregistered.recv("CoopDeregistered of the idle coop");
        assert_eq!(d.id, idle.id());
        assert_eq!(d.reason, DeregReason::User(1));
        env.stop_and_wait();
        assert!(deregistered.nothing_more(), "one notification per coop");
    });
}

/// On `CoopDeregistered`, reports what the environment says at that moment, then releases
/// the dead-letter hook that holds the deregistering thread.
struct Watcher {
    env: cohort::Environment,
    report: Sender<usize>,
    release: Sender<()>,
}

impl Agent for Watcher {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, _: &CoopDeregistered, _: &mut Context<'_, Self>| {
                let _ = me.report.send(me.env.coop_count());
                let _ = me.release.send(());
            },
        )?;
        Ok(())
    }
}

/// `CoopDeregistered` is sent once a cooperation is gone and has left the environment's count
/// (runtime-semantics.md, deregistration step 6): whoever receives it must no longer see the
/// coop in `Environment::coop_count`. (Its parent drops it from its child list only after the
/// notification, by design, so `child_count` is not checked.)
///
/// Made deterministic by a second notification mailbox that is a dead letter: the hook runs on
/// the deregistering thread right after the first notification went out, and holds that
/// thread until the watcher has looked.
#[test]
fn coop_is_uncounted_when_its_notification_arrives() {
    watchdog(TIMEOUT, || {
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let env = cohort::Environment::builder()
            .dead_letter_hook(move |d| {
                if d.message_type == std::any::type_name::<CoopDeregistered>() {
                    let _ = release_rx
                        .lock()
                        .unwrap()
                        .recv_timeout(TIMEOUT * common::scale());
                }
            })
            .start()
            .unwrap();
        let ao = ActiveObjBuilder::new().build(&env).unwrap();

        let mut coop = env.new_coop();
        coop.set_name("parent");
        coop.add(common::Idle);
        let parent = env.register_coop(coop).unwrap();

        let (report_tx, report_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let watcher = coop
            .add_with_binder(
                Watcher {
                    env: env.environment(),
                    report: report_tx,
                    release: release_tx,
                },
                ao.binder(),
            )
            .mbox();
        env.register_coop(coop).unwrap();

        // A mailbox whose agent is never registered: whatever is sent to it is a dead letter.
        let mut never = env.new_coop();
        let dead_end = never.add(common::Idle).mbox();
        drop(never);

        let mut coop = env.new_coop();
        coop.set_name("child")
            .set_parent(&parent)
            .notify_deregistered(watcher)
            .notify_deregistered(dead_end);
        coop.add(common::Idle);
        let child = env.register_coop(coop).unwrap();
        assert_eq!(env.coop_count(), 3);
        assert_eq!(parent.child_count(), 1);

        child.deregister(DeregReason::Normal);
        let coops = common::recv(&report_rx, "the watcher's report");
        env.stop_and_wait();
        assert_eq!(
            coops, 2,
            "coop_count seen by the receiver of CoopDeregistered: the coop was announced gone \
             while still counted"
        );
    });
}
