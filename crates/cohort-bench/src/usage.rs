//! CPU and memory use of this process over a run (Linux `/proc`), sampled by a helper
//! thread: the CAF latency suite's "cpu usage ave" and "ram usage ave" columns.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the resident set size is sampled.
const RSS_EVERY: Duration = Duration::from_millis(20);

/// `/proc` reports CPU times in USER_HZ ticks, 100 per second on Linux.
const TICKS_PER_S: f64 = 100.0;

/// A running sampler.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<(u64, u64)>,
    cpu0: Option<u64>,
    t0: Instant,
}

/// CPU and memory use over a sampled span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// CPU time / wall time, in percent of one core (200 = two cores busy); NaN if unknown.
    pub cpu_percent: f64,
    /// The mean resident set size, in bytes; NaN if unknown.
    pub ram_bytes: f64,
}

fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

impl Sampler {
    /// Starts sampling.
    pub fn start() -> Self {
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let (mut sum, mut n) = (0u64, 0u64);
            loop {
                if let Some(b) = rss_bytes() {
                    sum += b;
                    n += 1;
                }
                if rx.recv_timeout(RSS_EVERY) != Err(mpsc::RecvTimeoutError::Timeout) {
                    return (sum, n);
                }
            }
        });
        Self {
            stop,
            thread,
            cpu0: cpu_ticks(),
            t0: Instant::now(),
        }
    }

    /// Stops sampling and returns the averages since [`Sampler::start`].
    pub fn finish(self) -> Usage {
        let wall = self.t0.elapsed().as_secs_f64();
        let cpu = match (self.cpu0, cpu_ticks()) {
            (Some(a), Some(b)) if wall > 0.0 => (b - a) as f64 / TICKS_PER_S / wall * 100.0,
            _ => f64::NAN,
        };
        let _ = self.stop.send(());
        let (sum, n) = self.thread.join().unwrap_or((0, 0));
        Usage {
            cpu_percent: cpu,
            ram_bytes: if n == 0 {
                f64::NAN
            } else {
                sum as f64 / n as f64
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_busy_span() {
        let s = Sampler::start();
        let t0 = Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let u = s.finish();
        assert!(x > 0);
        assert!(u.ram_bytes > 0.0, "{u:?}");
        assert!(u.cpu_percent >= 0.0, "{u:?}");
    }
}
