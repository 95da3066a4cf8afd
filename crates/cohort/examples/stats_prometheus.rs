//! Run-time statistics, exported to Prometheus through the `metrics` facade.
//!
//! `cargo run -p cohort --example stats_prometheus`
//!
//! What it shows:
//! - `Environment::start_stats(StatsConfig)`: workers count events, busy and idle time and
//!   queue lengths; a `cohort-stats` thread takes a snapshot every period, sends it as a
//!   [`RuntimeStats`] message to the mailboxes given (`deliver_to`) and exports it through
//!   the `metrics` facade;
//! - any `metrics` recorder receives them: here `metrics-exporter-prometheus`, whose handle
//!   renders the Prometheus text exposition (a real service would serve it over HTTP with
//!   the exporter's `http-listener` feature, or render it in its own endpoint);
//! - `Environment::stats()` takes a snapshot at any time.

use cohort::{Agent, Context, DefineError, Environment, RuntimeStats, StatsConfig};
use metrics_exporter_prometheus::PrometheusBuilder;
use std::time::Duration;

/// Keeps the worker busy: sends itself a message per message.
struct Busy {
    handled: u64,
}

struct Go;

impl Agent for Busy {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Go, ctx| {
            me.handled += 1;
            if me.handled < 200_000 {
                ctx.send_self(Go);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_self(Go);
    }
}

/// Receives the snapshots; stops the environment after the third.
struct Monitor {
    seen: u32,
}

impl Agent for Monitor {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, s: &RuntimeStats, ctx| {
            me.seen += 1;
            let events: u64 = s
                .dispatchers
                .iter()
                .flat_map(|d| &d.workers)
                .map(|w| w.events)
                .sum();
            println!(
                "monitor: snapshot {}: {} coops, {} agents, {} events handled so far",
                me.seen, s.coops, s.agents, events
            );
            if me.seen == 3 {
                ctx.stop_environment();
            }
        })?;
        Ok(())
    }
}

fn main() {
    // The process-wide `metrics` recorder: from now on every `metrics` call lands in it.
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .expect("no other recorder is installed");

    let env = Environment::builder()
        .start()
        .expect("the environment starts");
    let mut coop = env.new_coop();
    coop.add(Busy { handled: 0 });
    let monitor = coop.add(Monitor { seen: 0 }).mbox();
    env.register_coop(coop).expect("the agents register");

    env.start_stats(
        StatsConfig::new()
            .period(Duration::from_millis(100))
            .deliver_to(monitor),
    )
    .expect("statistics start");
    let now = env.stats();
    println!(
        "main: a snapshot on demand: {} named mailboxes, {} dead letters, {} dispatcher(s)",
        now.named_mailboxes,
        now.dead_letters,
        now.dispatchers.len()
    );
    env.wait(); // the monitor stops the environment after three snapshots

    // What a Prometheus scrape would get (the cohort series only).
    println!("--- Prometheus text exposition (cohort_*) ---");
    for line in prometheus.render().lines() {
        if line.contains("cohort_") {
            println!("{line}");
        }
    }
    println!("---");
    println!("done: stats_prometheus");
}
