//! Child cooperations are deregistered with their parent (reason `Parent`), however deep, and
//! however they were attached (through a handler's context or `Coop::set_parent`); children
//! finish and are announced before their parent on every dispatcher kind.

use super::{Echo, Ping};
use crate::common;

use cohort::{
    ActiveObjBuilder, Agent, Context, CoopDeregistered, CoopHandle, DeregReason, Mbox,
    RegisterError,
};
use common::dispatchers::{Kind, on_every_kind};
use common::{Counter, Probe, TIMEOUT, watchdog};
use std::collections::HashMap;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

/// Counts its `start` and `finish`.
#[derive(Clone)]
struct Member {
    started: Counter,
    finished: Counter,
}

impl Agent for Member {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.started.inc();
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.finished.inc();
    }
}

#[test]
fn many_children_are_deregistered_with_their_parent() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let ao = ActiveObjBuilder::new().build(&env).unwrap();
        let member = Member {
            started: Counter::new(),
            finished: Counter::new(),
        };

        let mut coop = env.new_coop();
        coop.set_name("parent")
            .notify_deregistered(deregistered.mbox.clone());
        coop.add(member.clone());
        let parent = env.register_coop(coop).unwrap();

        // Ten children of two agents each (one on active_obj), each with a grandchild.
        let mut children = Vec::new();
        for i in 0..10 {
            let mut coop = env.new_coop();
            coop.set_name(format!("child-{i}"))
                .set_parent(&parent)
                .notify_deregistered(deregistered.mbox.clone());
            coop.add(member.clone());
            coop.add_with_binder(member.clone(), ao.binder());
            let child = env.register_coop(coop).unwrap();
            let mut coop = env.new_coop();
            coop.set_name(format!("grandchild-{i}"))
                .set_parent(&child)
                .notify_deregistered(deregistered.mbox.clone());
            coop.add(member.clone());
            children.push(child);
            children.push(env.register_coop(coop).unwrap());
        }
        assert_eq!(parent.child_count(), 10);
        assert_eq!(env.coop_count(), 21);

        parent.deregister(DeregReason::Normal);
        let deregs = deregistered.recv_n(21, "21 CoopDeregistered");
        let reasons: HashMap<String, DeregReason> = deregs
            .iter()
            .map(|d| (d.name.clone().unwrap(), d.reason))
            .collect();
        assert_eq!(reasons.len(), 21);
        assert_eq!(reasons["parent"], DeregReason::Normal);
        for i in 0..10 {
            assert_eq!(reasons[&format!("child-{i}")], DeregReason::Parent);
            assert_eq!(reasons[&format!("grandchild-{i}")], DeregReason::Parent);
        }
        assert_eq!(deregs.last().unwrap().name.as_deref(), Some("parent"));
        // `is_gone` holds once the notification is out (`coop_count` may still lag behind:
        // see `deregistration::coop_is_uncounted_when_its_notification_arrives`).
        assert!(children.iter().all(CoopHandle::is_gone));
        assert!(parent.is_gone());
        // 1 + 10 * 2 + 10 agents, each started and finished once.
        assert_eq!(member.started.get(), 31);
        assert_eq!(member.finished.get(), 31);
        env.stop_and_wait();
    });
}

/// Registers a chain of `depth` nested coops (each level registers the next through its
/// context) and reports each level's handle.
struct Level {
    depth: u32,
    handles: Sender<(u32, CoopHandle)>,
    finished: Sender<u32>,
}

impl Agent for Level {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = self.handles.send((self.depth, ctx.coop()));
        if self.depth > 0 {
            let mut coop = ctx.new_child_coop();
            coop.add(Level {
                depth: self.depth - 1,
                handles: self.handles.clone(),
                finished: self.finished.clone(),
            });
            ctx.register_coop(coop).unwrap();
        }
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(self.depth);
    }
}

#[test]
fn deep_nesting_finishes_deepest_first() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let (handles_tx, handles_rx) = mpsc::channel();
        let (finished_tx, finished_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.notify_deregistered(deregistered.mbox.clone());
        coop.add(Level {
            depth: 7,
            handles: handles_tx,
            finished: finished_tx,
        });
        let top = env.register_coop(coop).unwrap();
        let handles = common::recv_n(&handles_rx, 8, "eight levels to start");
        assert_eq!(env.coop_count(), 8);

        top.deregister(DeregReason::User(3));
        let order = common::recv_n(&finished_rx, 8, "eight levels to finish");
        assert_eq!(order, (0..8).collect::<Vec<u32>>(), "deepest level first");
        let d = deregistered.recv("the top level's CoopDeregistered");
        assert_eq!(d.id, top.id());
        assert_eq!(d.reason, DeregReason::User(3));
        for (depth, h) in &handles {
            assert!(h.is_gone(), "level {depth} is gone");
        }
        env.stop_and_wait();
    });
}

#[test]
fn a_child_deregistered_alone_leaves_its_parent_running() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let parent_mbox: Mbox = coop.add(Echo::signal(tx)).mbox();
        let parent = env.register_coop(coop).unwrap();

        let mut coop = env.new_coop();
        coop.set_parent(&parent)
            .notify_deregistered(deregistered.mbox.clone());
        coop.add(common::Idle);
        let child = env.register_coop(coop).unwrap();
        assert_eq!(parent.child_count(), 1);

        child.deregister(DeregReason::User(5));
        let d = deregistered.recv("the child's CoopDeregistered");
        assert_eq!(d.id, child.id());
        assert_eq!(d.reason, DeregReason::User(5));
        assert!(child.is_gone());
        assert!(!parent.is_gone());
        // Parent and child share the default dispatcher's thread: once the parent answers,
        // the child's deregistration has completed there.
        parent_mbox.send(Ping);
        common::recv(&rx, "the parent to still handle messages");
        assert_eq!(parent.child_count(), 0);
        assert_eq!(env.coop_count(), 1);
        env.stop_and_wait();
    });
}

#[test]
fn a_gone_parent_refuses_children() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.notify_deregistered(deregistered.mbox.clone());
        coop.add(common::Idle);
        let parent = env.register_coop(coop).unwrap();
        parent.deregister(DeregReason::Normal);
        deregistered.recv("the parent's CoopDeregistered");

        let started = Counter::new();
        let mut coop = env.new_coop();
        coop.set_parent(&parent);
        coop.add(Member {
            started: started.clone(),
            finished: Counter::new(),
        });
        match env.register_coop(coop) {
            Err(RegisterError::ParentDeregistering) => {}
            other => panic!("expected ParentDeregistering, got {other:?}"),
        }
        env.stop_and_wait();
        assert_eq!(started.get(), 0);
    });
}

type Log = Arc<Mutex<Vec<String>>>;

/// Logs `start:<name>` and `finish:<name>`.
struct Logged {
    name: String,
    log: Log,
    started: Sender<()>,
}

impl Agent for Logged {
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

/// Tree, every agent on one dispatcher:  P (P.a, P.b) ── C1 (C1) ── G (G)
///                                              └─ C2 (C2.a, C2.b)
/// Deregistering P (or stopping the environment) finishes G before C1, C1 and C2 before any
/// agent of P, and announces them in that order.
fn children_first(kind: Kind, by_stop: bool) {
    let deregistered: Probe<CoopDeregistered> = Probe::new();
    let env = cohort::Environment::builder().start().unwrap();
    let binder = kind.binder(&env, "tree");
    let log = Log::default();
    let (started_tx, started_rx) = mpsc::channel();
    let node = |name: &str| Logged {
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
    let what = format!("{kind:?}, by_stop {by_stop}");
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
    on_every_kind(|kind| children_first(kind, false));
}

#[test]
fn children_finish_first_on_stop() {
    on_every_kind(|kind| children_first(kind, true));
}
