//! The `fan-out` subcommand: its flags and records.

use super::{command_line, merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::rss;
use crate::scenarios::{Placement, fan_out, flag_value};
use clap::Args;
use serde_json::json;

/// `fan-out` flags.
#[derive(Args, Clone)]
pub struct FanOutArgs {
    /// Subscribers of the named mailbox.
    #[arg(long, default_value_t = 100)]
    pub workers: u32,
    /// Messages the producer sends.
    #[arg(long, default_value_t = 100_000)]
    pub messages: u32,
    /// What a worker does per message.
    #[arg(long, value_enum, default_value_t = fan_out::Work::Idle)]
    pub work: fan_out::Work,
    /// Milliseconds a worker sleeps per message with `--work sleep`.
    #[arg(long, default_value_t = 5)]
    pub sleep_ms: u64,
    #[command(flatten)]
    pub placement: Placement,
}

impl FanOutArgs {
    /// The subcommand and flags that run this step alone.
    pub fn cli_args(&self) -> Vec<String> {
        let mut flags = vec![
            ("--workers", self.workers.to_string()),
            ("--messages", self.messages.to_string()),
            ("--work", flag_value(self.work)),
            ("--sleep-ms", self.sleep_ms.to_string()),
        ];
        flags.extend(self.placement.flags());
        command_line("fan-out", &flags)
    }
}

/// Runs `fan-out` `runs` times: delivery rate, times and the peak RSS.
pub fn records(a: &FanOutArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!(
        "{}, {} workers x {}, {:?} workers",
        a.placement.label(),
        a.workers,
        a.messages,
        a.work
    )
    .to_lowercase();
    let p = params(merge(
        json!({ "workers": a.workers, "messages": a.messages, "work": format!("{:?}", a.work).to_lowercase(), "mailbox": "named" }),
        a.placement.params(),
    ));
    let sleep = std::time::Duration::from_millis(a.sleep_ms);
    let mut peaks = Vec::new();
    let mut out = sampled("fan-out", &variant, &p, runs, machine, || {
        let can_reset = rss::reset_peak();
        let o = fan_out::run_once(a.workers, a.messages, a.work, sleep, a.placement)?;
        if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
            peaks.push(b as f64);
        }
        let (send, total) = (o.send.as_secs_f64(), o.total.as_secs_f64());
        Ok(vec![
            ("deliveries_per_s", o.deliveries as f64 / total),
            ("elapsed_s", total),
            ("send_elapsed_s", send),
        ])
    });
    if !peaks.is_empty() && out.iter().all(|r| r.ok) {
        out.push(Record::from_samples(
            "fan-out",
            &variant,
            &p,
            "peak_rss_bytes",
            &peaks,
            machine,
        ));
    }
    out
}
