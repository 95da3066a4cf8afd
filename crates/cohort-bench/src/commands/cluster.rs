//! The `cluster` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::cluster;
use clap::Args;
use serde_json::json;
use std::time::Duration;

/// `cluster` flags.
#[derive(Args, Clone)]
pub struct ClusterArgs {
    /// Member counts, one round each (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![5usize, 10, 25, 50])]
    pub nodes: Vec<usize>,
    /// Skip the member rounds (`--nodes`): only the other parts asked for run.
    #[arg(long = "no-members")]
    pub no_members: bool,
    /// The steady-state window over which gossip traffic is counted, in seconds.
    #[arg(long = "steady-s", default_value_t = 5.0)]
    pub steady_s: f64,
    /// Gossip-only member counts (`Gossiper`s: chitchat behind cohort-cluster's transport,
    /// no nodes, no agents, one runtime of two threads), one round each; none by default.
    #[arg(long = "gossip-only", value_delimiter = ',')]
    pub gossip_only: Vec<usize>,
    /// The gossip interval of the gossip-only members, in milliseconds (default: 4 ms per
    /// member, at least the cluster's default of 400).
    #[arg(long = "sim-interval-ms")]
    pub sim_interval_ms: Option<u64>,
    /// How many of the gossip-only members are seeds (default: one per 25 members).
    #[arg(long = "sim-seeds")]
    pub sim_seeds: Option<usize>,
    /// The window over which the gossip-only members that are not seeds join, one after
    /// the other, in milliseconds (default: two gossip intervals; 0: all at once).
    #[arg(long = "sim-stagger-ms")]
    pub sim_stagger_ms: Option<u64>,
    /// Seconds of the false-down run: 10 members with the default configuration, two
    /// pairs of them in remote ping-pong through groups, back to back; 0 skips it.
    #[arg(long = "false-down-s", default_value_t = 0.0)]
    pub false_down_s: f64,
    /// Rounds of each route in the group-route comparison (remote ping-pong through
    /// `group(.., RoundRobin)` against direct proxies, alternating); 0 skips it.
    #[arg(long = "route-rounds", default_value_t = 0)]
    pub route_rounds: usize,
    /// Only this route in the group-route comparison (`direct` or `group`): a run per route,
    /// for an instruction count of each.
    #[arg(long = "route-only", value_enum)]
    pub route_only: Option<cluster::Route>,
    /// Messages (pings and pongs) per client in a group-route round.
    #[arg(long = "route-messages", default_value_t = 40_000)]
    pub route_messages: u64,
}

/// Refuses impossible parameters before anything starts.
pub fn validate(a: &ClusterArgs) -> Result<(), String> {
    if a.nodes.is_empty() || a.nodes.iter().any(|&n| !(2..=500).contains(&n)) {
        return Err(format!(
            "--nodes {:?}: each member count must be 2 to 500 (one is stopped to measure detection)",
            a.nodes
        ));
    }
    if a.gossip_only.iter().any(|&n| !(2..=2000).contains(&n)) {
        return Err(format!(
            "--gossip-only {:?}: each count must be 2 to 2,000",
            a.gossip_only
        ));
    }
    if a.sim_interval_ms == Some(0) {
        return Err("--sim-interval-ms must be positive".into());
    }
    if a.sim_seeds == Some(0) {
        return Err("--sim-seeds must be at least 1".into());
    }
    if a.sim_stagger_ms.is_some_and(|ms| ms > 600_000) {
        return Err("--sim-stagger-ms must be at most 600000".into());
    }
    if !(0.0..=3600.0).contains(&a.false_down_s) {
        return Err("--false-down-s must be 0 to 3600".into());
    }
    if a.route_messages < 2 {
        return Err("--route-messages must be at least 2 (a ping and its pong)".into());
    }
    if !(a.steady_s > 0.0 && a.steady_s <= 600.0) {
        return Err("--steady-s must be above 0 and at most 600".into());
    }
    Ok(())
}

/// Per member count, `runs` clusters started from scratch: the four figures of each.
pub fn records(a: &ClusterArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let steady = Duration::from_secs_f64(a.steady_s);
    let mut out = Vec::new();
    let nodes: &[usize] = if a.no_members { &[] } else { &a.nodes };
    for &n in nodes {
        let variant = format!(
            "{n} in-process members, each its own remoting node and gossip runtime, \
             loopback, default config"
        );
        let p = params(json!({ "nodes": n, "steady_s": a.steady_s, "processes": "one" }));
        out.extend(sampled("cluster", &variant, &p, runs, machine, || {
            let o = cluster::run_once(n, steady)?;
            Ok(vec![
                ("converged_ms", o.converged.as_secs_f64() * 1e3),
                (
                    "registration_visible_ms",
                    o.registration.as_secs_f64() * 1e3,
                ),
                ("crash_detected_ms", o.crash_detected.as_secs_f64() * 1e3),
                ("gossip_bytes_per_node_per_s", o.bytes_per_node_per_s),
            ])
        }));
    }
    for &n in &a.gossip_only {
        let plan = cluster::sim::Plan::scaled(
            n,
            a.sim_seeds,
            a.sim_interval_ms.map(Duration::from_millis),
            a.sim_stagger_ms.map(Duration::from_millis),
        );
        let interval_ms = plan.interval.as_millis() as u64;
        let stagger_ms = plan.stagger.as_millis() as u64;
        let variant = format!(
            "{n} gossip-only members (no nodes, no agents), one runtime of {} threads, \
             loopback, gossip every {interval_ms} ms, {} seeds, joins over {stagger_ms} ms",
            plan.workers, plan.seeds
        );
        let p = params(json!({ "members": n, "steady_s": a.steady_s,
            "interval_ms": interval_ms, "seeds": plan.seeds, "stagger_ms": stagger_ms }));
        out.extend(sampled(
            "cluster-gossip-only",
            &variant,
            &p,
            runs,
            machine,
            || {
                let o = cluster::gossip_only(&plan, steady)?;
                let mut figures = vec![
                    ("converged_ms", o.converged.as_secs_f64() * 1e3),
                    (
                        "converged_after_last_join_ms",
                        o.after_last_join.as_secs_f64() * 1e3,
                    ),
                    ("gossip_bytes_per_node_per_s", o.bytes_per_node_per_s),
                ];
                if let Some(d) = o.drops {
                    figures.push(("udp_drops_gossip_sockets", d.public as f64));
                    figures.push(("udp_drops_gate_sockets", d.internal as f64));
                }
                Ok(figures)
            },
        ));
    }
    if a.route_rounds > 0 {
        let (clients, in_flight) = (10, 50);
        let variant = format!(
            "remote ping-pong between 2 of 3 in-process members, {clients} clients, \
             {in_flight} in flight, {} messages per client, routes alternating",
            a.route_messages
        );
        let only = a.route_only.map(|r| format!("{r:?}").to_lowercase());
        let p = params(json!({ "rounds": a.route_rounds, "clients": clients,
            "in_flight": in_flight, "messages_per_client": a.route_messages, "route_only": only }));
        out.extend(sampled(
            "cluster-group-route",
            &variant,
            &p,
            1,
            machine,
            || {
                let o = cluster::group_route(
                    a.route_rounds,
                    clients,
                    a.route_messages,
                    in_flight,
                    a.route_only,
                )?;
                // The median of a route's rounds; none for a route left out (`--route-only`).
                let median = |v: &[f64]| {
                    let mut v = v.to_vec();
                    v.sort_by(f64::total_cmp);
                    v.get(v.len() / 2).copied()
                };
                let figures = [
                    ("direct_messages_per_s", median(&o.direct)),
                    ("group_messages_per_s", median(&o.group)),
                    (
                        "group_over_direct",
                        median(&o.group).zip(median(&o.direct)).map(|(g, d)| g / d),
                    ),
                    ("direct_messages_per_write", median(&o.direct_batch)),
                    ("group_messages_per_write", median(&o.group_batch)),
                    ("direct_cpu_ns_per_message", median(&o.direct_cpu_ns)),
                    ("group_cpu_ns_per_message", median(&o.group_cpu_ns)),
                ];
                Ok(figures
                    .into_iter()
                    .filter_map(|(name, v)| v.map(|v| (name, v)))
                    .collect())
            },
        ));
    }
    if a.false_down_s > 0.0 {
        let (n, clients) = (10, 10);
        let variant = format!(
            "{n} in-process members, default config, 2 pairs in remote ping-pong through \
             groups ({clients} clients each) for {} s",
            a.false_down_s
        );
        let p = params(json!({ "members": n, "seconds": a.false_down_s, "clients": clients }));
        out.extend(sampled(
            "cluster-false-downs",
            &variant,
            &p,
            1,
            machine,
            || {
                let o = cluster::false_downs(n, Duration::from_secs_f64(a.false_down_s), clients)?;
                Ok(vec![
                    ("false_member_downs", o.false_downs as f64),
                    ("least_view", o.least_view as f64),
                    ("messages_per_s", o.messages_per_s),
                    ("elapsed_s", o.elapsed.as_secs_f64()),
                ])
            },
        ));
    }
    out
}
