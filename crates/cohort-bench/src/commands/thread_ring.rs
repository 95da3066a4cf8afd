//! The `thread-ring` subcommand: its flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, thread_ring};
use clap::Args;
use serde_json::json;

/// `thread-ring` flags.
#[derive(Args, Clone)]
pub struct ThreadRingArgs {
    /// Agents in the ring.
    #[arg(long, default_value_t = thread_ring::RING_SIZE)]
    pub agents: u64,
    /// Hops the token makes (Theron's full run: 50,000,000).
    #[arg(long, default_value_t = 10_000_000)]
    pub hops: u64,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `thread-ring` `runs` times.
pub fn records(a: &ThreadRingArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!("{}, {} agents", a.placement.label(), a.agents);
    let p = params(merge(
        json!({ "agents": a.agents, "hops": a.hops, "tokens": 1 }),
        a.placement.params(),
    ));
    sampled("thread-ring", &variant, &p, runs, machine, || {
        let o = thread_ring::run_once(a.agents, a.hops, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![("hops_per_s", o.hops as f64 / s), ("elapsed_s", s)])
    })
}
