//! The `restart` subcommand: panic-to-first-message latency of a supervised restart, and the
//! crash storm's effect on a healthy neighbour.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Dispatcher, Placement, restart};
use clap::Args;
use serde_json::json;

/// `restart` flags.
#[derive(Args, Clone)]
pub struct RestartArgs {
    /// Restarts timed per run and dispatcher.
    #[arg(long, default_value_t = 1_000)]
    pub samples: u64,
    /// Seconds of each crash-storm phase (undisturbed, then storm); 0 skips the storm.
    #[arg(long, default_value_t = 10.0)]
    pub secs: f64,
    /// Only the crash storm.
    #[arg(long)]
    pub storm_only: bool,
}

const DISPATCHERS: [(Dispatcher, &str); 2] = [
    (Dispatcher::OneThread, "one_thread"),
    (Dispatcher::WorkStealing, "work_stealing"),
];

/// Per dispatcher: the restart latency percentiles, then the crash storm.
pub fn records(a: &RestartArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let mut out = Vec::new();
    if !(a.secs.is_finite() && a.secs >= 0.0) {
        let p = params(json!({ "secs": a.secs }));
        let e = format!(
            "--secs must be a number of seconds, 0 or more (got {})",
            a.secs
        );
        return vec![Record::failed("restart", "crash storm", &p, e, machine)];
    }
    for (d, name) in DISPATCHERS {
        let placement = Placement::of(d);
        if !a.storm_only {
            let variant = format!("one-for-one, {name}");
            let p = params(json!({ "samples": a.samples, "dispatcher": name }));
            out.extend(sampled("restart", &variant, &p, runs, machine, || {
                let h = restart::run_latency(placement, a.samples.max(1))?;
                let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
                Ok(vec![
                    ("panic_to_first_message_us_p50", us(0.5)),
                    ("panic_to_first_message_us_p99", us(0.99)),
                    ("panic_to_first_message_us_max", h.max() as f64 / 1e3),
                ])
            }));
        }
        if a.secs > 0.0 {
            let variant = format!("crash storm, {name}");
            let p = params(json!({ "secs": a.secs, "panics_per_s": 1000, "dispatcher": name }));
            out.extend(sampled("restart", &variant, &p, runs, machine, || {
                let s = restart::run_storm(placement, a.secs)?;
                let mib = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / (1024.0 * 1024.0));
                Ok(vec![
                    ("calm_round_trips_per_s", s.calm_trips_per_s),
                    ("storm_round_trips_per_s", s.storm_trips_per_s),
                    (
                        "storm_vs_calm_pct",
                        s.storm_trips_per_s / s.calm_trips_per_s * 100.0,
                    ),
                    ("panics_per_s", s.panics_per_s),
                    ("rss_start_mib", mib(s.rss_start)),
                    ("rss_end_mib", mib(s.rss_end)),
                ])
            }));
        }
    }
    out
}
