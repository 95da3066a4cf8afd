//! Restart intensity: the limit, the sliding window, and escalation up the tree.

use super::kit::{Crash, Log, events, publish, register, worker, worker_counted};
use cohort::DeregReason;
use cohort::supervision::{ChildSpec, Intensity, SupervisionEvent, Supervisor};
use cohort::testing::TestEnv;
use std::time::Duration;

#[test]
fn one_restart_too_many_gives_up_and_escalates() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(2, Duration::from_secs(60)))
        .events(probe.mbox())
        .child(worker(t.environment(), "w", &log))
        .build()
        .unwrap();
    let coops = t.environment().stats().coops;
    let h = register(&t, sup);
    publish(&t, "w", Crash);
    publish(&t, "w", Crash);
    assert_eq!(
        events(&probe)
            .iter()
            .filter(|e| e.starts_with("started"))
            .count(),
        3
    );
    assert!(h.dereg_reason().is_none());
    publish(&t, "w", Crash);
    let ev = events(&probe);
    assert_eq!(ev.last().unwrap(), "gave up sup after 2", "{ev:?}");
    assert_eq!(h.dereg_reason(), Some(DeregReason::Escalated));
    assert!(h.is_gone());
    let s = t.environment().stats().supervision;
    assert_eq!((s.child_failures, s.restarts, s.give_ups), (3, 2, 1));
    // Nothing of the supervisor's tree is left.
    assert_eq!(t.environment().stats().coops, coops);
}

#[test]
fn restarts_older_than_the_window_no_longer_count() {
    let t = TestEnv::new();
    let log = Log::default();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(1, Duration::from_secs(10)))
        .child(worker(t.environment(), "w", &log))
        .build()
        .unwrap();
    let h = register(&t, sup);
    for _ in 0..5 {
        publish(&t, "w", Crash);
        t.advance(Duration::from_secs(10)).unwrap();
    }
    assert!(h.dereg_reason().is_none());
    assert_eq!(t.environment().stats().supervision.restarts, 5);
}

#[test]
fn zero_restarts_gives_up_at_the_first_failure() {
    let t = TestEnv::new();
    let log = Log::default();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(0, Duration::from_secs(1)))
        .child(worker(t.environment(), "w", &log))
        .build()
        .unwrap();
    let h = register(&t, sup);
    publish(&t, "w", Crash);
    assert_eq!(h.dereg_reason(), Some(DeregReason::Escalated));
    assert_eq!(t.environment().stats().supervision.restarts, 0);
}

/// `top` supervises `mid`, which supervises the worker `leaf`. `mid` gives up at the first
/// failure; `top` restarts `mid` once, then gives up too: the escalation climbs two levels.
#[test]
fn escalation_climbs_two_levels() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let env = t.environment().clone();
    let events_mbox = probe.mbox();
    let leaf_log = log.clone();
    let leaves = std::sync::Arc::default();
    let mid = ChildSpec::new("mid", move |coop| {
        let sup = Supervisor::builder("mid")
            .intensity(Intensity::new(0, Duration::from_secs(60)))
            .events(events_mbox.clone())
            .child(worker_counted(
                &env,
                "leaf",
                &leaf_log,
                std::sync::Arc::clone(&leaves),
            ))
            .build()
            .unwrap();
        coop.add(sup);
    });
    let top = Supervisor::builder("top")
        .intensity(Intensity::new(1, Duration::from_secs(60)))
        .events(probe.mbox())
        .child(mid)
        .build()
        .unwrap();
    let coops = t.environment().stats().coops;
    let h = register(&t, top);
    assert_eq!(log.take(), ["leaf#1 start"]);
    events(&probe);

    publish(&t, "leaf", Crash);
    assert_eq!(log.take(), ["leaf#1 finish", "leaf#2 start"]);
    let ev = events(&probe);
    assert!(ev[0].starts_with("failed leaf: Panic"), "{ev:?}");
    assert_eq!(
        ev[1..],
        [
            "gave up mid after 0",
            "failed mid: ended: Escalated",
            "restarting mid #1 in 0ns",
            "started mid #2",
            // Counted by the new `mid`, whose first start of `leaf` it is.
            "started leaf #1"
        ]
    );
    assert!(h.dereg_reason().is_none());

    publish(&t, "leaf", Crash);
    let ev = events(&probe);
    assert_eq!(
        ev[1..],
        [
            "gave up mid after 0",
            "failed mid: ended: Escalated",
            "gave up top after 1"
        ]
    );
    assert_eq!(h.dereg_reason(), Some(DeregReason::Escalated));
    assert!(h.is_gone());
    assert_eq!(t.environment().stats().supervision.give_ups, 3);
    assert_eq!(t.environment().stats().coops, coops);
}
