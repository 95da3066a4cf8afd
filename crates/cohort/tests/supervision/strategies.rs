//! One-for-one, one-for-all and rest-for-one: which children restart, in which order.

use super::kit::{Crash, Log, events, publish, register, worker};
use cohort::supervision::{Strategy, SupervisionEvent, Supervisor};
use cohort::testing::TestEnv;

fn three(t: &TestEnv, strategy: Strategy, log: &Log) -> cohort::testing::Probe<SupervisionEvent> {
    let env = t.environment();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .strategy(strategy)
        .events(probe.mbox())
        .child(worker(env, "a", log))
        .child(worker(env, "b", log))
        .child(worker(env, "c", log))
        .build()
        .unwrap();
    register(t, sup);
    assert_eq!(log.take(), ["a#1 start", "b#1 start", "c#1 start"]);
    assert_eq!(
        events(&probe),
        ["started a #1", "started b #1", "started c #1"]
    );
    probe
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = three(&t, Strategy::OneForOne, &log);
    publish(&t, "b", Crash);
    assert_eq!(log.take(), ["b#1 finish", "b#2 start"]);
    let ev = events(&probe);
    assert_eq!(ev.len(), 3, "{ev:?}");
    assert!(
        ev[0].starts_with("failed b: Panic: agent `")
            && ev[0].contains("kit::Worker")
            && ev[0].contains("kit::Crash")
            && ev[0].ends_with("asked to crash"),
        "{ev:?}"
    );
    assert_eq!(ev[1..], ["restarting b #1 in 0ns", "started b #2"]);
    let s = t.environment().stats().supervision;
    assert_eq!((s.child_starts, s.child_failures, s.restarts), (4, 1, 1));
}

#[test]
fn the_failure_event_names_the_agent_message_type_and_panic() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = three(&t, Strategy::OneForOne, &log);
    publish(&t, "a", Crash);
    let failed = std::iter::from_fn(|| probe.try_take())
        .find_map(|e| match e {
            SupervisionEvent::ChildFailed { failure, .. } => Some(failure),
            _ => None,
        })
        .expect("a failure event");
    let cohort::supervision::ChildFailure::Ended { reason, panic } = failed else {
        panic!("not an end: {failed:?}")
    };
    assert_eq!(reason, cohort::DeregReason::Panic);
    let p = panic.expect("the panic notice");
    assert!(p.agent_type.ends_with("kit::Worker"), "{p:?}");
    assert!(p.during.ends_with("kit::Crash"), "{p:?}");
    assert_eq!(p.message, "asked to crash");
}

#[test]
fn one_for_all_restarts_every_child_in_start_order() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = three(&t, Strategy::OneForAll, &log);
    publish(&t, "b", Crash);
    let l = log.take();
    // The survivors stop (in any order), then all three start again in start order.
    assert_eq!(l.len(), 6, "{l:?}");
    let mut stopped = l[..3].to_vec();
    stopped.sort();
    assert_eq!(stopped, ["a#1 finish", "b#1 finish", "c#1 finish"]);
    assert_eq!(l[3..], ["a#2 start", "b#2 start", "c#2 start"]);
    let ev = events(&probe);
    assert_eq!(
        ev[1..],
        [
            "restarting a #1 in 0ns",
            "restarting b #1 in 0ns",
            "restarting c #1 in 0ns",
            "started a #2",
            "started b #2",
            "started c #2"
        ]
    );
}

#[test]
fn rest_for_one_restarts_the_failed_child_and_those_after_it() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = three(&t, Strategy::RestForOne, &log);
    publish(&t, "b", Crash);
    let l = log.take();
    assert_eq!(l.len(), 4, "{l:?}");
    let mut stopped = l[..2].to_vec();
    stopped.sort();
    assert_eq!(stopped, ["b#1 finish", "c#1 finish"]);
    assert_eq!(l[2..], ["b#2 start", "c#2 start"]);
    assert_eq!(
        events(&probe)[1..],
        [
            "restarting b #1 in 0ns",
            "restarting c #1 in 0ns",
            "started b #2",
            "started c #2"
        ]
    );
    // `a` kept its first incarnation.
    publish(&t, "a", super::kit::Job(1));
    assert_eq!(log.take(), ["a#1 job 1"]);
}
