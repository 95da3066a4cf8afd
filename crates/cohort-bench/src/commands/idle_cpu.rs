//! The `idle-cpu` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::idle_cpu;
use clap::Args;
use serde_json::json;

/// `idle-cpu` flags.
#[derive(Args, Clone)]
pub struct IdleCpuArgs {
    /// The measured idle window, in seconds.
    #[arg(long, default_value_t = idle_cpu::WINDOW_S)]
    pub seconds: f64,
}

/// Runs `idle-cpu` `runs` times: CPU used by an idle environment with every dispatcher.
pub fn records(a: &IdleCpuArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!("every dispatcher started, idle {} s", a.seconds);
    let p = params(json!({ "seconds": a.seconds }));
    sampled("idle-cpu", &variant, &p, runs, machine, || {
        let o = idle_cpu::run_once(a.seconds)?;
        Ok(vec![
            (
                "cpu_percent_of_one_core",
                100.0 * o.cpu_s / o.window.as_secs_f64(),
            ),
            ("cpu_s", o.cpu_s),
        ])
    })
}
