//! One measured run: a child process (cohort-bench itself or a peer binary) that prints its
//! result as JSON, under a time limit. Each run is a fresh process on both sides, so no
//! framework inherits another's warm heap.

use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How often a running child is checked for exit.
const POLL: Duration = Duration::from_millis(5);

/// Runs `program args...`, returns its standard output, or why it failed (non-zero exit,
/// killed, time limit).
pub fn output_of(program: &Path, args: &[String], limit: Duration) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    // Drain both pipes on threads so that a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s (killed)", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => return Err(format!("waiting for the run: {e}")),
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    if status.success() {
        return Ok(stdout);
    }
    // A wrong result still prints its JSON line with the error: prefer that.
    if let Some(e) = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v.get("error").and_then(Value::as_str).map(String::from))
    {
        return Err(e);
    }
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(format!("exited with {status}: {last}"))
}

/// The elapsed seconds of a peer run: its JSON line, checked `ok` and the expected message
/// count.
pub fn peer_elapsed(stdout: &str, messages: u64) -> Result<f64, String> {
    let v: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("no JSON line in the output: {:?}", stdout.trim()))?;
    if v.get("ok").and_then(Value::as_bool) != Some(true) {
        let e = v.get("error").and_then(Value::as_str).unwrap_or("not ok");
        return Err(e.to_string());
    }
    let got = v.get("messages").and_then(Value::as_u64).unwrap_or(0);
    if got != messages {
        return Err(format!("handled {got} messages, expected {messages}"));
    }
    v.get("elapsed_s")
        .and_then(Value::as_f64)
        .filter(|s| *s > 0.0)
        .ok_or_else(|| "no positive elapsed_s in the output".into())
}

/// The elapsed seconds of a cohort-bench run (its JSON records): `elapsed_s`, or, where a
/// scenario reports a rate only (ping-pong, async-ask), `messages` / `messages_per_s` (or
/// `round_trips_per_s`); with the same
/// figure of the scenario's floor when the records carry one.
pub fn cohort_elapsed(stdout: &str, messages: u64) -> Result<(f64, Option<f64>), String> {
    let records: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if records.is_empty() {
        return Err(format!("no JSON record in the output: {:?}", stdout.trim()));
    }
    if let Some(bad) = records
        .iter()
        .find(|r| r.get("ok").and_then(Value::as_bool) != Some(true))
    {
        let e = bad.get("error").and_then(Value::as_str).unwrap_or("not ok");
        return Err(e.to_string());
    }
    let metric = |name: &str, field: &str| {
        records
            .iter()
            .find(|r| r.get("metric").and_then(Value::as_str) == Some(name))
            .and_then(|r| r.get(field).and_then(Value::as_f64))
    };
    if let Some(s) = metric("elapsed_s", "value") {
        return Ok((s, metric("elapsed_s", "floor")));
    }
    let floor = metric("messages_per_s", "floor")
        .filter(|r| *r > 0.0)
        .map(|r| messages as f64 / r);
    match metric("messages_per_s", "value").or_else(|| metric("round_trips_per_s", "value")) {
        Some(rate) if rate > 0.0 => Ok((messages as f64 / rate, floor)),
        _ => Err("neither elapsed_s, messages_per_s nor round_trips_per_s in the records".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_peer_lines() {
        let ok = r#"{"framework":"x","scenario":"s","elapsed_s":0.5,"messages":10,"ok":true}"#;
        assert_eq!(peer_elapsed(ok, 10), Ok(0.5));
        assert!(peer_elapsed(ok, 11).unwrap_err().contains("expected 11"));
        let bad = r#"{"framework":"x","scenario":"s","ok":false,"error":"wrong sum: 1"}"#;
        assert_eq!(peer_elapsed(bad, 10), Err("wrong sum: 1".into()));
        assert!(peer_elapsed("garbage", 1).is_err());
    }

    #[test]
    fn reads_cohort_records() {
        let rate = r#"{"metric":"messages_per_s","value":100.0,"ok":true}"#;
        assert_eq!(cohort_elapsed(rate, 50), Ok((0.5, None)));
        let both = format!(
            "{rate}\n{}",
            r#"{"metric":"elapsed_s","value":0.25,"ok":true}"#
        );
        assert_eq!(cohort_elapsed(&both, 50), Ok((0.25, None)));
        let failed = r#"{"metric":"error","value":null,"ok":false,"error":"wrong sum"}"#;
        assert_eq!(cohort_elapsed(failed, 1), Err("wrong sum".into()));
    }

    #[test]
    fn reports_a_failing_program() {
        let e = output_of(Path::new("/nonexistent/peer"), &[], Duration::from_secs(1));
        assert!(e.unwrap_err().contains("cannot start"));
        let sh = Path::new("/bin/sh");
        let e = output_of(
            sh,
            &["-c".into(), "echo boom >&2; exit 3".into()],
            Duration::from_secs(5),
        );
        assert!(e.unwrap_err().contains("boom"));
    }
}
