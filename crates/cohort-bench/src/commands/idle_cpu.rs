//! The `idle-cpu` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::idle_cpu;
use clap::Args;
use cohort::WorkerSpin;
use serde_json::json;
use std::time::Duration;

/// `idle-cpu` flags.
#[derive(Args, Clone)]
pub struct IdleCpuArgs {
    /// The measured idle window, in seconds.
    #[arg(long, default_value_t = idle_cpu::WINDOW_S)]
    pub seconds: f64,
    /// During the window, send a message to an agent of every dispatcher every this many
    /// microseconds (0: nothing, the environment idles).
    #[arg(long, default_value_t = 0)]
    pub trickle_us: u64,
    /// Every worker spins exactly this many microseconds before it parks
    /// (`WorkerSpin::Fixed`), instead of the default adaptive spin.
    #[arg(long)]
    pub fixed_spin_us: Option<u64>,
}

impl IdleCpuArgs {
    fn load(&self) -> idle_cpu::Load {
        idle_cpu::Load {
            trickle: (self.trickle_us > 0).then(|| Duration::from_micros(self.trickle_us)),
            spin: match self.fixed_spin_us {
                Some(us) => WorkerSpin::Fixed(Duration::from_micros(us)),
                None => WorkerSpin::default(),
            },
        }
    }
}

/// Runs `idle-cpu` `runs` times: CPU used by an idle environment with every dispatcher.
pub fn records(a: &IdleCpuArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let spin = match a.fixed_spin_us {
        Some(us) => format!("spin fixed at {us} µs"),
        None => "adaptive spin".to_string(),
    };
    let variant = match a.trickle_us {
        0 => format!("every dispatcher started, idle {} s, {spin}", a.seconds),
        us => format!(
            "every dispatcher started, a message to each every {us} µs for {} s, {spin}",
            a.seconds
        ),
    };
    let p = params(json!({
        "seconds": a.seconds,
        "trickle_us": a.trickle_us,
        "fixed_spin_us": a.fixed_spin_us,
    }));
    let load = a.load();
    sampled("idle-cpu", &variant, &p, runs, machine, || {
        let o = idle_cpu::run_once(a.seconds, load)?;
        Ok(vec![
            (
                "cpu_percent_of_one_core",
                100.0 * o.cpu_s / o.window.as_secs_f64(),
            ),
            ("cpu_s", o.cpu_s),
        ])
    })
}
