//! The `floor` subcommand: the hand-written floors of one scenario (or all), at the sizes
//! the `quick` suite (or with `--full` the `full` suite) runs that scenario with.

use super::{params, sampled};
use crate::floors::{self, Floor};
use crate::machine::Machine;
use crate::plans;
use crate::report::Record;
use clap::Args;
use std::collections::HashSet;

/// `floor` flags.
#[derive(Args, Clone)]
pub struct FloorArgs {
    /// A scenario (`ping-pong`, `skynet`, `thread-ring`, ...) or `all`.
    pub scenario: String,
    /// The sizes of the `full` suite instead of `quick`'s.
    #[arg(long)]
    pub full: bool,
}

/// Every floor of the suite's steps of `a.scenario`, each distinct one once, or a message
/// naming the scenarios when `a.scenario` is none of them.
pub fn floors(a: &FloorArgs) -> Result<Vec<Floor>, String> {
    let plan = if a.full {
        plans::full()
    } else {
        plans::quick(plans::QuickSize::Reduced)
    };
    let names: Vec<&str> = plan.iter().map(floors::scenario_of).collect();
    if a.scenario != "all" && !names.contains(&a.scenario.as_str()) {
        let mut known = names.clone();
        known.dedup();
        return Err(format!(
            "no scenario `{}` in the suite: give one of {} or `all`",
            a.scenario,
            known.join(", ")
        ));
    }
    let mut seen = HashSet::new();
    let mut told = HashSet::new();
    let mut out = Vec::new();
    for step in plan
        .iter()
        .filter(|s| a.scenario == "all" || floors::scenario_of(s) == a.scenario)
    {
        match floors::floors_of(step) {
            Ok(fs) => out.extend(fs.into_iter().filter(|f| seen.insert(f.key()))),
            Err(why) => {
                if told.insert(why) {
                    eprintln!("cohort-bench floor: no floor for {why}");
                }
            }
        }
    }
    Ok(out)
}

/// Runs each floor `runs` times: one record per metric, variant `floor: <how>`.
pub fn records(floors: &[Floor], runs: usize, machine: &Machine) -> Vec<Record> {
    floors
        .iter()
        .flat_map(|f| {
            let variant = format!("floor: {}", f.label);
            let p = params(f.params.clone());
            sampled(f.scenario, &variant, &p, runs, machine, || f.run())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_scenario_is_refused_with_the_known_ones() {
        let a = FloorArgs {
            scenario: "ping-ping".into(),
            full: false,
        };
        let e = floors(&a).err().unwrap();
        assert!(e.contains("ping-pong") && e.contains("`all`"), "{e}");
    }

    #[test]
    fn ping_pong_has_its_three_floors_once() {
        let a = FloorArgs {
            scenario: "ping-pong".into(),
            full: false,
        };
        let fs = floors(&a).unwrap();
        // 1,000,000 on one thread and 200,000 for the others: three floors per size.
        assert_eq!(fs.len(), 6);
    }
}
