//! Run-time statistics: off by default (counters stay at zero), counted when on, delivered
//! periodically to subscribers.

use crate::common;

use cohort::{Agent, Context, DefineError, RuntimeStats, StatsConfig};
use common::{TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

struct Tick;

struct Counter {
    done: Sender<()>,
    left: usize,
}

impl Agent for Counter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {
            me.left -= 1;
            if me.left == 0 {
                let _ = me.done.send(());
            }
        })?;
        Ok(())
    }
}

fn default_events(s: &RuntimeStats) -> u64 {
    s.dispatchers
        .iter()
        .filter(|d| d.name == "default")
        .flat_map(|d| &d.workers)
        .map(|w| w.events)
        .sum()
}

#[test]
fn counters_stay_at_zero_while_off_and_count_while_on() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let n = common::count(1000);
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let counter = coop
            .add(Counter {
                done: tx.clone(),
                left: n,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        for _ in 0..n {
            counter.send(Tick);
        }
        common::recv(&rx, "the first batch");
        let off = env.stats();
        assert_eq!(off.coops, 1);
        assert_eq!(off.agents, 1);
        assert_eq!(
            default_events(&off),
            0,
            "statistics are off by default: nothing counted"
        );
        assert!(
            off.dispatchers
                .iter()
                .any(|d| d.name == "default" && d.kind == "one_thread")
        );

        env.start_stats(StatsConfig::new().export_metrics(false))
            .unwrap();
        let mut coop = env.new_coop();
        let counter = coop.add(Counter { done: tx, left: n }).mbox();
        env.register_coop(coop).unwrap();
        for _ in 0..n {
            counter.send(Tick);
        }
        common::recv(&rx, "the second batch");
        // The worker publishes its counters at the end of each batch, right after handling.
        common::wait_until(|| default_events(&env.stats()) >= n as u64);
        let on = env.stats();
        assert_eq!((on.coops, on.agents), (2, 2));
        env.stop_stats();
        env.stop_and_wait();
    });
}

struct Monitor {
    seen: Sender<RuntimeStats>,
}

impl Agent for Monitor {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, s: &RuntimeStats, _: &mut Context<'_, Self>| {
                let _ = me.seen.send(s.clone());
            },
        )?;
        Ok(())
    }
}

#[test]
fn snapshots_are_delivered_periodically() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let monitor = coop.add(Monitor { seen: tx }).mbox();
        env.register_coop(coop).unwrap();
        let config = StatsConfig::new()
            .period(Duration::from_millis(5))
            .deliver_to(monitor);
        env.start_stats(config).unwrap();
        let snapshots = common::recv_n(&rx, 3, "three snapshots");
        assert!(snapshots.iter().all(|s| s.coops == 1 && s.agents == 1));
        env.stop_and_wait();
    });
}

#[test]
fn a_zero_period_is_refused() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let err = env
            .start_stats(StatsConfig::new().period(Duration::ZERO))
            .unwrap_err();
        assert!(err.to_string().contains("period"), "{err}");
    });
}
