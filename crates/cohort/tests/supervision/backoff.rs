//! Back-off on the test kit's virtual clock: no restart before its delay, one right after.

use super::kit::{Crash, Log, events, publish, register, worker};
use cohort::supervision::{Backoff, ChildSpec, Intensity, SupervisionEvent, Supervisor};
use cohort::testing::TestEnv;
use cohort::{Agent, Context};
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn a_fixed_back_off_delays_the_restart() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .backoff(Backoff::fixed(MS(100)))
        .events(probe.mbox())
        .child(worker(t.environment(), "w", &log))
        .build()
        .unwrap();
    register(&t, sup);
    log.take();
    events(&probe);
    publish(&t, "w", Crash);
    assert_eq!(log.take(), ["w#1 finish"]);
    assert_eq!(events(&probe)[1], "restarting w #1 in 100ms");
    t.advance(MS(99)).unwrap();
    assert!(log.take().is_empty(), "restarted before its back-off");
    t.advance(MS(1)).unwrap();
    assert_eq!(log.take(), ["w#2 start"]);
    assert_eq!(events(&probe), ["started w #2"]);
}

#[test]
fn an_exponential_back_off_doubles_up_to_its_cap() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(10, Duration::from_secs(60)))
        .backoff(Backoff::exponential(MS(10), MS(35)))
        .events(probe.mbox())
        .child(worker(t.environment(), "w", &log))
        .build()
        .unwrap();
    register(&t, sup);
    let mut delays = Vec::new();
    for _ in 0..4 {
        events(&probe);
        publish(&t, "w", Crash);
        let started = t.now();
        while !events(&probe).iter().any(|e| e.starts_with("started")) {
            t.advance(MS(1)).unwrap();
        }
        delays.push(t.now() - started);
    }
    assert_eq!(delays, [MS(10), MS(20), MS(35), MS(35)]);
}

#[test]
fn jitter_shortens_but_never_lengthens_the_delay() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(10, Duration::from_secs(60)))
        .backoff(Backoff::exponential(MS(100), MS(100)).jitter(0.5))
        .events(probe.mbox())
        .child(worker(t.environment(), "w", &log))
        .build()
        .unwrap();
    register(&t, sup);
    for _ in 0..5 {
        events(&probe);
        publish(&t, "w", Crash);
        let started = t.now();
        while !events(&probe).iter().any(|e| e.starts_with("started")) {
            t.advance(MS(1)).unwrap();
        }
        let took = t.now() - started;
        assert!(took >= MS(50) && took <= MS(100), "{took:?}");
    }
}

/// Panics as it starts: each incarnation fails at once.
struct FailsAtStart;
impl Agent for FailsAtStart {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        panic!("cannot start");
    }
}

/// A child that fails as soon as it starts cannot restart faster than the back-off allows,
/// and the loop ends when the intensity is exceeded.
#[test]
fn a_restart_loop_runs_at_the_back_off_pace_and_ends_by_giving_up() {
    let t = TestEnv::new();
    let sup = Supervisor::builder("sup")
        .intensity(Intensity::new(5, Duration::from_secs(60)))
        .backoff(Backoff::fixed(Duration::from_secs(1)))
        .child(ChildSpec::new("f", |coop| {
            coop.add(FailsAtStart);
        }))
        .build()
        .unwrap();
    let h = register(&t, sup);
    while h.dereg_reason().is_none() {
        t.advance(MS(100)).unwrap();
        assert!(t.now() < Duration::from_secs(60), "no give-up");
    }
    // Five restarts, each at least one second after the failure before it.
    assert!(t.now() >= Duration::from_secs(5), "{:?}", t.now());
    let s = t.environment().stats().supervision;
    assert_eq!(
        (s.child_starts, s.child_failures, s.restarts, s.give_ups),
        (6, 6, 5, 1)
    );
}
