//! Child cooperations are deregistered with their parent (reason `Parent`), however deep, and
//! however they were attached (through a handler's context or `Coop::set_parent`).

mod common;

use cohort::{
    ActiveObjBuilder, Agent, Context, CoopDeregistered, CoopHandle, DefineError, DeregReason, Mbox,
    RegisterError,
};
use common::{Counter, Probe, TIMEOUT, watchdog};
use std::collections::HashMap;
use std::sync::mpsc::{self, Sender};

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

#[derive(Debug, Clone, Copy)]
struct Ping;

/// Replies to pings.
struct Echo {
    tx: Sender<()>,
}

impl Agent for Echo {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(());
        })?;
        Ok(())
    }
}

#[test]
fn a_child_deregistered_alone_leaves_its_parent_running() {
    watchdog(TIMEOUT, || {
        let deregistered: Probe<CoopDeregistered> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let parent_mbox: Mbox = coop.add(Echo { tx }).mbox();
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
