//! The `locality` subcommand: its flags, the grid's records, and its comparison of
//! work_stealing with the better of the other assignments.

use super::params;
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::locality;
use clap::Args;
use serde_json::json;
use std::time::Duration;

/// `work_stealing`'s default `home_queue_wait`, in microseconds (the locality grid's knob).
const HOME_QUEUE_WAIT_US: u64 = cohort::defaults::HOME_QUEUE_WAIT.as_micros() as u64;

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
    /// `work_stealing`: turns between a worker's looks at its home run queue (the sends from
    /// outside the pool) before its own deque.
    #[arg(long = "home-queue-interval", default_value_t = cohort::defaults::HOME_QUEUE_INTERVAL)]
    pub home_queue_interval: usize,
    /// `work_stealing`: how long, in microseconds, a busy worker's home run queue holds work
    /// before one of its looks takes from it (0: at every look).
    #[arg(long = "home-queue-wait-us", default_value_t = HOME_QUEUE_WAIT_US)]
    pub home_queue_wait_us: u64,
}

/// Runs the locality grid: per cell, the assignments interleaved run by run (so load on the
/// machine hits them alike; each run begins with the next one), after one untimed run of
/// each on the first cell; one record per (cell, assignment, metric). Cells over the memory
/// budget are left out (said on stderr). With `work_stealing` and another assignment, also
/// the comparison of work_stealing with the others, measured run by run: per cell `ws_over_best` (work_stealing's rate
/// over the better of the others' in the same run), and for the whole grid the cells where
/// its median is at least [`WITHIN`] and each assignment's geometric mean.
pub fn records(a: &LocalityArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let mut out = Vec::new();
    let mut grid = GridSummary::default();
    let mut warmed = false;
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
                    home_queue_interval: a.home_queue_interval,
                    home_queue_wait: Duration::from_micros(a.home_queue_wait_us),
                };
                if !cell(locality::Assignment::Dedicated).fits() {
                    eprintln!(
                        "locality: {agents} agents x {state_bytes} B left out (over the {} MiB \
                         state budget)",
                        locality::MAX_TOTAL_STATE >> 20
                    );
                    continue;
                }
                if !warmed {
                    // A process's first runs are slower than the rest, which would put the
                    // first cell's first assignment behind: one untimed run per assignment.
                    for &assignment in &a.assignment {
                        let _ = locality::run_once(cell(assignment));
                    }
                    warmed = true;
                }
                let mut samples: Vec<Result<Vec<f64>, String>> =
                    a.assignment.iter().map(|_| Ok(Vec::new())).collect();
                for run in 0..runs.max(1) {
                    for k in run_order(run, a.assignment.len()) {
                        let assignment = a.assignment[k];
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
                let variant = |assignment: locality::Assignment| {
                    format!(
                        "{} workers, {agents} agents, {accesses} accesses, {state_bytes} B, {}",
                        a.workers,
                        assignment.label()
                    )
                };
                let cell_params = |assignment: locality::Assignment| {
                    params(json!({
                        "workers": a.workers,
                        "agents": agents,
                        "accesses": accesses,
                        "state_bytes": state_bytes,
                        "messages": a.messages,
                        "assignment": assignment.label(),
                        "home_queue_interval": a.home_queue_interval,
                        "home_queue_wait_us": a.home_queue_wait_us,
                    }))
                };
                if let Some(r) = grid.add_cell(&a.assignment, &samples, a.messages) {
                    let ws = locality::Assignment::WorkStealing;
                    out.push(Record::from_samples(
                        "locality",
                        &variant(ws),
                        &cell_params(ws),
                        "ws_over_best",
                        &r,
                        machine,
                    ));
                }
                for (&assignment, s) in a.assignment.iter().zip(samples) {
                    let (variant, p) = (variant(assignment), cell_params(assignment));
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
    out.extend(grid.records(&a.assignment, a.workers, machine));
    out
}

/// A ratio to three decimals (the noise is in the second).
fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// `ws_over_best` at or above this counts as "as fast, within noise" (3 %).
pub const WITHIN: f64 = 0.97;

/// The locality grid's comparison of work_stealing with the better of the others.
#[derive(Default)]
struct GridSummary {
    /// Per cell, the median of work_stealing's per-run ratio to the better of the others.
    ratios: Vec<f64>,
    /// Per assignment (in the grid's order), the log of each cell's median rate.
    log_rates: Vec<Vec<f64>>,
}

impl GridSummary {
    /// Takes one cell's elapsed times (ms, per assignment, per run); returns work_stealing's
    /// ratio to the better of the others, run by run, if the cell has both and no failure.
    fn add_cell(
        &mut self,
        assignments: &[locality::Assignment],
        samples: &[Result<Vec<f64>, String>],
        messages: usize,
    ) -> Option<Vec<f64>> {
        let ok: Vec<&Vec<f64>> = samples
            .iter()
            .map(|s| s.as_ref().ok())
            .collect::<Option<_>>()?;
        self.log_rates.resize(assignments.len(), Vec::new());
        for (k, ms) in ok.iter().enumerate() {
            let median = crate::report::median_min_max(ms).0;
            self.log_rates[k].push((messages as f64 / (median / 1e3)).ln());
        }
        let ws = assignments
            .iter()
            .position(|&x| x == locality::Assignment::WorkStealing)?;
        if assignments.len() < 2 {
            return None;
        }
        let runs = ok[ws].len();
        // Rates are messages / elapsed: a ratio of rates is the inverse ratio of times.
        let ratios: Vec<f64> = (0..runs)
            .map(|r| {
                let best_other = ok
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != ws)
                    .map(|(_, ms)| ms[r])
                    .fold(f64::INFINITY, f64::min);
                round3(best_other / ok[ws][r])
            })
            .collect();
        self.ratios.push(crate::report::median_min_max(&ratios).0);
        Some(ratios)
    }

    /// The grid's records: cells, cells within [`WITHIN`], the worst cell's ratio, and each
    /// assignment's geometric mean rate over the cells.
    fn records(
        &self,
        assignments: &[locality::Assignment],
        workers: usize,
        machine: &Machine,
    ) -> Vec<Record> {
        let mut out = Vec::new();
        let p = params(json!({ "workers": workers }));
        let variant = format!("{workers} workers, all cells, work_stealing vs the better other");
        if !self.ratios.is_empty() {
            let within = self.ratios.iter().filter(|&&r| r >= WITHIN).count();
            let worst = self.ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let worst = round3(worst);
            for (metric, v) in [
                ("cells", self.ratios.len() as f64),
                ("cells_ws_within_3_percent", within as f64),
                ("worst_ws_over_best", worst),
            ] {
                out.push(Record::from_samples(
                    "locality",
                    &variant,
                    &p,
                    metric,
                    &[v],
                    machine,
                ));
            }
        }
        for (assignment, logs) in assignments.iter().zip(&self.log_rates) {
            if logs.is_empty() {
                continue;
            }
            let geomean = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
            out.push(Record::from_samples(
                "locality",
                &format!("{workers} workers, all cells, {}", assignment.label()),
                &p,
                "geomean_messages_per_s",
                &[geomean],
                machine,
            ));
        }
        out
    }
}

/// The locality grid at the article's size (`full`), or a cheap corner of it (`quick`: 24
/// agents, 100 accesses, 64 B and 320 KB, 20,000 messages).
pub fn locality_plan(quick: bool) -> LocalityArgs {
    let mut a = LocalityArgs {
        workers: 2,
        agents: locality::AGENTS.to_vec(),
        accesses: locality::ACCESSES.to_vec(),
        state_bytes: locality::STATE_BYTES.to_vec(),
        messages: locality::MESSAGES,
        assignment: locality::Assignment::ALL.to_vec(),
        home_queue_interval: cohort::defaults::HOME_QUEUE_INTERVAL,
        home_queue_wait_us: HOME_QUEUE_WAIT_US,
    };
    if quick {
        a.agents = vec![24];
        a.accesses = vec![100];
        a.state_bytes = vec![64, 320_000];
        a.messages = 20_000;
    }
    a
}

/// The order of a cell's assignments in run `run` of `n` assignments: each run begins with
/// the next one. Whatever a cell's first run pays (the heap grown for its queues' blocks, for
/// one) would otherwise always fall on the assignment listed first.
fn run_order(run: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (run + i) % n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use locality::Assignment::{Dedicated, ThreadPool, WorkStealing};

    #[test]
    fn each_run_of_a_cell_begins_with_the_next_assignment() {
        let orders: Vec<Vec<usize>> = (0..4).map(|r| run_order(r, 3).collect()).collect();
        assert_eq!(
            orders,
            vec![vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1], vec![0, 1, 2]]
        );
    }

    #[test]
    fn grid_summary_compares_run_by_run_with_the_better_other() {
        let order = [WorkStealing, ThreadPool, Dedicated];
        let mut g = GridSummary::default();
        // Elapsed ms per run: ws 10 and 20; the better other 8 (thread_pool) then 18
        // (dedicated): ws at 0.8 and 0.9 of it, median 0.85.
        let ratios = g
            .add_cell(
                &order,
                &[
                    Ok(vec![10.0, 20.0]),
                    Ok(vec![8.0, 30.0]),
                    Ok(vec![9.0, 18.0]),
                ],
                1_000,
            )
            .unwrap();
        assert_eq!(ratios, vec![0.8, 0.9]);
        // A second cell where work_stealing is as fast as the better other.
        g.add_cell(
            &order,
            &[Ok(vec![5.0]), Ok(vec![5.0]), Ok(vec![6.0])],
            1_000,
        )
        .unwrap();
        // A failed assignment leaves the cell out.
        assert!(
            g.add_cell(
                &order,
                &[Ok(vec![5.0]), Err("x".into()), Ok(vec![6.0])],
                1_000
            )
            .is_none()
        );
        let machine = Machine::detect();
        let recs = g.records(&order, 2, &machine);
        let get = |metric: &str, variant_end: &str| {
            recs.iter()
                .find(|r| r.metric == metric && r.variant.ends_with(variant_end))
                .map(|r| r.value)
                .unwrap()
        };
        assert_eq!(get("cells", "better other"), 2.0);
        assert_eq!(get("cells_ws_within_3_percent", "better other"), 1.0);
        assert_eq!(get("worst_ws_over_best", "better other"), 0.85);
        // Cell medians: ws 15 ms and 5 ms for 1,000 messages: rates 66,667 and 200,000 /s.
        let geomean = get("geomean_messages_per_s", "work_stealing");
        assert!(
            (geomean - (66_666.67f64 * 200_000.0).sqrt()).abs() < 1.0,
            "{geomean}"
        );
    }
}
