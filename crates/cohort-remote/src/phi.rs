//! The phi-accrual failure detector (Hayashibara et al., as in Akka): instead of a yes/no
//! timeout, a suspicion level `phi` that grows with the time since the last sign of life,
//! scaled by how regular the peer's signs of life have been.
//!
//! `phi = -log10(P(a sign of life comes later than now))`, with the inter-arrival times
//! modelled as a normal distribution (mean and standard deviation of the last samples, the
//! mean raised by the acceptable pause). `phi = 1` means a 10 % chance that declaring the
//! peer down is a mistake, `phi = 10` one in ten billion.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Settings of a [`PhiAccrual`] detector; defaults in [`crate::defaults`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhiConfig {
    /// Phi above which the peer is declared down
    /// ([`PHI_THRESHOLD`](crate::defaults::PHI_THRESHOLD)).
    pub threshold: f64,
    /// Samples kept ([`PHI_MAX_SAMPLES`](crate::defaults::PHI_MAX_SAMPLES)).
    pub max_samples: usize,
    /// The smallest standard deviation assumed
    /// ([`PHI_MIN_STD_DEVIATION`](crate::defaults::PHI_MIN_STD_DEVIATION)).
    pub min_std_deviation: Duration,
    /// Added to the mean interval
    /// ([`ACCEPTABLE_HEARTBEAT_PAUSE`](crate::defaults::ACCEPTABLE_HEARTBEAT_PAUSE)).
    pub acceptable_pause: Duration,
    /// The interval assumed before the first samples (the heartbeat interval).
    pub first_interval: Duration,
}

impl Default for PhiConfig {
    fn default() -> Self {
        use crate::defaults::*;
        Self {
            threshold: PHI_THRESHOLD,
            max_samples: PHI_MAX_SAMPLES,
            min_std_deviation: PHI_MIN_STD_DEVIATION,
            acceptable_pause: ACCEPTABLE_HEARTBEAT_PAUSE,
            first_interval: HEARTBEAT_INTERVAL,
        }
    }
}

/// A phi-accrual failure detector for one peer.
///
/// ```
/// use cohort_remote::phi::{PhiAccrual, PhiConfig};
/// use std::time::{Duration, Instant};
///
/// let t0 = Instant::now();
/// let mut d = PhiAccrual::new(PhiConfig::default(), t0);
/// for i in 1..=10 {
///     d.heartbeat(t0 + Duration::from_secs(i)); // one a second
/// }
/// assert!(d.is_available(t0 + Duration::from_secs(11)));
/// assert!(!d.is_available(t0 + Duration::from_secs(60)));
/// ```
#[derive(Debug, Clone)]
pub struct PhiAccrual {
    config: PhiConfig,
    intervals: VecDeque<f64>,
    sum: f64,
    sum_sq: f64,
    last: Instant,
}

impl PhiAccrual {
    /// A detector whose first sign of life is at `now`; it starts with two samples of
    /// `first_interval` (one on each side of it, as Akka seeds its history).
    pub fn new(config: PhiConfig, now: Instant) -> Self {
        let mut d = Self {
            config,
            intervals: VecDeque::with_capacity(config.max_samples.max(2)),
            sum: 0.0,
            sum_sq: 0.0,
            last: now,
        };
        let first = config.first_interval.as_secs_f64() * 1000.0;
        let std = first / 4.0;
        d.push(first - std);
        d.push(first + std);
        d
    }

    fn push(&mut self, ms: f64) {
        if self.intervals.len() >= self.config.max_samples.max(2)
            && let Some(old) = self.intervals.pop_front()
        {
            self.sum -= old;
            self.sum_sq -= old * old;
        }
        self.intervals.push_back(ms);
        self.sum += ms;
        self.sum_sq += ms * ms;
    }

    /// Records a sign of life at `now`.
    pub fn heartbeat(&mut self, now: Instant) {
        let ms = now.saturating_duration_since(self.last).as_secs_f64() * 1000.0;
        self.last = now;
        self.push(ms);
    }

    /// The suspicion level at `now`.
    pub fn phi(&self, now: Instant) -> f64 {
        let n = self.intervals.len() as f64;
        let mean = self.sum / n;
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        let min_std = self.config.min_std_deviation.as_secs_f64() * 1000.0;
        let std = var.sqrt().max(min_std);
        let mean = mean + self.config.acceptable_pause.as_secs_f64() * 1000.0;
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64() * 1000.0;
        // Akka's logistic approximation of the normal CDF's tail.
        let y = (elapsed - mean) / std;
        let e = (-y * (1.5976 + 0.070566 * y * y)).exp();
        if elapsed > mean {
            -(e / (1.0 + e)).log10()
        } else {
            -(1.0 - 1.0 / (1.0 + e)).log10()
        }
    }

    /// Time since the last sign of life.
    pub fn since_last(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last)
    }

    /// Whether phi at `now` is under the threshold.
    pub fn is_available(&self, now: Instant) -> bool {
        self.phi(now) < self.config.threshold
    }

    /// The silence after which the peer is declared down, given the samples so far (for
    /// tests and diagnostics): the smallest whole number of milliseconds at which phi
    /// reaches the threshold.
    pub fn time_to_suspect(&self) -> Duration {
        let (mut lo, mut hi) = (0u64, 3_600_000u64);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.phi(self.last + Duration::from_millis(mid)) >= self.config.threshold {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Duration::from_millis(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phi_grows_with_silence() {
        let t0 = Instant::now();
        let mut d = PhiAccrual::new(PhiConfig::default(), t0);
        for i in 1..=20 {
            d.heartbeat(t0 + Duration::from_millis(1000 * i));
        }
        let last = t0 + Duration::from_millis(20_000);
        let mut prev = -1.0;
        for ms in [0u64, 1000, 2000, 3000, 4000, 5000, 8000] {
            let p = d.phi(last + Duration::from_millis(ms));
            assert!(p >= prev, "phi must not decrease: {p} after {prev}");
            prev = p;
        }
        assert!(d.is_available(last + Duration::from_millis(1000)));
        assert!(!d.is_available(last + Duration::from_millis(10_000)));
    }

    #[test]
    fn a_regular_peer_is_suspected_after_about_the_pause_plus_the_interval() {
        let t0 = Instant::now();
        let mut d = PhiAccrual::new(PhiConfig::default(), t0);
        for i in 1..=50 {
            d.heartbeat(t0 + Duration::from_millis(1000 * i));
        }
        let t = d.time_to_suspect();
        // mean 1 s + pause 3 s, std at its 100 ms floor: phi 10 some 0.5 s later.
        assert!(
            t > Duration::from_secs(4) && t < Duration::from_secs(5),
            "{t:?}"
        );
    }

    #[test]
    fn old_samples_are_forgotten() {
        let cfg = PhiConfig {
            max_samples: 5,
            acceptable_pause: Duration::ZERO,
            ..PhiConfig::default()
        };
        let t0 = Instant::now();
        let mut d = PhiAccrual::new(cfg, t0);
        let mut t = t0;
        for _ in 0..5 {
            t += Duration::from_secs(10);
            d.heartbeat(t);
        }
        for _ in 0..5 {
            t += Duration::from_millis(100);
            d.heartbeat(t);
        }
        // Only the 100 ms intervals remain: 2 s of silence is very suspicious.
        assert!(!d.is_available(t + Duration::from_secs(2)));
    }
}
