//! The `self-send` subcommand: its flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::{self, Record};
use crate::scenarios::{Placement, self_send};
use clap::Args;
use serde_json::json;

/// `self-send` flags.
#[derive(Args, Clone)]
pub struct SelfSendArgs {
    /// Worker agents.
    #[arg(long, default_value_t = self_send::WORKERS)]
    pub workers: u64,
    /// Signals each worker handles.
    #[arg(long = "message-count", default_value_t = self_send::MESSAGE_COUNT)]
    pub message_count: u64,
    /// Signals each worker sends itself in `start` (signals in flight per worker).
    #[arg(long = "start-batch", default_value_t = self_send::START_BATCH)]
    pub start_batch: u64,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `self-send` `runs` times.
pub fn records(a: &SelfSendArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let placement = self_send::placement_of(a.placement);
    let variant = format!(
        "{}, {} workers x {}, start batch {}",
        placement.label(),
        a.workers,
        report::thousands(a.message_count),
        a.start_batch
    );
    let p = params(merge(
        json!({
            "workers": a.workers,
            "message_count": a.message_count,
            "start_batch": a.start_batch,
        }),
        placement.params(),
    ));
    sampled("self-send", &variant, &p, runs, machine, || {
        let o = self_send::run_once(a.workers, a.message_count, a.start_batch, placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![
            ("elapsed_s", s),
            ("messages_per_s", o.messages as f64 / s),
        ])
    })
}
