//! The `remote-flood` subcommand: its flags and records.

use super::{params, sampled};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::remote_flood::{self, Mode};
use clap::Args;
use serde_json::json;
use std::time::Duration;

/// `remote-flood` flags.
#[derive(Args, Clone)]
pub struct RemoteFloodArgs {
    /// What disturbs the node under test, one run each (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',',
          default_values_t = vec![Mode::Heartbeat, Mode::Tiny, Mode::Connect, Mode::Stall])]
    pub mode: Vec<Mode>,
    /// Seconds of ping-pong measured undisturbed, then as long disturbed.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Connections stalling a max-length frame (stall mode).
    #[arg(long, default_value_t = 300)]
    pub stalled: usize,
    /// Seconds after the stalled connections close before resident memory is read again.
    #[arg(long = "settle-seconds", default_value_t = 10.0)]
    pub settle_seconds: f64,
}

/// Refuses impossible parameters before anything starts.
pub fn validate(a: &RemoteFloodArgs) -> Result<(), String> {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        return Err(format!(
            "--seconds {}: must be a positive number",
            a.seconds
        ));
    }
    if !(a.settle_seconds >= 0.0 && a.settle_seconds.is_finite()) {
        return Err(format!(
            "--settle-seconds {}: must be 0 or more",
            a.settle_seconds
        ));
    }
    if a.stalled == 0 || a.mode.is_empty() {
        return Err("--stalled must be at least 1 and --mode name at least one mode".into());
    }
    Ok(())
}

/// Runs each mode `runs` times: the real peer's round trips per second undisturbed and
/// disturbed (same session), what the node counted, and for the stall the resident memory.
pub fn records(a: &RemoteFloodArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let window = Duration::from_secs_f64(a.seconds);
    let settle = Duration::from_secs_f64(a.settle_seconds);
    let mut out = Vec::new();
    for &mode in &a.mode {
        let p = params(json!({ "seconds": a.seconds, "stalled": a.stalled }));
        out.extend(sampled(
            "remote-flood",
            mode.label(),
            &p,
            runs,
            machine,
            || {
                let o = remote_flood::run(mode, window, a.stalled, settle)?;
                let s = &o.stats;
                let mut m = vec![
                    ("round_trips_per_s_undisturbed", o.undisturbed),
                    ("round_trips_per_s_disturbed", o.disturbed),
                    ("disturbed_to_undisturbed", o.disturbed / o.undisturbed),
                    ("heartbeats_in", s.heartbeats_in as f64),
                    ("idle_pauses", s.idle_pauses as f64),
                    ("handshakes_rate_limited", s.handshakes_rate_limited as f64),
                    ("connections_refused", s.connections_refused as f64),
                    ("handshakes_refused", s.handshakes_refused as f64),
                    ("receive_buffer_bytes", s.receive_buffer_bytes as f64),
                ];
                if let Some((before, peak, after)) = o.rss {
                    m.push(("rss_mb_before", before as f64 / 1e6));
                    m.push(("rss_mb_peak", peak as f64 / 1e6));
                    m.push(("rss_mb_after_close", after as f64 / 1e6));
                }
                Ok(m)
            },
        ));
    }
    out
}
