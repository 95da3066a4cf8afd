//! A supervisor that stops while a child waits for its restart: no orphan cooperation, no
//! restart after.

use super::kit::{Crash, Log, events, publish, register, worker};
use crate::common::{TIMEOUT, watchdog};
use cohort::supervision::{Backoff, ChildSpec, Intensity, SupervisionEvent, Supervisor};
use cohort::testing::TestEnv;
use cohort::{Agent, Context, DeregReason};
use std::time::Duration;

#[test]
fn no_restart_after_the_supervisor_is_deregistered_during_a_back_off() {
    let t = TestEnv::new();
    let log = Log::default();
    let probe = t.probe::<SupervisionEvent>().unwrap();
    let sup = Supervisor::builder("sup")
        .backoff(Backoff::fixed(Duration::from_secs(1)))
        .events(probe.mbox())
        .child(worker(t.environment(), "a", &log))
        .child(worker(t.environment(), "b", &log))
        .build()
        .unwrap();
    let coops = t.environment().stats().coops;
    let h = register(&t, sup);
    publish(&t, "a", Crash);
    events(&probe);
    log.take();
    h.deregister(DeregReason::Normal);
    t.run_until_quiet().unwrap();
    assert!(h.is_gone());
    assert_eq!(log.take(), ["b#1 finish"]);
    // The back-off timer was cancelled with the supervisor: nothing fires, nothing starts.
    assert_eq!(t.environment().stats().timers, 0);
    t.advance(Duration::from_secs(5)).unwrap();
    assert!(log.take().is_empty());
    assert!(events(&probe).is_empty());
    assert_eq!(t.environment().stats().coops, coops);
}

struct FailsAtStart;
impl Agent for FailsAtStart {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        panic!("cannot start");
    }
}

/// On worker threads: a child restarting in a tight loop while its supervisor is
/// deregistered from another thread. Once the supervisor is gone, no cooperation is left
/// and no child starts any more.
#[test]
fn a_supervisor_deregistered_while_its_child_restarts_leaves_nothing_behind() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder()
            .autoshutdown(false)
            .start()
            .unwrap();
        let events = crate::common::Probe::<SupervisionEvent>::new();
        let sup = Supervisor::builder("sup")
            .intensity(Intensity::new(u32::MAX, Duration::from_secs(3600)))
            .events(events.mbox.clone())
            .child(ChildSpec::new("f", |coop| {
                coop.add(FailsAtStart);
            }))
            .build()
            .unwrap();
        let mut coop = env.new_coop();
        coop.add(sup);
        let h = env.register_coop(coop).unwrap();
        // Let it restart a few times, observed through its events.
        let mut restarts = 0;
        while restarts < 3 {
            if matches!(
                events.recv("an event"),
                SupervisionEvent::ChildRestarting { .. }
            ) {
                restarts += 1;
            }
        }
        h.deregister(DeregReason::Normal);
        h.wait_gone(TIMEOUT).unwrap();
        let starts = env.stats().supervision.child_starts;
        assert_eq!(env.stats().coops, 0, "an orphan cooperation is left");
        // Gone means every agent of the supervisor finished: no handler of it runs again.
        assert_eq!(env.stats().supervision.child_starts, starts);
        env.stop_and_wait();
        events.shutdown();
    });
}
