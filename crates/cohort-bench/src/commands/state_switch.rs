//! The `state-switch` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::state_switch;
use clap::Args;
use serde_json::json;

/// `state-switch` flags.
#[derive(Args, Clone)]
pub struct StateSwitchArgs {
    /// Signals per variant per run.
    #[arg(long, default_value_t = 5_000_000)]
    pub count: u64,
}

/// A handled message with and without a state switch, timed back to back in each run.
pub fn records(a: &StateSwitchArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = "one_thread, self-sent signal";
    let p = params(json!({ "count": a.count }));
    sampled("state-switch", variant, &p, runs, machine, || {
        let o = state_switch::run_once(a.count)?;
        let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / o.count as f64;
        let (plain, switch, nested) = (ns(o.plain), ns(o.switch), ns(o.nested));
        Ok(vec![
            ("plain_ns_per_msg", plain),
            ("switch_ns_per_msg", switch),
            ("nested_hooks_ns_per_msg", nested),
            ("switch_ratio", switch / plain),
            ("nested_hooks_ratio", nested / plain),
        ])
    })
}
