//! Bad input: a factory that panics or builds nothing, duplicate children, a zero window,
//! back-off parameters out of range. Typed errors or a defined, counted outcome; no hang.

use super::kit::register;
use cohort::DeregReason;
use cohort::supervision::{
    Backoff, ChildSpec, Intensity, SupervisionEvent, Supervisor, SupervisorError,
};
use cohort::testing::TestEnv;
use std::time::Duration;

struct Idle;
impl cohort::Agent for Idle {}

fn gives_up_after_start_failures(spec: ChildSpec, expect: &str) {
    let t = TestEnv::new();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(2, Duration::from_secs(60)))
        .events(probe.mbox())
        .child(spec)
        .build()
        .unwrap();
    let h = register(&t, sup);
    assert_eq!(h.dereg_reason(), Some(DeregReason::Escalated));
    let ev = super::kit::events(&probe);
    let failures: Vec<_> = ev.iter().filter(|e| e.starts_with("failed")).collect();
    assert_eq!(failures.len(), 3, "{ev:?}");
    assert!(failures.iter().all(|f| f.contains(expect)), "{ev:?}");
    assert_eq!(ev.last().unwrap(), "gave up sup after 2");
    let s = t.environment().stats().supervision;
    assert_eq!((s.child_starts, s.start_failures, s.give_ups), (0, 3, 1));
}

#[test]
fn a_factory_that_panics_is_a_start_failure() {
    gives_up_after_start_failures(
        ChildSpec::new("f", |_| panic!("no agent for you")),
        "the child's factory panicked: no agent for you",
    );
}

#[test]
fn a_factory_that_builds_an_empty_cooperation_is_a_start_failure() {
    gives_up_after_start_failures(ChildSpec::new("f", |_| {}), "empty cooperation");
}

#[test]
fn a_child_added_twice_is_refused() {
    let err = Supervisor::builder("sup")
        .child(ChildSpec::new("x", |c| {
            c.add(Idle);
        }))
        .child(ChildSpec::new("x", |c| {
            c.add(Idle);
        }))
        .build()
        .unwrap_err();
    assert_eq!(err, SupervisorError::DuplicateChild("x".into()));
    assert!(err.to_string().contains("its own name"));
}

#[test]
fn a_zero_window_is_refused() {
    let err = Supervisor::builder("sup")
        .intensity(Intensity::new(3, Duration::ZERO))
        .build()
        .unwrap_err();
    assert_eq!(err, SupervisorError::ZeroWindow);
}

#[test]
fn back_off_parameters_out_of_range_are_refused() {
    let ms = Duration::from_millis;
    for b in [
        Backoff::exponential(ms(10), ms(1)),
        Backoff::exponential(ms(1), ms(10)).jitter(-0.1),
        Backoff::exponential(ms(1), ms(10)).jitter(f64::NAN),
    ] {
        let err = Supervisor::builder("sup").backoff(b).build().unwrap_err();
        assert!(matches!(err, SupervisorError::InvalidBackoff(_)), "{b:?}");
    }
}

#[test]
fn a_supervisor_without_children_just_runs() {
    let t = TestEnv::new();
    let h = register(&t, Supervisor::builder("sup").build().unwrap());
    assert!(h.dereg_reason().is_none());
    h.deregister(DeregReason::Normal);
    t.run_until_quiet().unwrap();
    assert!(h.is_gone());
}
