//! The `producer-consumer` subcommand: its flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, producer_consumer};
use clap::Args;
use serde_json::json;

/// `producer-consumer` flags.
#[derive(Args, Clone)]
pub struct ProducerConsumerArgs {
    /// Messages in all, shared equally among the producers.
    #[arg(long, default_value_t = 50_000_000)]
    pub count: u64,
    /// Producer agents.
    #[arg(long, default_value_t = producer_consumer::PRODUCERS)]
    pub producers: u64,
    /// Messages a producer sends per event before yielding (continuing with a self-signal).
    #[arg(long, default_value_t = producer_consumer::BURST)]
    pub burst: u64,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `producer-consumer` `runs` times.
pub fn records(a: &ProducerConsumerArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!(
        "{}, {} producers, burst {}",
        a.placement.label(),
        a.producers,
        a.burst
    );
    let p = params(merge(
        json!({ "count": a.count, "producers": a.producers, "burst": a.burst }),
        a.placement.params(),
    ));
    sampled("producer-consumer", &variant, &p, runs, machine, || {
        let o = producer_consumer::run_once(a.count, a.producers, a.burst, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![
            ("messages_per_s", o.count as f64 / s),
            ("elapsed_s", s),
        ])
    })
}
