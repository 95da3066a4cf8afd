//! The `cluster` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::cluster;
use clap::Args;
use serde_json::json;
use std::time::Duration;

/// `cluster` flags.
#[derive(Args, Clone)]
pub struct ClusterArgs {
    /// Member counts, one round each (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![5usize, 10, 25])]
    pub nodes: Vec<usize>,
    /// The steady-state window over which gossip traffic is counted, in seconds.
    #[arg(long = "steady-s", default_value_t = 5.0)]
    pub steady_s: f64,
}

/// Refuses impossible parameters before anything starts.
pub fn validate(a: &ClusterArgs) -> Result<(), String> {
    if a.nodes.is_empty() || a.nodes.iter().any(|&n| !(2..=500).contains(&n)) {
        return Err(format!(
            "--nodes {:?}: each member count must be 2 to 500 (one is stopped to measure detection)",
            a.nodes
        ));
    }
    if !(a.steady_s > 0.0 && a.steady_s <= 600.0) {
        return Err("--steady-s must be above 0 and at most 600".into());
    }
    Ok(())
}

/// Per member count, `runs` clusters started from scratch: the four figures of each.
pub fn records(a: &ClusterArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let steady = Duration::from_secs_f64(a.steady_s);
    let mut out = Vec::new();
    for &n in &a.nodes {
        let variant = format!(
            "{n} in-process members, each its own remoting node and gossip runtime, \
             loopback, default config"
        );
        let p = params(json!({ "nodes": n, "steady_s": a.steady_s, "processes": "one" }));
        out.extend(sampled("cluster", &variant, &p, runs, machine, || {
            let o = cluster::run_once(n, steady)?;
            Ok(vec![
                ("converged_ms", o.converged.as_secs_f64() * 1e3),
                (
                    "registration_visible_ms",
                    o.registration.as_secs_f64() * 1e3,
                ),
                ("crash_detected_ms", o.crash_detected.as_secs_f64() * 1e3),
                ("gossip_bytes_per_node_per_s", o.bytes_per_node_per_s),
            ])
        }));
    }
    out
}
