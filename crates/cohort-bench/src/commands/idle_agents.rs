//! The `idle-agents` subcommand: bytes per registered idle agent, and where they go.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::Placement;
use crate::scenarios::idle_agents::{self, Setup};
use clap::Args;
use serde_json::json;

/// `idle-agents` flags.
#[derive(Args, Clone)]
pub struct IdleAgentsArgs {
    /// Agents registered.
    #[arg(long, default_value_t = 1_000_000)]
    pub agents: u64,
    /// Cooperations they are registered in (the agents shared equally).
    #[arg(long, default_value_t = 100_000)]
    pub coops: u64,
    /// Skip the two extra measurements of the breakdown (without subscriptions, and one
    /// agent per cooperation).
    #[arg(long)]
    pub no_breakdown: bool,
    /// Messages each agent is sent back to back, from a plain thread, before it is measured
    /// (0: none): what an agent keeps of a burst once it is idle again. With a burst, the
    /// breakdown is skipped (its other setups take no messages).
    #[arg(long, default_value_t = 0)]
    pub burst: u32,
    #[command(flatten)]
    pub placement: Placement,
}

/// Checks the flags before anything starts.
pub fn validate(a: &IdleAgentsArgs) -> Result<(), String> {
    idle_agents::validate(a.agents, a.coops)?;
    a.placement.validate()
}

const SCENARIO: &str = "idle-agents";

/// Bytes per agent of one setup, `runs` times: allocator and RSS figures, and the
/// registration time; the live blocks of the last run.
fn measure(
    setup: Setup,
    variant: &str,
    runs: usize,
    rss: bool,
    machine: &Machine,
) -> (Vec<Record>, Option<idle_agents::Outcome>) {
    let p = params(merge(
        json!({ "agents": setup.agents, "coops": setup.coops, "subscribed": setup.subscribed,
            "burst": setup.burst }),
        setup.placement.params(),
    ));
    let mut last = None;
    let n = setup.agents as f64;
    let records = sampled(SCENARIO, variant, &p, runs, machine, || {
        let o = idle_agents::run_once(setup)?;
        let mut out = vec![
            ("alloc_bytes_per_agent", o.live.net_bytes as f64 / n),
            ("elapsed_s", o.elapsed.as_secs_f64()),
        ];
        out.extend(
            o.rss_delta
                .filter(|_| rss)
                .map(|d| ("rss_bytes_per_agent", d as f64 / n)),
        );
        last = Some(o);
        Ok(out)
    });
    (records, last)
}

/// The records of `idle-agents`: the figure, the live blocks by size, the breakdown by
/// component (from two more setups) and the sizes of the public handles.
pub fn records(a: &IdleAgentsArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let base = Setup {
        agents: a.agents,
        coops: a.coops,
        subscribed: true,
        burst: a.burst,
        placement: a.placement,
    };
    let label = a.placement.label();
    let burst = match a.burst {
        0 => String::new(),
        n => format!(", idle again after a burst of {n} messages each"),
    };
    let variant = format!(
        "{label}, {} agents in {} cooperations, one subscription each{burst}",
        a.agents, a.coops
    );
    let (mut out, last) = measure(base, &variant, runs, true, machine);
    let Some(o) = last else { return out };
    let per_agent = |r: &[Record]| {
        r.iter()
            .find(|r| r.ok && r.metric == "alloc_bytes_per_agent")
            .map(|r| r.value)
    };
    let full = per_agent(&out);
    out.extend(blocks(&o.live, a, machine));
    if !a.no_breakdown && a.burst == 0 {
        let (bare, _) = measure(
            Setup {
                subscribed: false,
                burst: 0,
                ..base
            },
            &format!(
                "{label}, {} agents in {} cooperations, no subscription",
                a.agents, a.coops
            ),
            runs,
            // The first setup's freed pages are reused: RSS would not grow.
            false,
            machine,
        );
        let (solo, _) = measure(
            Setup {
                coops: a.agents,
                subscribed: false,
                burst: 0,
                ..base
            },
            &format!(
                "{label}, {} agents, one per cooperation, no subscription",
                a.agents
            ),
            runs,
            false,
            machine,
        );
        if let (Some(full), Some(b), Some(s)) = (full, per_agent(&bare), per_agent(&solo)) {
            // b = cell + coop / k and s = cell + coop, with k agents per cooperation.
            let k = a.agents as f64 / a.coops as f64;
            let coop = if k > 1.0 {
                (s - b) * k / (k - 1.0)
            } else {
                s - b
            };
            let p = params(json!({ "agents_per_coop": k }));
            let breakdown = [
                ("subscription_bytes_per_agent", full - b),
                ("coop_share_bytes_per_agent", coop / k),
                ("cell_and_queue_bytes_per_agent", b - coop / k),
                ("coop_bytes", coop),
            ];
            for (metric, v) in breakdown {
                out.push(Record::from_samples(
                    SCENARIO,
                    &format!("{label}, breakdown"),
                    &p,
                    metric,
                    &[v],
                    machine,
                ));
            }
        }
        out.extend(bare);
        out.extend(solo);
    }
    out.extend(sizes(machine));
    out
}

/// The live blocks that account for at least one byte per agent, largest share first: a
/// block counted about once per agent is the agent's own, once per cooperation its
/// cooperation's.
fn blocks(live: &crate::alloc::Live, a: &IdleAgentsArgs, machine: &Machine) -> Vec<Record> {
    let n = a.agents as f64;
    let mut rows: Vec<(usize, i64)> = live.blocks.clone();
    rows.sort_by_key(|&(size, count)| std::cmp::Reverse(size as i64 * count));
    let mut out: Vec<Record> = rows
        .into_iter()
        .filter(|&(size, count)| (size as i64 * count) as f64 >= n)
        .map(|(size, count)| {
            let p = params(json!({ "block_bytes": size, "blocks": count,
                "blocks_per_agent": count as f64 / n,
                "blocks_per_coop": count as f64 / a.coops as f64 }));
            Record::from_samples(
                SCENARIO,
                &format!("live blocks of {size} bytes"),
                &p,
                "bytes_per_agent",
                &[(size as i64 * count) as f64 / n],
                machine,
            )
        })
        .collect();
    if live.large.0 != 0 {
        let p = params(json!({ "blocks": live.large.0 }));
        out.push(Record::from_samples(
            SCENARIO,
            "live blocks over 4 KiB",
            &p,
            "bytes_per_agent",
            &[live.large.1 as f64 / n],
            machine,
        ));
    }
    out
}

/// `size_of` of the runtime's public handles an agent's owner may keep.
fn sizes(machine: &Machine) -> Vec<Record> {
    use std::mem::size_of;
    let p = serde_json::Map::new();
    [
        ("cohort::Mbox", size_of::<cohort::Mbox>()),
        (
            "cohort::AgentHandle<_>",
            size_of::<cohort::AgentHandle<idle_agents::Bare>>(),
        ),
        ("cohort::CoopHandle", size_of::<cohort::CoopHandle>()),
        ("cohort::Coop (builder)", size_of::<cohort::Coop>()),
        ("cohort::Binder", size_of::<cohort::Binder>()),
    ]
    .into_iter()
    .map(|(what, b)| {
        Record::from_samples(
            SCENARIO,
            &format!("size_of {what}"),
            &p,
            "bytes",
            &[b as f64],
            machine,
        )
    })
    .collect()
}

/// A quick default for tests: the one-thread placement.
#[cfg(test)]
fn tiny() -> IdleAgentsArgs {
    IdleAgentsArgs {
        agents: 2_000,
        coops: 200,
        no_breakdown: false,
        burst: 0,
        placement: Placement::of(crate::scenarios::Dispatcher::OneThread),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breakdown_adds_up() {
        let machine = Machine::detect();
        let a = tiny();
        let r = crate::watchdog::within(120, move || records(&a, 1, &machine));
        assert!(r.iter().all(|r| r.ok));
        let get = |m: &str| r.iter().find(|r| r.metric == m).map(|r| r.value).unwrap();
        let parts = get("subscription_bytes_per_agent")
            + get("coop_share_bytes_per_agent")
            + get("cell_and_queue_bytes_per_agent");
        assert!((parts - get("alloc_bytes_per_agent")).abs() < 1e-6);
    }
}
