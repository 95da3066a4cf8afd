//! Permanent, transient and temporary children, and user-chosen failure reasons.

use super::kit::{Crash, Log, Quit, events, publish, register, worker};
use cohort::DeregReason;
use cohort::supervision::{Restart, SupervisionEvent, Supervisor};
use cohort::testing::TestEnv;

fn one(t: &TestEnv, restart: Restart, log: &Log) -> cohort::testing::Probe<SupervisionEvent> {
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .restart_on(DeregReason::User(7))
        .events(probe.mbox())
        .child(worker(t.environment(), "w", log).restart(restart))
        .build()
        .unwrap();
    register(t, sup);
    assert_eq!(events(&probe), ["started w #1"]);
    log.take();
    probe
}

#[test]
fn a_permanent_child_comes_back_even_after_a_normal_end() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = one(&t, Restart::Permanent, &log);
    publish(&t, "w", Quit(DeregReason::Normal));
    assert_eq!(log.take(), ["w#1 finish", "w#2 start"]);
    assert_eq!(
        events(&probe),
        ["exited w Normal", "restarting w #1 in 0ns", "started w #2"]
    );
    assert_eq!(t.environment().stats().supervision.child_failures, 0);
}

#[test]
fn a_transient_child_ends_for_good_after_a_normal_end() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = one(&t, Restart::Transient, &log);
    publish(&t, "w", Quit(DeregReason::Normal));
    assert_eq!(log.take(), ["w#1 finish"]);
    assert_eq!(events(&probe), ["exited w Normal"]);
}

#[test]
fn a_transient_child_comes_back_after_a_user_reason_the_policy_names() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = one(&t, Restart::Transient, &log);
    publish(&t, "w", Quit(DeregReason::User(7)));
    assert_eq!(log.take(), ["w#1 finish", "w#2 start"]);
    assert_eq!(
        events(&probe),
        [
            "failed w: ended: User(7)",
            "restarting w #1 in 0ns",
            "started w #2"
        ]
    );
    // A user code the policy does not name is a normal end.
    publish(&t, "w", Quit(DeregReason::User(8)));
    assert_eq!(log.take(), ["w#2 finish"]);
    assert_eq!(events(&probe), ["exited w User(8)"]);
}

#[test]
fn a_temporary_child_is_never_restarted() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = one(&t, Restart::Temporary, &log);
    publish(&t, "w", Crash);
    assert_eq!(log.take(), ["w#1 finish"]);
    let ev = events(&probe);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0].starts_with("failed w: Panic"), "{ev:?}");
    let s = t.environment().stats().supervision;
    assert_eq!((s.child_failures, s.restarts), (1, 0));
}

#[test]
fn a_temporary_sibling_is_stopped_not_restarted_by_one_for_all() {
    let t = TestEnv::new();
    let log = Log::default();
    let env = t.environment();
    let sup = Supervisor::builder("sup")
        .strategy(cohort::supervision::Strategy::OneForAll)
        .child(worker(env, "a", &log))
        .child(worker(env, "tmp", &log).restart(Restart::Temporary))
        .build()
        .unwrap();
    register(&t, sup);
    log.take();
    publish(&t, "a", Crash);
    let mut l = log.take();
    l.sort();
    assert_eq!(l, ["a#1 finish", "a#2 start", "tmp#1 finish"]);
}
