//! The `skynet` subcommand: its flags and records.

use super::{command_line, merge, params};
use crate::machine::Machine;
use crate::report::Record;
use crate::rss;
use crate::scenarios::skynet::Teardown;
use crate::scenarios::{Placement, flag_value, skynet};
use clap::Args;
use serde_json::json;

/// `skynet` flags.
#[derive(Args, Clone)]
pub struct SkynetArgs {
    /// Leaf agents (a power of --branching).
    #[arg(long, default_value_t = 1_000_000)]
    pub leaves: u64,
    /// Children per agent.
    #[arg(long, default_value_t = 10)]
    pub branching: u64,
    #[command(flatten)]
    pub placement: Placement,
    /// When the agents go: `at-end` (the article's program: the whole tree until the
    /// environment stops) or `answered` (each node deregisters its children's cooperation
    /// once they have all answered, as CAF's actors quit after answering).
    #[arg(long, value_enum, default_value_t = Teardown::AtEnd)]
    pub teardown: Teardown,
}

impl SkynetArgs {
    /// The subcommand and flags that run this step alone.
    pub fn cli_args(&self) -> Vec<String> {
        let mut flags = vec![
            ("--leaves", self.leaves.to_string()),
            ("--branching", self.branching.to_string()),
            ("--teardown", flag_value(self.teardown)),
        ];
        flags.extend(self.placement.flags());
        command_line("skynet", &flags)
    }
}

/// Runs `skynet` `runs` times: both times, the creation rate and the peak RSS.
pub fn records(a: &SkynetArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "skynet";
    let variant = match a.teardown {
        Teardown::AtEnd => format!("{}, branching {}", a.placement.label(), a.branching),
        Teardown::Answered => format!(
            "{}, branching {}, released as answered",
            a.placement.label(),
            a.branching
        ),
    };
    let mut p = params(merge(
        json!({ "leaves": a.leaves, "branching": a.branching, "teardown": format!("{:?}", a.teardown) }),
        a.placement.params(),
    ));
    let (mut with_teardown, mut to_result, mut rates, mut peaks) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let can_reset = rss::reset_peak();
        match skynet::run_with(a.leaves, a.branching, a.placement, a.teardown) {
            Ok(o) => {
                p.insert("sum".into(), json!(o.sum));
                with_teardown.push(o.with_teardown.as_secs_f64());
                to_result.push(o.to_result.as_secs_f64());
                rates.push(o.agents as f64 / o.with_teardown.as_secs_f64());
                if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
                    peaks.push(b as f64);
                }
            }
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        }
    }
    let mut out = vec![
        Record::from_samples(scenario, &variant, &p, "elapsed_s", &with_teardown, machine),
        Record::from_samples(
            scenario,
            &variant,
            &p,
            "elapsed_to_result_s",
            &to_result,
            machine,
        ),
        Record::from_samples(scenario, &variant, &p, "agents_per_s", &rates, machine),
    ];
    if !peaks.is_empty() {
        out.push(Record::from_samples(
            scenario,
            &variant,
            &p,
            "peak_rss_bytes",
            &peaks,
            machine,
        ));
    }
    out
}
