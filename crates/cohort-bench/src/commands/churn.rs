//! The `churn` subcommand: its flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, churn};
use clap::Args;
use serde_json::json;

/// `churn` flags.
#[derive(Args, Clone)]
pub struct ChurnArgs {
    /// Cooperations registered and deregistered per run, while a plain thread publishes.
    #[arg(long, default_value_t = 10_000)]
    pub coops: u64,
    /// Subscribers of the named mailbox per cooperation.
    #[arg(long, default_value_t = 4)]
    pub agents: u32,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `churn` `runs` times: cooperations per second, and what the published messages
/// became (handled; handled though published after `deregister()` returned, which must be 0;
/// dead letters).
pub fn records(a: &ChurnArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!("{}, {} subscribers per coop", a.placement.label(), a.agents);
    let p = params(merge(
        json!({ "coops": a.coops, "agents": a.agents }),
        a.placement.params(),
    ));
    sampled("churn", &variant, &p, runs, machine, || {
        let o = churn::run_once(a.coops, a.agents, a.placement)?;
        if o.handled_after_deregister != 0 {
            return Err(format!(
                "{} messages published after their agent's deregister() returned were handled",
                o.handled_after_deregister
            ));
        }
        Ok(vec![
            ("coops_per_s", o.coops as f64 / o.elapsed.as_secs_f64()),
            ("published", o.published as f64),
            ("handled", o.handled as f64),
            (
                "handled_after_deregister",
                o.handled_after_deregister as f64,
            ),
            ("receiver_gone_dead_letters", o.receiver_gone as f64),
            ("other_dead_letters", o.other_dead_letters as f64),
        ])
    })
}
