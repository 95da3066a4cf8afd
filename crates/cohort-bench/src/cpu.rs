//! CPU time of this process's threads, from `/proc/self/task/*/schedstat` (Linux; the first
//! field is the time spent on a CPU, in nanoseconds).

use std::time::Duration;

/// The CPU time of every live thread of this process whose name starts with `prefix` (all
/// threads for `""`). `None` where `/proc` is unavailable.
pub fn threads_named(prefix: &str) -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let path = task.path();
        // A thread that exits between the listing and the reads is skipped.
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(path.join("schedstat")) else {
            continue;
        };
        total += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(Duration::from_nanos(total))
}
