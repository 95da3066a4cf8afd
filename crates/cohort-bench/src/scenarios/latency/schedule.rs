//! The rate generator's schedule (caf-latency-benchmarks.txt, "Rate generator"): messages at
//! a given rate, one at a time or in square-wave batches, to the chain heads in round-robin
//! or random order.

use std::time::Duration;

/// How the generator picks the chain head of each message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SendingOrder {
    /// A pseudo-random head per message (the CAF benchmark's 0).
    Random,
    /// Heads in turn (the CAF benchmark's 1, its default).
    RoundRobin,
}

/// When each burst of messages is due: a burst of `burst` messages every `period`, so that
/// the average rate is the requested one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub burst: u64,
    pub period: Duration,
}

impl Schedule {
    /// `rate` messages per second; `batch` 0 or 1 sends them one by one, `batch` > 1 in bursts
    /// of `batch` (a square wave).
    pub fn new(rate: f64, batch: u64) -> Self {
        let burst = batch.max(1);
        Self {
            burst,
            period: Duration::from_secs_f64(burst as f64 / rate),
        }
    }

    /// When burst `k` (from 0) is due, from the start.
    pub fn due(&self, k: u64) -> Duration {
        self.period.mul_f64(k as f64)
    }

    /// How many bursts a run of `duration` holds (at least one).
    pub fn bursts(&self, duration: Duration) -> u64 {
        ((duration.as_secs_f64() / self.period.as_secs_f64()).floor() as u64).max(1)
    }
}

/// Picks chain heads: round-robin, or a xorshift sequence (no dependency; its quality is
/// plenty to spread messages over chains).
pub struct HeadPicker {
    order: SendingOrder,
    chains: usize,
    next: usize,
    state: u64,
}

impl HeadPicker {
    pub fn new(order: SendingOrder, chains: usize) -> Self {
        Self {
            order,
            chains,
            next: 0,
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// The next head's index in `0..chains`.
    pub fn pick(&mut self) -> usize {
        match self.order {
            SendingOrder::RoundRobin => {
                let i = self.next;
                self.next = (self.next + 1) % self.chains;
                i
            }
            SendingOrder::Random => {
                self.state ^= self.state << 13;
                self.state ^= self.state >> 7;
                self.state ^= self.state << 17;
                (self.state % self.chains as u64) as usize
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_wave_keeps_the_average_rate() {
        let one = Schedule::new(1000.0, 0);
        assert_eq!(one.burst, 1);
        assert_eq!(one.period, Duration::from_millis(1));
        assert_eq!(one.bursts(Duration::from_secs(2)), 2000);
        let wave = Schedule::new(1000.0, 50);
        assert_eq!(wave.burst, 50);
        assert_eq!(wave.period, Duration::from_millis(50));
        assert_eq!(wave.bursts(Duration::from_secs(2)) * wave.burst, 2000);
        assert_eq!(wave.due(3), Duration::from_millis(150));
    }

    #[test]
    fn round_robin_visits_every_head_in_turn() {
        let mut p = HeadPicker::new(SendingOrder::RoundRobin, 3);
        let got: Vec<usize> = (0..6).map(|_| p.pick()).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn random_order_reaches_every_head() {
        let mut p = HeadPicker::new(SendingOrder::Random, 4);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            seen[p.pick()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }
}
