//! The remote cases of the comparison: Akka's RemotePingPong between two processes on
//! loopback (1, 10 and 30 clients, each keeping 50 pings in flight; pings and pongs counted)
//! and the one-client round trip's median (one ping in flight). Only the frameworks with a
//! remote port run them; a row holds no cell for the others.

use super::plan::{Case, Size};
use serde_json::Value;

/// The frameworks with a remote port.
const REMOTE_FRAMEWORKS: [&str; 3] = ["cohort", "pekko", "protoactor"];

/// The round-trip case's id: its "elapsed" is the median round trip, its "messages" 1.
pub const ROUND_TRIP_P50: &str = "remote-round-trip-p50";

/// Pings each client keeps outstanding (cohort-bench remote-ping-pong's default).
const IN_FLIGHT: &str = "50";

/// Whether `framework` runs `case`.
pub fn runs(case: &Case, framework: &str) -> bool {
    !case.id.starts_with("remote-") || REMOTE_FRAMEWORKS.contains(&framework)
}

/// cohort-bench's remote-ping-pong with adaptive batching, the echo node in a child process.
fn cohort_args(clients: &str, messages: &str, in_flight: &str, round_trips: &str) -> Vec<String> {
    [
        "remote-ping-pong",
        "--clients",
        clients,
        "--messages",
        messages,
        "--in-flight",
        in_flight,
        "--batching",
        "adaptive",
        "--processes",
        "two",
        "--latency-round-trips",
        round_trips,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The remote cases at `size`.
pub fn cases(size: Size) -> Vec<Case> {
    let (messages, round_trips): (u64, u64) = match size {
        Size::Full => (200_000, 20_000),
        Size::Quick => (20_000, 2_000),
        Size::Tiny => (200, 100),
    };
    let m = messages.to_string();
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out: Vec<Case> = [
        (
            1u64,
            "remote-ping-pong-1",
            "RemotePingPong, 2 processes, 1 client",
        ),
        (
            10,
            "remote-ping-pong-10",
            "RemotePingPong, 2 processes, 10 clients",
        ),
        (
            30,
            "remote-ping-pong-30",
            "RemotePingPong, 2 processes, 30 clients",
        ),
    ]
    .into_iter()
    .map(|(clients, id, title)| {
        let c = clients.to_string();
        Case {
            id,
            title,
            cohort: cohort_args(&c, &m, IN_FLIGHT, "0"),
            peer: strs(&[
                "remote-ping-pong",
                "--clients",
                &c,
                "--messages",
                &m,
                "--in-flight",
                IN_FLIGHT,
            ]),
            messages: clients * 2 * (messages / 2),
        }
    })
    .collect();
    let n = round_trips.to_string();
    out.push(Case {
        id: ROUND_TRIP_P50,
        title: "remote round trip, 1 client, 1 in flight: elapsed = the median round trip",
        // One ping-pong (the throughput round cohort-bench always runs), then the latency run.
        cohort: cohort_args("1", "2", "1", &n),
        peer: strs(&["remote-latency", "--round-trips", &n]),
        messages: 1,
    });
    out
}

/// cohort's result for `case` from cohort-bench's records: the round-trip median for the
/// latency case (the framework's, not the raw TCP floor's), else the run's elapsed seconds.
pub fn cohort_elapsed(case: &Case, stdout: &str) -> Result<f64, String> {
    if case.id != ROUND_TRIP_P50 {
        return super::runner::cohort_elapsed(stdout, case.messages);
    }
    let p50 = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r.get("scenario").and_then(Value::as_str) == Some("remote-ping-pong-latency"))
        .filter(|r| {
            !r.get("variant")
                .and_then(Value::as_str)
                .unwrap_or("")
                .starts_with("raw TCP")
        })
        .find(|r| r.get("metric").and_then(Value::as_str) == Some("latency_ns_p50"));
    match p50 {
        Some(r) if r.get("ok").and_then(Value::as_bool) == Some(true) => r
            .get("value")
            .and_then(Value::as_f64)
            .filter(|v| *v > 0.0)
            .map(|ns| ns / 1e9)
            .ok_or_else(|| "no positive latency_ns_p50".into()),
        Some(r) => Err(r
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("not ok")
            .to_string()),
        None => Err(format!(
            "no remote-ping-pong-latency p50 record in the output: {:?}",
            stdout.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_cases_run_only_where_ported() {
        let c = cases(Size::Full);
        assert_eq!(c.len(), 4);
        assert_eq!(c[2].messages, 6_000_000);
        assert!(runs(&c[0], "pekko") && runs(&c[0], "cohort") && !runs(&c[0], "actix"));
        let local = &super::super::plan::cases(Size::Tiny)[0];
        assert!(runs(local, "actix"));
    }

    #[test]
    fn reads_cohorts_round_trip_median() {
        let case = cases(Size::Tiny).pop().unwrap();
        let out = [
            r#"{"scenario":"remote-ping-pong-latency","variant":"raw TCP floor","metric":"latency_ns_p50","value":10.0,"ok":true}"#,
            r#"{"scenario":"remote-ping-pong","variant":"x","metric":"elapsed_s","value":0.1,"ok":true}"#,
            r#"{"scenario":"remote-ping-pong-latency","variant":"adaptive","metric":"latency_ns_p50","value":40000.0,"ok":true}"#,
        ]
        .join("\n");
        assert_eq!(cohort_elapsed(&case, &out), Ok(40e-6));
        assert!(cohort_elapsed(&case, "").is_err());
    }
}
