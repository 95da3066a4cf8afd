//! The remote cases: RemotePingPong between two processes on loopback (1, 10 and 30 clients,
//! each 200,000 messages with 50 pings in flight) and the one-client round trip's median, on
//! cohort (`cohort-bench remote-ping-pong --processes two`) and on the peers that have a
//! remote port. The others have no cell in these rows.

use super::plan::{Case, Kind, Size};
use serde_json::Value;

/// The peers with a remote port, in the order of the table.
pub const REMOTE_PEERS: [&str; 2] = ["pekko", "protoactor"];

/// Pings each client keeps outstanding (cohort-bench remote-ping-pong's default).
const IN_FLIGHT: u64 = 50;

/// Client counts of the throughput rows.
const CLIENTS: [u64; 3] = [1, 10, 30];

/// Whether `framework` runs `kind`'s cases.
pub fn runs(framework: &str, kind: Kind) -> bool {
    match kind {
        Kind::Local => true,
        // The asks are ported to the Rust peers only.
        Kind::Ask | Kind::Latency(_) => {
            framework == "cohort" || super::peers::RUST_PEERS.contains(&framework)
        }
        Kind::Remote | Kind::RoundTripP50 => {
            framework == "cohort" || REMOTE_PEERS.contains(&framework)
        }
    }
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// The remote cases at `size`: messages per client and round trips of the latency row.
pub fn cases(size: Size) -> Vec<Case> {
    let (messages, round_trips): (u64, u64) = match size {
        Size::Full => (200_000, 20_000),
        Size::Quick => (20_000, 2_000),
        Size::Tiny => (200, 50),
    };
    let (m, w, r) = (
        messages.to_string(),
        IN_FLIGHT.to_string(),
        round_trips.to_string(),
    );
    let mut out: Vec<Case> = CLIENTS
        .iter()
        .map(|&clients| {
            let c = clients.to_string();
            // The round's shape, the same on cohort and on the peers.
            let shape = args(&[
                "remote-ping-pong",
                "--clients",
                &c,
                "--messages",
                &m,
                "--in-flight",
                &w,
            ]);
            Case {
                id: match clients {
                    1 => "remote-ping-pong-1",
                    10 => "remote-ping-pong-10",
                    _ => "remote-ping-pong-30",
                },
                title: match clients {
                    1 => "RemotePingPong, 1 client, two processes on loopback",
                    10 => "RemotePingPong, 10 clients, two processes on loopback",
                    _ => "RemotePingPong, 30 clients, two processes on loopback",
                },
                cohort: [
                    shape.clone(),
                    args(&[
                        "--batching",
                        "adaptive",
                        "--processes",
                        "two",
                        "--latency-round-trips",
                        "0",
                    ]),
                ]
                .concat(),
                peer: shape,
                messages: clients * (messages / 2) * 2,
                kind: Kind::Remote,
            }
        })
        .collect();
    out.push(Case {
        id: "remote-round-trip-p50",
        title: "remote round trip p50, 1 client, 1 ping in flight, two processes",
        // One throughput round of a single ping and pong runs first (the command always runs
        // one); the latency run's record is the one read.
        cohort: args(&[
            "remote-ping-pong",
            "--clients",
            "1",
            "--messages",
            "2",
            "--batching",
            "adaptive",
            "--processes",
            "two",
            "--latency-round-trips",
            &r,
        ]),
        peer: args(&["remote-ping-pong-latency", "--round-trips", &r]),
        messages: 2 * round_trips,
        kind: Kind::RoundTripP50,
    });
    out
}

/// The round trip's median in seconds from a peer's JSON line (`p50_ns`), its message count
/// checked.
pub fn peer_p50(stdout: &str, messages: u64) -> Result<f64, String> {
    peer_latency(stdout, messages, 50)
}

/// The round trip's percentile `q` in seconds from a peer's JSON line (`p<q>_ns`), its
/// message count checked.
pub fn peer_latency(stdout: &str, messages: u64, q: u8) -> Result<f64, String> {
    super::runner::peer_elapsed(stdout, messages)?;
    let field = format!("p{q}_ns");
    stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v.get(&field).and_then(Value::as_f64))
        .filter(|ns| *ns > 0.0)
        .map(|ns| ns / 1e9)
        .ok_or_else(|| format!("no positive {field} in the output"))
}

/// The round trip's median in seconds from cohort-bench's records: the latency run's
/// `latency_ns_p50` (not the raw TCP floor's).
pub fn cohort_p50(stdout: &str) -> Result<f64, String> {
    cohort_latency(stdout, "latency_ns_p50", |v| v.ends_with("1 in flight"))
}

/// The round trip's percentile `q` in seconds from an `async-ask` run's records.
pub fn cohort_ask_latency(stdout: &str, q: u8) -> Result<f64, String> {
    cohort_latency(stdout, &format!("latency_ns_p{q}"), |_| true)
}

/// The value of the first record of `metric` whose variant `variant` accepts, in seconds.
fn cohort_latency(
    stdout: &str,
    metric: &str,
    variant: impl Fn(&str) -> bool,
) -> Result<f64, String> {
    let records: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if let Some(bad) = records
        .iter()
        .find(|r| r.get("ok").and_then(Value::as_bool) != Some(true))
    {
        let e = bad.get("error").and_then(Value::as_str).unwrap_or("not ok");
        return Err(e.to_string());
    }
    records
        .iter()
        .find(|r| {
            r.get("metric").and_then(Value::as_str) == Some(metric)
                && r.get("variant")
                    .and_then(Value::as_str)
                    .is_some_and(&variant)
        })
        .and_then(|r| r.get("value").and_then(Value::as_f64))
        .filter(|ns| *ns > 0.0)
        .map(|ns| ns / 1e9)
        .ok_or_else(|| format!("no {metric} record of the latency run in the output"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_and_who_runs_them() {
        let c = cases(Size::Full);
        assert_eq!(c.len(), 4);
        assert_eq!(c[2].messages, 30 * 200_000);
        assert_eq!(c[3].kind, Kind::RoundTripP50);
        assert!(runs("cohort", Kind::Remote) && runs("protoactor", Kind::RoundTripP50));
        assert!(!runs("actix", Kind::Remote) && runs("actix", Kind::Local));
    }

    #[test]
    fn reads_the_medians() {
        let peer = r#"{"framework":"protoactor","scenario":"remote-ping-pong-latency","elapsed_s":0.1,"messages":100,"p50_ns":150000,"ok":true}"#;
        assert_eq!(peer_p50(peer, 100), Ok(150e-6));
        assert!(peer_p50(peer, 10).is_err());
        let cohort = [
            r#"{"scenario":"remote-ping-pong-latency","variant":"raw TCP floor: two plain threads","metric":"latency_ns_p50","value":9000.0,"ok":true}"#,
            r#"{"scenario":"remote-ping-pong-latency","variant":"adaptive batching, two processes, 1 client, 1 in flight","metric":"latency_ns_p50","value":30000.0,"ok":true}"#,
        ]
        .join("\n");
        assert_eq!(cohort_p50(&cohort), Ok(30e-6));
        assert!(cohort_p50(r#"{"metric":"x","ok":false,"error":"boom"}"#).is_err());
    }
}
