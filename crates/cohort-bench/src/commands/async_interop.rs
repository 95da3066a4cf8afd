//! The `spawn-deliver` and `async-ask` subcommands: their flags and records.

use super::{command_line, params, round_trip_metrics, sampled};
use crate::alloc;
use crate::machine::Machine;
use crate::report::Record;
use crate::rss;
use crate::scenarios::async_interop::{self, AskLayout};
use clap::Args;
use serde_json::json;
use std::time::Duration;

/// `spawn-deliver` flags.
#[derive(Args, Clone)]
pub struct SpawnDeliverArgs {
    /// Futures spawned (and outputs handled) in all.
    #[arg(long, default_value_t = 1_000_000)]
    pub count: u64,
    /// Agents spawning them, all on the default dispatcher's thread.
    #[arg(long, default_value_t = 4)]
    pub agents: u64,
    /// Futures each agent keeps running at once.
    #[arg(long = "in-flight", default_value_t = 256)]
    pub in_flight: u64,
    /// Worker threads of the environment's embedded tokio runtime.
    #[arg(long = "async-threads", default_value_t = 1)]
    pub async_threads: usize,
}

impl SpawnDeliverArgs {
    /// The subcommand and flags that run this step alone.
    pub fn cli_args(&self) -> Vec<String> {
        command_line(
            "spawn-deliver",
            &[
                ("--count", self.count.to_string()),
                ("--agents", self.agents.to_string()),
                ("--in-flight", self.in_flight.to_string()),
                ("--async-threads", self.async_threads.to_string()),
            ],
        )
    }
}

/// Runs `spawn-deliver` `runs` times: completions per second and peak RSS.
pub fn spawn_deliver_records(a: &SpawnDeliverArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!(
        "{} agents on one_thread, {} in flight each, embedded runtime of {} thread(s)",
        a.agents, a.in_flight, a.async_threads
    );
    let p = params(json!({
        "count": a.count,
        "agents": a.agents,
        "in_flight": a.in_flight,
        "async_threads": a.async_threads,
    }));
    sampled("spawn-deliver", &variant, &p, runs, machine, || {
        let can_reset = rss::reset_peak();
        let o = async_interop::spawn_deliver_once(a.count, a.agents, a.in_flight, a.async_threads)?;
        let mut m = vec![(
            "completions_per_s",
            o.count as f64 / o.elapsed.as_secs_f64(),
        )];
        if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
            m.push(("peak_rss_mib", b as f64 / (1024.0 * 1024.0)));
        }
        Ok(m)
    })
}

/// `async-ask` flags.
#[derive(Args, Clone)]
pub struct AsyncAskArgs {
    /// Asks, one at a time.
    #[arg(long, default_value_t = 200_000)]
    pub count: u64,
    /// Threads: 1 or 2; a list runs each.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// Where the two agents run on those threads: `dedicated` (on 2 threads the responder
    /// has a thread of its own) or `pool` (both on a `thread_pool` of that many workers,
    /// which places them).
    #[arg(long, value_enum, default_value_t = AskLayout::Dedicated)]
    pub layout: AskLayout,
    /// Each ask's timeout in ms (0: no timeout; a timeout schedules and cancels a timer per
    /// ask).
    #[arg(long = "timeout-ms", default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Count heap allocations instead of timing: every thread's allocations in a run of
    /// `--count` asks and in one of twice as many, their difference per ask (what starting
    /// and stopping the environment allocates cancels out): `allocations_per_round_trip`.
    #[arg(long)]
    pub allocs: bool,
    /// Read no clock per round trip: the throughput alone, without the latency percentiles
    /// (two clock reads per ask are a large share of a one-thread ask; `compare`'s
    /// throughput rows run so on every side, its latency rows timed).
    #[arg(long)]
    pub untimed: bool,
}

/// Runs `async-ask` `runs` times per thread count: round trips per second and latency
/// percentiles.
pub fn async_ask_records(a: &AsyncAskArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let timeout = (a.timeout_ms > 0).then(|| Duration::from_millis(a.timeout_ms));
    let mut out = Vec::new();
    for &threads in &a.threads {
        let layout = match a.layout {
            AskLayout::Dedicated => "",
            AskLayout::Pool => " on a thread_pool",
        };
        let mut variant = match timeout {
            Some(_) => format!(
                "agent -> agent, {threads} thread(s){layout}, timeout {} ms",
                a.timeout_ms
            ),
            None => format!("agent -> agent, {threads} thread(s){layout}, no timeout"),
        };
        if a.allocs {
            variant.push_str(", allocations counted");
        } else if a.untimed {
            variant.push_str(", untimed");
        }
        let p = params(json!({
            "count": a.count,
            "threads": threads,
            "layout": format!("{:?}", a.layout).to_lowercase(),
            "timeout_ms": a.timeout_ms,
        }));
        out.extend(sampled("async-ask", &variant, &p, runs, machine, || {
            let timed = !a.untimed && !a.allocs;
            let once =
                |count| async_interop::async_ask_once(count, threads, a.layout, timeout, timed);
            if a.allocs {
                let (first, short) = alloc::process_live_of(|| once(a.count));
                first?;
                let (second, long) = alloc::process_live_of(|| once(2 * a.count));
                second?;
                let extra = long.allocations.saturating_sub(short.allocations);
                return Ok(vec![(
                    "allocations_per_round_trip",
                    extra as f64 / a.count as f64,
                )]);
            }
            let o = once(a.count)?;
            Ok(round_trip_metrics(o.count, o.elapsed, &o.latency))
        }));
    }
    out
}
