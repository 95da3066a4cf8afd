//! The dispatcher issue's own subcommands (`idle-cpu`, `locality`): their flags and records.

use super::{Machine, Record, params, sampled};
use crate::scenarios::{idle_cpu, locality};
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
pub fn idle_cpu_records(a: &IdleCpuArgs, runs: usize, machine: &Machine) -> Vec<Record> {
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

/// `locality` flags (each list flag takes comma-separated values).
#[derive(Args, Clone)]
pub struct LocalityArgs {
    /// Worker threads of every assignment.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Agent counts.
    #[arg(long, value_delimiter = ',', default_values_t = locality::AGENTS)]
    pub agents: Vec<usize>,
    /// Memory accesses per message.
    #[arg(long, value_delimiter = ',', default_values_t = locality::ACCESSES)]
    pub accesses: Vec<usize>,
    /// Bytes of private state per agent.
    #[arg(long = "state-bytes", value_delimiter = ',', default_values_t = locality::STATE_BYTES)]
    pub state_bytes: Vec<usize>,
    /// Messages per cell, round robin over the agents.
    #[arg(long, default_value_t = locality::MESSAGES)]
    pub messages: usize,
    /// Assignments of agents to threads.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = locality::Assignment::ALL)]
    pub assignment: Vec<locality::Assignment>,
}

/// Runs the locality grid: per cell, the assignments interleaved run by run (so load on the
/// machine hits them alike); one record per (cell, assignment, metric). Cells over the memory
/// budget are left out (said on stderr).
pub fn locality_records(a: &LocalityArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let mut out = Vec::new();
    for &agents in &a.agents {
        for &accesses in &a.accesses {
            for &state_bytes in &a.state_bytes {
                let cell = |assignment| locality::Cell {
                    workers: a.workers,
                    agents,
                    accesses,
                    state_bytes,
                    messages: a.messages,
                    assignment,
                };
                if !cell(locality::Assignment::Dedicated).fits() {
                    eprintln!(
                        "locality: {agents} agents x {state_bytes} B left out (over the {} MiB \
                         state budget)",
                        locality::MAX_TOTAL_STATE >> 20
                    );
                    continue;
                }
                let mut samples: Vec<Result<Vec<f64>, String>> =
                    a.assignment.iter().map(|_| Ok(Vec::new())).collect();
                for _ in 0..runs.max(1) {
                    for (k, &assignment) in a.assignment.iter().enumerate() {
                        if let Ok(ms) = &mut samples[k] {
                            match locality::run_once(cell(assignment)) {
                                Ok(o) => {
                                    std::hint::black_box((o.checksum, o.handled));
                                    ms.push(o.elapsed.as_secs_f64() * 1e3);
                                }
                                Err(e) => samples[k] = Err(e),
                            }
                        }
                    }
                }
                for (&assignment, s) in a.assignment.iter().zip(samples) {
                    let variant = format!(
                        "{} workers, {agents} agents, {accesses} accesses, {state_bytes} B, {}",
                        a.workers,
                        assignment.label()
                    );
                    let p = params(json!({
                        "workers": a.workers,
                        "agents": agents,
                        "accesses": accesses,
                        "state_bytes": state_bytes,
                        "messages": a.messages,
                        "assignment": assignment.label(),
                    }));
                    match s {
                        Ok(ms) => {
                            let rate: Vec<f64> =
                                ms.iter().map(|m| a.messages as f64 / (m / 1e3)).collect();
                            out.push(Record::from_samples(
                                "locality",
                                &variant,
                                &p,
                                "elapsed_ms",
                                &ms,
                                machine,
                            ));
                            out.push(Record::from_samples(
                                "locality",
                                &variant,
                                &p,
                                "messages_per_s",
                                &rate,
                                machine,
                            ));
                        }
                        Err(e) => out.push(Record::failed("locality", &variant, &p, e, machine)),
                    }
                }
            }
        }
    }
    out
}

/// The locality grid at the seed's size (`full`), or a cheap corner of it (`quick`: 24
/// agents, 100 accesses, 64 B and 320 KB, 20,000 messages).
pub fn locality_plan(quick: bool) -> LocalityArgs {
    let mut a = LocalityArgs {
        workers: 2,
        agents: locality::AGENTS.to_vec(),
        accesses: locality::ACCESSES.to_vec(),
        state_bytes: locality::STATE_BYTES.to_vec(),
        messages: locality::MESSAGES,
        assignment: locality::Assignment::ALL.to_vec(),
    };
    if quick {
        a.agents = vec![24];
        a.accesses = vec![100];
        a.state_bytes = vec![64, 320_000];
        a.messages = 20_000;
    }
    a
}
