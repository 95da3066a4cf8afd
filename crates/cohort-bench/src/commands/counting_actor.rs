//! The `counting-actor` subcommand: its flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, counting_actor};
use clap::Args;
use serde_json::json;

/// `counting-actor` flags.
#[derive(Args, Clone)]
pub struct CountingActorArgs {
    /// Messages the writer thread sends (Theron's full run: 50,000,000; 3,000,000 is the
    /// size "typically used online").
    #[arg(long, default_value_t = 3_000_000)]
    pub count: u64,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `counting-actor` `runs` times.
pub fn records(a: &CountingActorArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!("{}, writer: plain thread", a.placement.label());
    let p = params(merge(
        json!({ "count": a.count, "writer": "plain thread" }),
        a.placement.params(),
    ));
    sampled("counting-actor", &variant, &p, runs, machine, || {
        let o = counting_actor::run_once(a.count, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![
            ("messages_per_s", o.count as f64 / s),
            ("elapsed_s", s),
            (
                "send_messages_per_s",
                o.count as f64 / o.send_elapsed.as_secs_f64(),
            ),
        ])
    })
}
