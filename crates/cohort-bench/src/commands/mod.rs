//! The subcommands of the scenarios, one module each: its flags and how its runs become
//! records (the `quick` and `full` plans build the same flags).

pub mod async_interop;
pub mod chains;
pub mod chaos;
pub mod chaos_runtime;
pub mod churn;
pub mod cluster;
pub mod counting_actor;
pub mod fan_out;
pub mod floor;
pub mod http_load;
pub mod idle_agents;
pub mod idle_cpu;
pub mod latency;
pub mod locality;
pub mod parallel_thread_ring;
pub mod ping_pong;
pub mod producer_consumer;
pub mod remote_flood;
pub mod remote_ping_pong;
pub mod restart;
pub mod self_send;
pub mod skynet;
pub mod soak;
pub mod state_switch;
pub mod thread_ring;
pub mod timers;

use crate::machine::Machine;
use crate::report::Record;
use serde_json::{Map, Value};

/// A subcommand and its flags as a command line (`["skynet", "--leaves", "1000", ...]`), for
/// a step run in a process of its own.
pub fn command_line(subcommand: &str, flags: &[(&str, String)]) -> Vec<String> {
    let mut out = vec![subcommand.to_owned()];
    for (flag, value) in flags {
        out.extend([(*flag).to_owned(), value.clone()]);
    }
    out
}

/// `a` with the fields of `b` added (both JSON objects; otherwise `a` unchanged).
pub fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

/// The fields of a JSON object (none for any other value).
pub fn params(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Runs `run` `runs` times; each run returns its (metric, value) samples, in the same order
/// every time. One record per metric, or one failed record at the first error.
pub fn sampled(
    scenario: &str,
    variant: &str,
    p: &Map<String, Value>,
    runs: usize,
    machine: &Machine,
    mut run: impl FnMut() -> Result<Vec<(&'static str, f64)>, String>,
) -> Vec<Record> {
    let mut metrics: Vec<(&'static str, Vec<f64>)> = Vec::new();
    for _ in 0..runs.max(1) {
        match run() {
            Ok(samples) => {
                for (metric, v) in samples {
                    push_sample(&mut metrics, metric, v);
                }
            }
            Err(e) => return vec![Record::failed(scenario, variant, p, e, machine)],
        }
    }
    metrics
        .iter()
        .map(|(metric, vs)| Record::from_samples(scenario, variant, p, metric, vs, machine))
        .collect()
}

/// Samples grouped by metric, in first-seen order.
pub fn group<'a>(samples: &[(&'a str, f64)]) -> Vec<(&'a str, Vec<f64>)> {
    let mut out = Vec::new();
    for &(metric, v) in samples {
        push_sample(&mut out, metric, v);
    }
    out
}

/// Adds `v` to `metric`'s samples; a metric not seen yet goes last, so records come out in
/// the order a run reports its metrics.
pub fn push_sample<'a>(metrics: &mut Vec<(&'a str, Vec<f64>)>, metric: &'a str, v: f64) {
    match metrics.iter_mut().find(|(m, _)| *m == metric) {
        Some((_, vs)) => vs.push(v),
        None => metrics.push((metric, vec![v])),
    }
}

/// Round trips per second and the round-trip latency percentiles (p50, p99, p99.9) of `count`
/// round trips that took `elapsed`, their latencies in `latency` (nanoseconds); the rate alone
/// when no round trip was timed (an empty `latency`).
pub fn round_trip_metrics(
    count: u64,
    elapsed: std::time::Duration,
    latency: &hdrhistogram::Histogram<u64>,
) -> Vec<(&'static str, f64)> {
    let mut out = vec![("round_trips_per_s", count as f64 / elapsed.as_secs_f64())];
    if !latency.is_empty() {
        let q = |q: f64| latency.value_at_quantile(q) as f64;
        out.extend([
            ("latency_ns_p50", q(0.5)),
            ("latency_ns_p99", q(0.99)),
            ("latency_ns_p999", q(0.999)),
        ]);
    }
    out
}
