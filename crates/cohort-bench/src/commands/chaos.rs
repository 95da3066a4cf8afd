//! The `chaos` subcommand (remoting under faults) and the hidden `chaos-node`
//! child it starts.

use crate::scenarios::chaos::{self, child, faults::FaultKind};
use clap::Args;

/// `chaos` flags.
#[derive(Args, Clone, Debug)]
pub struct ChaosArgs {
    /// Length of the run in seconds (every fault kind runs at least once however short).
    #[arg(long, conflicts_with = "minutes")]
    pub secs: Option<f64>,
    /// Length of the run in minutes.
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Nodes in the mesh of the network faults (2-4).
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Sending threads per node.
    #[arg(long, default_value_t = 10)]
    pub senders: u32,
    /// Messages per second each sender offers.
    #[arg(long, default_value_t = 500.0)]
    pub rate: f64,
    /// The fault kinds to cycle through (comma-separated; default all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub faults: Vec<FaultKind>,
    /// The schedule's seed (the same seed draws the same holds).
    #[arg(long, default_value_t = 28)]
    pub seed: u64,
}

/// Refuses impossible parameters before anything starts; the run's options otherwise.
pub fn options(a: &ChaosArgs) -> Result<chaos::Options, String> {
    let secs = match (a.secs, a.minutes) {
        (Some(s), None) => s,
        (None, Some(m)) => m * 60.0,
        (None, None) => 20.0,
        (Some(_), Some(_)) => return Err("give --secs or --minutes, not both".into()),
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!(
            "the run's length {secs} s: must be a positive number"
        ));
    }
    if !(2..=4).contains(&a.nodes) {
        return Err(format!("--nodes {}: must be 2 to 4", a.nodes));
    }
    if a.senders == 0 {
        return Err("--senders must be at least 1".into());
    }
    if !(a.rate > 0.0 && a.rate.is_finite()) {
        return Err(format!("--rate {}: must be a positive number", a.rate));
    }
    let kinds = if a.faults.is_empty() {
        FaultKind::ALL.to_vec()
    } else {
        a.faults.clone()
    };
    Ok(chaos::Options {
        secs,
        nodes: a.nodes,
        senders: a.senders,
        rate: a.rate,
        kinds,
        seed: a.seed,
    })
}

/// Runs the chaos and prints its report; the exit status: 0 when every must-be-0 count is 0
/// and every phase ran, 1 otherwise, 2 for bad flags.
pub fn run(a: &ChaosArgs) -> i32 {
    let o = match options(a) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cohort-bench chaos: {e}");
            return 2;
        }
    };
    match chaos::run(&o) {
        Ok(r) => {
            chaos::print(&r, &o);
            if r.clean() { 0 } else { 1 }
        }
        Err(e) => {
            eprintln!("cohort-bench chaos: {e}");
            1
        }
    }
}

/// The child node's main.
pub fn serve(a: &child::NodeArgs) -> i32 {
    match child::serve(a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("chaos-node: {e}");
            1
        }
    }
}
