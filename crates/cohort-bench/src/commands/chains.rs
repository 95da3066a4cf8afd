//! The `request-reply` and `chain-throughput` subcommands: their flags and records.

use super::{merge, params, round_trip_metrics, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, chains};
use clap::Args;
use serde_json::json;

/// `request-reply` flags.
#[derive(Args, Clone)]
pub struct RequestReplyArgs {
    /// Requests, sent one at a time.
    #[arg(long, default_value_t = 200_000)]
    pub count: u64,
    /// Microseconds the waiting thread polls for a reply before it sleeps (default:
    /// cohort's `defaults::REPLY_SPIN`).
    #[arg(long)]
    pub spin_us: Option<u64>,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `request-reply` `runs` times: round trips per second and latency percentiles.
pub fn request_reply_records(a: &RequestReplyArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let spin = a.spin_us.map(std::time::Duration::from_micros);
    let variant = match a.spin_us {
        None => format!("{}, plain thread -> agent", a.placement.label()),
        Some(us) => format!(
            "{}, plain thread -> agent, spin {us} us",
            a.placement.label()
        ),
    };
    let p = params(merge(
        json!({ "count": a.count, "spin_us": a.spin_us }),
        a.placement.params(),
    ));
    sampled("request-reply", &variant, &p, runs, machine, || {
        let o = chains::request_reply_once(a.count, spin, a.placement)?;
        Ok(round_trip_metrics(o.count, o.elapsed, &o.latency))
    })
}

/// `chain-throughput` flags.
#[derive(Args, Clone)]
pub struct ChainThroughputArgs {
    /// Messages.
    #[arg(long, default_value_t = 2_000_000)]
    pub count: u64,
    /// Capacity of the chain (0: unbounded); a full bounded chain makes the agent wait.
    #[arg(long, default_value_t = 0)]
    pub capacity: usize,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `chain-throughput` `runs` times.
pub fn chain_throughput_records(
    a: &ChainThroughputArgs,
    runs: usize,
    machine: &Machine,
) -> Vec<Record> {
    let chain = match a.capacity {
        0 => "unbounded chain".to_string(),
        c => format!("chain bounded to {c}"),
    };
    let variant = format!(
        "{}, thread -> agent -> {chain} -> thread",
        a.placement.label()
    );
    let p = params(merge(
        json!({ "count": a.count, "capacity": a.capacity }),
        a.placement.params(),
    ));
    sampled("chain-throughput", &variant, &p, runs, machine, || {
        let elapsed = chains::chain_throughput_once(a.count, a.capacity, a.placement)?;
        Ok(vec![
            ("messages_per_s", a.count as f64 / elapsed.as_secs_f64()),
            ("elapsed_s", elapsed.as_secs_f64()),
        ])
    })
}
