//! The `ping-pong` and `named-ping-pong` subcommands: their flags and records.

use super::{merge, params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::{Placement, ping_pong};
use clap::Args;
use serde_json::json;

/// `ping-pong` flags.
#[derive(Args, Clone)]
pub struct PingPongArgs {
    /// Round trips per run.
    #[arg(long, default_value_t = 1_000_000)]
    pub count: u64,
    /// The mailboxes the agents send to.
    #[arg(long, value_enum, default_value_t = ping_pong::Mailbox::Direct)]
    pub mbox: ping_pong::Mailbox,
    /// Both agents declare a message limit (never reached): the cost of counting.
    #[arg(long)]
    pub limits: bool,
    #[command(flatten)]
    pub placement: Placement,
}

/// `named-ping-pong` flags.
#[derive(Args, Clone)]
pub struct NamedPingPongArgs {
    /// Round trips per run, for each kind of mailbox.
    #[arg(long, default_value_t = 1_000_000)]
    pub count: u64,
    #[command(flatten)]
    pub placement: Placement,
}

/// Runs `ping-pong` `runs` times: throughput, then one more run that times every round trip.
pub fn records(a: &PingPongArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "ping-pong";
    let limits = if a.limits { ", message limits" } else { "" };
    let variant = format!("{}, {}{limits}", a.placement.label(), a.mbox.label());
    let p = params(merge(
        json!({ "count": a.count, "mailbox": format!("{:?}", a.mbox).to_lowercase(), "limits": a.limits }),
        a.placement.params(),
    ));
    let mut msgs = Vec::new();
    let mut trips = Vec::new();
    for _ in 0..runs.max(1) {
        match ping_pong::run_once(a.count, a.placement, false, a.mbox, a.limits) {
            Ok(o) => {
                let s = o.elapsed.as_secs_f64();
                trips.push(o.round_trips as f64 / s);
                msgs.push(2.0 * o.round_trips as f64 / s);
            }
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        }
    }
    let mut out = vec![
        Record::from_samples(scenario, &variant, &p, "messages_per_s", &msgs, machine),
        Record::from_samples(scenario, &variant, &p, "round_trips_per_s", &trips, machine),
    ];
    // One more run that times every round trip (timing costs a little throughput).
    let lat_count = a.count.min(1_000_000);
    match ping_pong::run_once(lat_count, a.placement, true, a.mbox, a.limits) {
        Ok(o) => {
            if let Some(h) = o.latency {
                for (metric, q) in [
                    ("latency_ns_p50", 0.5),
                    ("latency_ns_p99", 0.99),
                    ("latency_ns_p999", 0.999),
                ] {
                    let v = h.value_at_quantile(q) as f64;
                    out.push(Record::from_samples(
                        scenario,
                        &variant,
                        &p,
                        metric,
                        &[v],
                        machine,
                    ));
                }
            }
        }
        Err(e) => out.push(Record::failed(scenario, &variant, &p, e, machine)),
    }
    out
}

/// Direct and named ping-pong run alternately (so noise hits both alike), with the per-run
/// ratio of their throughputs.
pub fn named_records(a: &NamedPingPongArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    use ping_pong::Mailbox;
    let variant = a.placement.label();
    let p = params(merge(json!({ "count": a.count }), a.placement.params()));
    sampled("named-ping-pong", &variant, &p, runs, machine, || {
        let rate = |m: Mailbox| {
            ping_pong::run_once(a.count, a.placement, false, m, false)
                .map(|o| 2.0 * o.round_trips as f64 / o.elapsed.as_secs_f64())
        };
        let direct = rate(Mailbox::Direct)?;
        let named = rate(Mailbox::Named)?;
        Ok(vec![
            ("direct_messages_per_s", direct),
            ("named_messages_per_s", named),
            ("named_over_direct_ratio", named / direct),
        ])
    })
}
