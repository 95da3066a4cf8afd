//! A restarted incarnation that fails in `define` or in `start`: counted, reported, retried.

use super::kit::{Crash, Log, Worker, events, publish, register};
use cohort::supervision::{ChildSpec, SupervisionEvent, Supervisor};
use cohort::testing::TestEnv;
use cohort::{Agent, Context, DefineError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

struct PanicsInDefine;
impl Agent for PanicsInDefine {
    fn define(&mut self, _: &mut Context<'_, Self>) -> Result<(), DefineError> {
        panic!("define exploded")
    }
}

struct PanicsInStart;
impl Agent for PanicsInStart {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        panic!("start exploded")
    }
}

/// A child whose second incarnation is `bad`, the others regular workers.
fn second_is_bad(t: &TestEnv, log: &Log, bad: fn(&mut cohort::Coop)) -> ChildSpec {
    let inbox = t.environment().named_mbox("w");
    let log = log.clone();
    let n = Arc::new(AtomicU64::new(0));
    ChildSpec::new("w", move |coop| {
        let incarnation = n.fetch_add(1, Ordering::Relaxed) + 1;
        if incarnation == 2 {
            return bad(coop);
        }
        coop.add(Worker {
            name: "w".into(),
            incarnation,
            inbox: inbox.clone(),
            log: log.clone(),
        });
    })
}

#[test]
fn a_panic_in_define_of_a_restarted_agent_is_a_start_failure_and_retried() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .events(probe.mbox())
        .child(second_is_bad(&t, &log, |c| {
            c.add(PanicsInDefine);
        }))
        .build()
        .unwrap();
    register(&t, sup);
    events(&probe);
    log.take();
    publish(&t, "w", Crash);
    let ev = events(&probe);
    assert!(ev[0].starts_with("failed w: Panic"), "{ev:?}");
    assert_eq!(ev[1], "restarting w #1 in 0ns");
    assert!(
        ev[2].starts_with("failed w: start failed: registering the child's cooperation failed")
            && ev[2].contains("define exploded"),
        "{ev:?}"
    );
    assert_eq!(ev[3..], ["restarting w #2 in 0ns", "started w #3"]);
    assert_eq!(log.take(), ["w#1 finish", "w#3 start"]);
    let s = t.environment().stats().supervision;
    assert_eq!(
        (
            s.child_starts,
            s.start_failures,
            s.child_failures,
            s.restarts
        ),
        (2, 1, 2, 2)
    );
}

#[test]
fn a_panic_in_start_of_a_restarted_agent_is_a_failure_and_retried() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .events(probe.mbox())
        .child(second_is_bad(&t, &log, |c| {
            c.add(PanicsInStart);
        }))
        .build()
        .unwrap();
    register(&t, sup);
    events(&probe);
    log.take();
    publish(&t, "w", Crash);
    let ev = events(&probe);
    assert_eq!(ev[1..3], ["restarting w #1 in 0ns", "started w #2"]);
    assert!(
        ev[3].starts_with("failed w: Panic") && ev[3].contains("in `start`: start exploded"),
        "{ev:?}"
    );
    assert_eq!(ev[4..], ["restarting w #2 in 0ns", "started w #3"]);
    assert_eq!(log.take(), ["w#1 finish", "w#3 start"]);
}
