//! What the soak samples (RSS, open file descriptors, threads of a process, from /proc) and
//! the verdict on them.

use serde::Serialize;

/// One process's figures at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the workload started.
    pub t: f64,
    /// Resident set size, bytes.
    pub rss: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

/// Reads `pid`'s figures (`"self"` or a process id) at `t`; `None` where /proc is not
/// readable (not Linux, or the process is gone).
pub fn probe(pid: &str, t: f64) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    // Listing the directory opens one descriptor of its own, in every sample alike.
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Sample {
        t,
        rss: field("VmRSS:")? * 1024,
        fds,
        threads: field("Threads:")?,
    })
}

/// The most RSS may grow after the warm-up, as a fraction of its level then.
pub const MAX_RSS_GROWTH: f64 = 0.05;

/// The verdict on one process's samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Which process.
    pub process: String,
    pub passed: bool,
    /// RSS at the end of the warm-up and at the end (the median of the last three samples),
    /// bytes, and the growth between them as a fraction.
    pub rss_after_warmup: u64,
    pub rss_end: u64,
    pub rss_growth: f64,
    /// The highest descriptor and thread counts up to the end of the warm-up, and at the end.
    pub fds_warmup_max: u64,
    pub fds_end: u64,
    pub threads_warmup_max: u64,
    pub threads_end: u64,
    /// Why it failed, if it did.
    pub reasons: Vec<String>,
}

/// Judges `samples` (in time order) with the first `warmup` seconds as warm-up: RSS at the
/// end within [`MAX_RSS_GROWTH`] of its level when the warm-up ended, and no more open
/// descriptors or threads at the end than the warm-up reached.
pub fn judge(process: &str, samples: &[Sample], warmup: f64) -> Verdict {
    let split = samples.partition_point(|s| s.t < warmup);
    let mut v = Verdict {
        process: process.to_string(),
        passed: false,
        rss_after_warmup: 0,
        rss_end: 0,
        rss_growth: 0.0,
        fds_warmup_max: 0,
        fds_end: 0,
        threads_warmup_max: 0,
        threads_end: 0,
        reasons: Vec::new(),
    };
    let after = &samples[split.min(samples.len())..];
    if after.len() < 2 {
        v.reasons.push(format!(
            "{} samples after the warm-up: at least 2 are needed (run longer)",
            after.len()
        ));
        return v;
    }
    // The warm-up's levels include the first sample after it.
    let upto = &samples[..=split];
    let baseline = after[0];
    let mut last: Vec<u64> = after.iter().rev().take(3).map(|s| s.rss).collect();
    last.sort_unstable();
    let end = *after.last().expect("two samples");
    v.rss_after_warmup = baseline.rss;
    v.rss_end = last[last.len() / 2];
    v.rss_growth = v.rss_end as f64 / baseline.rss.max(1) as f64 - 1.0;
    v.fds_warmup_max = upto.iter().map(|s| s.fds).max().unwrap_or(0);
    v.threads_warmup_max = upto.iter().map(|s| s.threads).max().unwrap_or(0);
    v.fds_end = end.fds;
    v.threads_end = end.threads;
    if v.rss_growth >= MAX_RSS_GROWTH {
        v.reasons.push(format!(
            "RSS grew {:.1} % after the warm-up ({:.1} MB to {:.1} MB; at most {:.0} % allowed)",
            v.rss_growth * 100.0,
            mb(v.rss_after_warmup),
            mb(v.rss_end),
            MAX_RSS_GROWTH * 100.0
        ));
    }
    if v.fds_end > v.fds_warmup_max {
        v.reasons.push(format!(
            "open file descriptors grew: {} at the end, at most {} up to the warm-up's end",
            v.fds_end, v.fds_warmup_max
        ));
    }
    if v.threads_end > v.threads_warmup_max {
        v.reasons.push(format!(
            "threads grew: {} at the end, at most {} up to the warm-up's end",
            v.threads_end, v.threads_warmup_max
        ));
    }
    v.passed = v.reasons.is_empty();
    v
}

/// Bytes as megabytes.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64, rss: u64, fds: u64, threads: u64) -> Sample {
        Sample {
            t,
            rss,
            fds,
            threads,
        }
    }

    #[test]
    fn flat_figures_after_the_warm_up_pass() {
        let samples = [
            s(0.0, 10, 5, 3),
            s(1.0, 90, 9, 8),
            s(2.0, 100, 8, 8),
            s(3.0, 101, 9, 8),
            s(4.0, 102, 8, 7),
            s(5.0, 103, 9, 8),
        ];
        let v = judge("self", &samples, 2.0);
        assert!(v.passed, "{v:?}");
        assert_eq!((v.rss_after_warmup, v.rss_end), (100, 102));
    }

    #[test]
    fn growth_of_rss_descriptors_or_threads_fails() {
        let samples = [
            s(0.0, 100, 8, 8),
            s(1.0, 100, 8, 8),
            s(2.0, 106, 9, 9),
            s(3.0, 107, 9, 9),
            s(4.0, 108, 9, 9),
        ];
        let v = judge("self", &samples, 1.0);
        assert!(!v.passed);
        assert_eq!(v.reasons.len(), 3, "{:?}", v.reasons);
    }

    #[test]
    fn too_short_a_run_is_no_pass() {
        let v = judge("self", &[s(0.0, 1, 1, 1), s(1.0, 1, 1, 1)], 1.0);
        assert!(!v.passed);
        assert!(v.reasons[0].contains("run longer"));
    }

    #[test]
    fn this_process_can_be_probed() {
        let p = probe("self", 0.0).expect("Linux /proc");
        assert!(p.rss > 0 && p.fds >= 3 && p.threads >= 1, "{p:?}");
    }
}
