//! The `http-load` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::http_load;
use clap::Args;
use serde_json::json;
use std::time::Duration;

/// `http-load` flags.
#[derive(Args, Clone)]
pub struct HttpLoadArgs {
    /// Kept-alive client connections, each with one request in flight.
    #[arg(long, default_value_t = 16)]
    pub connections: usize,
    /// Desk agents behind the routes (each on its own thread).
    #[arg(long, default_value_t = 2)]
    pub desks: usize,
    /// Seconds each run drives the service.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
}

/// Runs `http-load` `runs` times: requests per second and latency percentiles.
pub fn records(a: &HttpLoadArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!(
        "http_front, GET /price, {} connections, {} desk agents, tokio 2 workers",
        a.connections, a.desks
    );
    let p = params(json!({ "connections": a.connections, "desks": a.desks, "seconds": a.seconds }));
    let window = Duration::from_secs_f64(a.seconds);
    sampled("http-load", &variant, &p, runs, machine, || {
        if a.connections == 0 || a.desks == 0 {
            return Err("--connections and --desks must be at least 1".into());
        }
        let o = http_load::run_once(a.connections, a.desks, window)?;
        let q = |q: f64| o.latency_us.value_at_quantile(q) as f64;
        Ok(vec![
            (
                "requests_per_s",
                o.requests as f64 / o.elapsed.as_secs_f64(),
            ),
            ("latency_us_p50", q(0.5)),
            ("latency_us_p99", q(0.99)),
            ("errors", o.errors as f64),
        ])
    })
}
