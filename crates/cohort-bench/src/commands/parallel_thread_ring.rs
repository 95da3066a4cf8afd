//! The `parallel-thread-ring` subcommand: its flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, parallel_thread_ring, thread_ring};
use clap::Args;
use serde_json::json;

/// `parallel-thread-ring` flags.
#[derive(Args, Clone)]
pub struct ParallelThreadRingArgs {
    /// Agents in the ring.
    #[arg(long, default_value_t = thread_ring::RING_SIZE)]
    pub agents: u64,
    /// Tokens travelling at once (token k starts at agent k; at most --agents).
    #[arg(long, default_value_t = thread_ring::RING_SIZE)]
    pub tokens: u64,
    /// Hops in all, split among the tokens as Theron does (its full run: 50,000,000).
    #[arg(long, default_value_t = 10_000_000)]
    pub hops: u64,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `parallel-thread-ring` `runs` times.
pub fn records(a: &ParallelThreadRingArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!(
        "{}, {} agents, {} tokens",
        a.placement.label(),
        a.agents,
        a.tokens
    );
    let p = params(merge(
        json!({ "agents": a.agents, "hops": a.hops, "tokens": a.tokens }),
        a.placement.params(),
    ));
    sampled("parallel-thread-ring", &variant, &p, runs, machine, || {
        let o = parallel_thread_ring::run_once(a.agents, a.tokens, a.hops, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![("hops_per_s", o.hops as f64 / s), ("elapsed_s", s)])
    })
}
