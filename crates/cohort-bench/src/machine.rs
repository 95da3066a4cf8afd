//! What ran the benchmark: CPU, cores, rustc, commit, date. Carried by every result.

use serde::{Deserialize, Serialize};
use std::process::Command;

/// The machine and build a result was measured on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub machine: String,
    pub cores: usize,
    pub rustc: String,
    pub commit: String,
    pub date: String,
}

impl Machine {
    /// Reads the current machine's description.
    pub fn detect() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Self {
            machine: cpu,
            cores,
            rustc: run("rustc", &["--version"])
                .unwrap_or_else(|| option_env!("COHORT_RUSTC").unwrap_or("unknown").into()),
            commit: run("git", &["rev-parse", "--short", "HEAD"])
                .unwrap_or_else(|| "unknown".into()),
            date: run("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]).unwrap_or_else(|| "unknown".into()),
        }
    }
}

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
