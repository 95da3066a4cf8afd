//! The remote subcommands: `remote-ping-pong` (its flags and records) and the
//! hidden `remote-ping-pong-server` (the echo side as a child process).

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::remote_ping_pong::{self as rpp, Pair, Policy, Processes};
use clap::Args;
use serde_json::json;

/// Round trips of the latency run under fixed thresholds: each waits for the 40 ms timer
/// twice (once per direction), so a few are enough.
const FIXED_LATENCY_ROUND_TRIPS: u64 = 25;

/// `remote-ping-pong` flags.
#[derive(Args, Clone)]
pub struct RemotePingPongArgs {
    /// Client counts, one round each (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![1usize, 5, 10, 15, 20, 25, 30])]
    pub clients: Vec<usize>,
    /// Messages per client, pings and pongs together (RemotePingPong's 200,000).
    #[arg(long, default_value_t = 200_000)]
    pub messages: u64,
    /// Pings each client keeps outstanding.
    #[arg(long = "in-flight", default_value_t = 50)]
    pub in_flight: u64,
    /// Batching policies compared, the same on both nodes (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',',
          default_values_t = vec![Policy::Adaptive, Policy::PerMessage, Policy::Fixed])]
    pub batching: Vec<Policy>,
    /// Where the echo node runs: this process, a child process, or both in turn.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![Processes::Two, Processes::One])]
    pub processes: Vec<Processes>,
    /// Round trips of the latency run (one client, one ping in flight); 0 skips it. Under
    /// fixed thresholds at most 25 (each waits for the 40 ms timer).
    #[arg(long = "latency-round-trips", default_value_t = 20_000)]
    pub latency_round_trips: u64,
    /// How long the agents' worker threads on both nodes spin before they park, µs (0:
    /// cohort's default, `defaults::WORKER_SPIN`, 50 µs). A remote round trip is longer
    /// than the default spin, so the waiting agent parks; a longer spin keeps it awake.
    #[arg(long = "worker-spin-us", default_value_t = 0)]
    pub worker_spin_us: u64,
}

/// The suite's reduced run: adaptive batching, both nodes in this process, 1 and 10
/// clients x 20,000 messages, 2,000 latency round trips (500 and 100 when `tiny`).
pub fn quick_args(tiny: bool) -> RemotePingPongArgs {
    RemotePingPongArgs {
        clients: vec![1, 10],
        messages: if tiny { 500 } else { 20_000 },
        in_flight: 50,
        batching: vec![Policy::Adaptive],
        processes: vec![Processes::One],
        latency_round_trips: if tiny { 100 } else { 2_000 },
        worker_spin_us: 0,
    }
}

/// RemotePingPong's run: every client count, the three policies, two processes then one.
pub fn full_args() -> RemotePingPongArgs {
    RemotePingPongArgs {
        clients: vec![1, 5, 10, 15, 20, 25, 30],
        messages: 200_000,
        in_flight: 50,
        batching: vec![Policy::Adaptive, Policy::PerMessage, Policy::Fixed],
        processes: vec![Processes::Two, Processes::One],
        latency_round_trips: 20_000,
        worker_spin_us: 0,
    }
}

/// `remote-ping-pong-server` flags (started by `remote-ping-pong` itself).
#[derive(Args, Clone)]
pub struct ServerArgs {
    /// The batching policy of the echo node.
    #[arg(long, value_enum, default_value = "adaptive")]
    pub batching: Policy,
    /// Echo agents to start.
    #[arg(long, default_value_t = 30)]
    pub clients: usize,
    /// Worker spin of the echo node's environment, µs (0: cohort's default).
    #[arg(long = "worker-spin-us", default_value_t = 0)]
    pub worker_spin_us: u64,
}

/// Runs the echo side until standard input closes.
pub fn serve(a: &ServerArgs) -> i32 {
    rpp::WORKER_SPIN_US.store(a.worker_spin_us, std::sync::atomic::Ordering::Relaxed);
    match rpp::serve_child(a.batching, a.clients) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("remote-ping-pong-server: {e}");
            1
        }
    }
}

/// Refuses impossible parameters before anything starts.
pub fn validate(a: &RemotePingPongArgs) -> Result<(), String> {
    if a.clients.is_empty() || a.clients.iter().any(|&c| c == 0 || c > 10_000) {
        return Err(format!(
            "--clients {:?}: each client count must be 1 to 10,000",
            a.clients
        ));
    }
    if a.messages < 2 {
        return Err("--messages must be at least 2 (a ping and its pong)".into());
    }
    if a.in_flight == 0 {
        return Err("--in-flight must be at least 1 (with 0 no ping is ever sent)".into());
    }
    if a.batching.is_empty() || a.processes.is_empty() {
        return Err("--batching and --processes need at least one value each".into());
    }
    Ok(())
}

/// Runs the grid: per (processes, policy), one pair of nodes; per client count `runs`
/// rounds; then the latency run. With a latency run, first the floor: the same round trip
/// between two plain threads over blocking sockets.
pub fn records(a: &RemotePingPongArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    rpp::WORKER_SPIN_US.store(a.worker_spin_us, std::sync::atomic::Ordering::Relaxed);
    let mut out = Vec::new();
    if a.latency_round_trips > 0 {
        let trips = a.latency_round_trips;
        let p = params(json!({ "round_trips": trips }));
        out.extend(sampled(
            "remote-ping-pong-latency",
            "raw TCP floor: two plain threads, blocking sockets, no framework",
            &p,
            runs,
            machine,
            || {
                let h = rpp::raw_tcp_round_trips(trips)?;
                let q = |q: f64| h.value_at_quantile(q) as f64;
                Ok(vec![
                    ("latency_ns_p50", q(0.5)),
                    ("latency_ns_p99", q(0.99)),
                    ("latency_ns_p999", q(0.999)),
                ])
            },
        ));
    }
    let max_clients = a.clients.iter().copied().max().unwrap_or(1).max(1);
    for &processes in &a.processes {
        for &policy in &a.batching {
            let mut base = format!("{}, {}", policy.label(), processes.label());
            if a.worker_spin_us > 0 {
                base += &format!(", worker spin {} us", a.worker_spin_us);
            }
            let mut pair = match Pair::start(processes, policy, max_clients) {
                Ok(p) => p,
                Err(e) => {
                    let p = params(
                        json!({ "batching": policy.label(), "processes": processes.label() }),
                    );
                    out.push(Record::failed("remote-ping-pong", &base, &p, e, machine));
                    continue;
                }
            };
            for &clients in &a.clients {
                let variant = format!("{base}, {clients} clients");
                let p = params(json!({
                    "clients": clients,
                    "messages_per_client": a.messages,
                    "in_flight": a.in_flight,
                    "batching": policy.label(),
                    "processes": processes.label(),
                    "worker_spin_us": a.worker_spin_us,
                }));
                out.extend(sampled(
                    "remote-ping-pong",
                    &variant,
                    &p,
                    runs,
                    machine,
                    || {
                        let before = pair.server_stats();
                        let r = pair
                            .client()
                            .round(clients, a.messages, a.in_flight, false)?;
                        let mut m = vec![
                            (
                                "messages_per_s",
                                r.messages as f64 / r.elapsed.as_secs_f64(),
                            ),
                            ("mean_batch", r.client_batch),
                            ("elapsed_s", r.elapsed.as_secs_f64()),
                        ];
                        if let (Some(b), Some(now)) = (before, pair.server_stats()) {
                            let writes = now.writes - b.writes;
                            if writes > 0 {
                                let n = (now.messages_out - b.messages_out) as f64;
                                m.push(("mean_batch_server", n / writes as f64));
                            }
                        }
                        Ok(m)
                    },
                ));
            }
            if a.latency_round_trips > 0 {
                let trips = if policy == Policy::Fixed {
                    a.latency_round_trips.min(FIXED_LATENCY_ROUND_TRIPS)
                } else {
                    a.latency_round_trips
                };
                let variant = format!("{base}, 1 client, 1 in flight");
                let p = params(json!({
                    "round_trips": trips,
                    "batching": policy.label(),
                    "processes": processes.label(),
                    "worker_spin_us": a.worker_spin_us,
                }));
                out.extend(sampled(
                    "remote-ping-pong-latency",
                    &variant,
                    &p,
                    runs,
                    machine,
                    || {
                        let r = pair.client().round(1, trips * 2, 1, true)?;
                        let h = r.latency.ok_or("no latency recorded")?;
                        let q = |q: f64| h.value_at_quantile(q) as f64;
                        Ok(vec![
                            ("round_trips_per_s", trips as f64 / r.elapsed.as_secs_f64()),
                            ("latency_ns_p50", q(0.5)),
                            ("latency_ns_p99", q(0.99)),
                            ("latency_ns_p999", q(0.999)),
                        ])
                    },
                ));
            }
        }
    }
    out
}
