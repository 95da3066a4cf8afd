//! A cooperation whose registration fails leaves nothing running: no agent of it starts or
//! finishes, the cooperation count does not move, and its agents' mailboxes reject messages
//! as dead letters.

use super::{Echo, Ping};
use crate::common;

use cohort::{
    ActiveObjBuilder, Agent, Context, Coop, DefineError, DeliveryFailure, DeregReason, Environment,
    Mbox, RegisterError,
};
use common::{Counter, DeadLetters, TIMEOUT, watchdog};
use std::borrow::Cow;
use std::sync::mpsc::{self, Sender};

/// Counts its hooks and the pings it handles.
#[derive(Clone, Default)]
struct Counts {
    started: Counter,
    finished: Counter,
    pinged: Counter,
}

struct Tracked {
    counts: Counts,
}

impl Agent for Tracked {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| me.counts.pinged.inc())?;
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.counts.started.inc();
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.counts.finished.inc();
    }
}

/// Returns an error from `define` (after subscribing, so that it has a handler).
struct FailsInDefine {
    counts: Counts,
}

impl Agent for FailsInDefine {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| me.counts.pinged.inc())?;
        Err("the configuration file is missing".into())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.counts.started.inc();
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.counts.finished.inc();
    }
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("failing-agent")
    }
}

/// Panics in `define` (keeps the default name: its type name).
struct PanicsInDefine {
    counts: Counts,
}

impl Agent for PanicsInDefine {
    fn define(&mut self, _: &mut Context<'_, Self>) -> Result<(), DefineError> {
        panic!("define exploded on purpose");
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.counts.started.inc();
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.counts.finished.inc();
    }
}

#[derive(Clone, Copy, Debug)]
enum Failure {
    Error,
    Panic,
}

/// Adds the agent that fails in `define`, the way `failure` says; returns its mailbox and
/// index.
fn add_failing(coop: &mut Coop, failure: Failure, counts: &Counts) -> (Mbox, usize) {
    match failure {
        Failure::Error => {
            let h = coop.add(FailsInDefine {
                counts: counts.clone(),
            });
            (h.mbox(), h.index())
        }
        Failure::Panic => {
            let h = coop.add(PanicsInDefine {
                counts: counts.clone(),
            });
            (h.mbox(), h.index())
        }
    }
}

/// Registers a coop of four agents on two dispatchers whose agent #2 fails in `define`;
/// checks the error, that nothing ran, and that the environment is intact afterwards.
fn failing_coop(failure: Failure) {
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let active = ActiveObjBuilder::new().name("ao").build(&env).unwrap();

    // A healthy cooperation, registered before: the count must come back to it.
    let bystander = Counts::default();
    let mut coop = env.new_coop();
    let bystander_mbox = coop
        .add(Tracked {
            counts: bystander.clone(),
        })
        .mbox();
    env.register_coop(coop).unwrap();
    assert_eq!(env.coop_count(), 1);

    // Agents #0 (default dispatcher) and #1 (active_obj) define fine, #2 fails, #3 follows.
    let counts = Counts::default();
    let mut coop = env.new_coop();
    coop.set_name("doomed");
    let tracked = || Tracked {
        counts: counts.clone(),
    };
    let mut mboxes: Vec<Mbox> = vec![
        coop.add(tracked()).mbox(),
        coop.add_with_binder(tracked(), active.binder()).mbox(),
    ];
    let (failing_mbox, failing_index) = add_failing(&mut coop, failure, &counts);
    assert_eq!(failing_index, 2);
    mboxes.push(failing_mbox);
    mboxes.push(coop.add_with_binder(tracked(), active.binder()).mbox());

    let err = env
        .register_coop(coop)
        .expect_err("a coop with a failing define must not register");
    match (&err, failure) {
        (
            RegisterError::Define {
                agent,
                index,
                reason,
            },
            Failure::Error,
        ) => {
            assert_eq!(agent, "failing-agent");
            assert_eq!(*index, 2);
            assert!(
                reason.contains("the configuration file is missing"),
                "reason: {reason}"
            );
        }
        (
            RegisterError::Define {
                agent,
                index,
                reason,
            },
            Failure::Panic,
        ) => {
            assert_eq!(agent, std::any::type_name::<PanicsInDefine>());
            assert_eq!(*index, 2);
            assert!(reason.contains("panicked"), "reason: {reason}");
            assert!(
                reason.contains("define exploded on purpose"),
                "reason: {reason}"
            );
        }
        (other, _) => panic!("expected RegisterError::Define, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(
        shown.contains("#2"),
        "the error names the agent's index: {shown}"
    );
    assert_eq!(env.coop_count(), 1, "the failed coop is not counted");

    // Every agent of the failed coop, including those whose define succeeded, rejects
    // messages: they are counted as dead letters, never handled.
    let before = env.dead_letters();
    for m in &mboxes {
        m.send(Ping);
    }
    assert_eq!(env.dead_letters(), before + mboxes.len() as u64);
    assert_eq!(
        dead.of::<Ping>(),
        vec![DeliveryFailure::NotRegistered; mboxes.len()]
    );

    // The environment still works, with the same dispatchers (nothing stayed bound or
    // half-started): a new coop on both runs and handles messages.
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.add(Echo::signal(tx.clone()));
    let echo_ao = coop
        .add_with_binder(Echo::signal(tx), active.binder())
        .mbox();
    env.register_coop(coop).unwrap();
    echo_ao.send(Ping);
    common::recv(&rx, "a ping through the active_obj dispatcher");
    bystander_mbox.send(Ping);

    // Stop and join: only now is it certain that no start or finish can still run late.
    let env_handle: Environment = env.environment();
    env.stop_and_wait();
    assert_eq!(
        counts.started.get(),
        0,
        "no agent of the failed coop started"
    );
    assert_eq!(
        counts.finished.get(),
        0,
        "no agent of the failed coop finished"
    );
    assert_eq!(
        counts.pinged.get(),
        0,
        "no agent of the failed coop handled anything"
    );
    assert_eq!(bystander.started.get(), 1);
    assert_eq!(bystander.finished.get(), 1);
    assert_eq!(bystander.pinged.get(), 1);
    assert_eq!(env_handle.coop_count(), 0);
}

#[test]
fn define_error_cancels_the_whole_coop() {
    watchdog(TIMEOUT, || failing_coop(Failure::Error));
}

#[test]
fn define_panic_cancels_the_whole_coop() {
    watchdog(TIMEOUT, || failing_coop(Failure::Panic));
}

/// A parent that registers a failing child from its `start`.
struct Parent {
    counts: Counts,
    result: Sender<Result<(), RegisterError>>,
}

impl Agent for Parent {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let mut child = ctx.new_child_coop();
        child.add(Tracked {
            counts: self.counts.clone(),
        });
        child.add(FailsInDefine {
            counts: self.counts.clone(),
        });
        let r = ctx.register_coop(child).map(|_| ());
        let _ = self.result.send(r);
        // The parent itself is unaffected and may deregister normally.
        let _ = self.result.send(if ctx.coop().child_count() == 0 {
            Ok(())
        } else {
            Err(RegisterError::EmptyCoop)
        });
        ctx.deregister_coop(DeregReason::Normal);
    }
}

#[test]
fn failing_child_coop_registered_from_a_handler() {
    watchdog(TIMEOUT, || {
        let counts = Counts::default();
        let (tx, rx) = mpsc::channel();
        cohort::launch(|env| {
            let mut coop = env.new_coop();
            coop.add(Parent {
                counts: counts.clone(),
                result: tx,
            });
            env.register_coop(coop)?;
            Ok(())
        })
        .unwrap();
        match common::recv(&rx, "the child's registration result") {
            Err(RegisterError::Define { agent, index, .. }) => {
                assert_eq!(agent, "failing-agent");
                assert_eq!(index, 1);
            }
            other => panic!("expected RegisterError::Define, got {other:?}"),
        }
        assert!(
            common::recv(&rx, "the parent's child count").is_ok(),
            "the failed child must not be linked to its parent"
        );
        assert_eq!(counts.started.get(), 0);
        assert_eq!(counts.finished.get(), 0);
    });
}
