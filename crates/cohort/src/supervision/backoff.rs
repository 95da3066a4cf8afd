//! [`Backoff`]: how long a supervisor waits before it restarts a child.

use std::time::Duration;

/// The delay before a restart, as a function of the child's attempt number (its restarts
/// within the supervisor's intensity window, this one included: 1 for the first).
///
/// ```
/// use cohort::supervision::Backoff;
/// use std::time::Duration;
/// let ms = Duration::from_millis;
/// let b = Backoff::exponential(ms(10), ms(100));
/// assert_eq!(b.delay(1, 0), ms(10));
/// assert_eq!(b.delay(2, 0), ms(20));
/// assert_eq!(b.delay(9, 0), ms(100)); // capped
/// assert_eq!(Backoff::fixed(ms(5)).delay(7, 0), ms(5));
/// assert_eq!(Backoff::default(), Backoff::None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Backoff {
    /// Restart at once (still through the supervisor's mailbox, so a restart loop never
    /// recurses and other messages interleave).
    #[default]
    None,
    /// The same delay before every restart.
    Fixed(Duration),
    /// `initial`, doubled at each attempt, never above `max`; with `jitter` in `0.0..=1.0`,
    /// a random part of up to `jitter` times the delay is taken off (so that children failing
    /// together do not restart together).
    Exponential {
        /// The first delay.
        initial: Duration,
        /// The cap.
        max: Duration,
        /// The random fraction taken off, `0.0..=1.0`.
        jitter: f64,
    },
}

impl Backoff {
    /// A fixed delay.
    pub fn fixed(delay: Duration) -> Self {
        Backoff::Fixed(delay)
    }

    /// Exponential from `initial`, capped at `max`, without jitter (see [`Backoff::jitter`]).
    pub fn exponential(initial: Duration, max: Duration) -> Self {
        Backoff::Exponential {
            initial,
            max,
            jitter: 0.0,
        }
    }

    /// Sets the jitter of an exponential back-off (no effect on the others).
    ///
    /// ```
    /// use cohort::supervision::Backoff;
    /// use std::time::Duration;
    /// let b = Backoff::exponential(Duration::from_millis(10), Duration::from_secs(1)).jitter(0.5);
    /// let d = b.delay(1, u64::MAX);
    /// assert!(d >= Duration::from_millis(5) && d <= Duration::from_millis(10));
    /// ```
    pub fn jitter(self, fraction: f64) -> Self {
        match self {
            Backoff::Exponential { initial, max, .. } => Backoff::Exponential {
                initial,
                max,
                jitter: fraction,
            },
            other => other,
        }
    }

    /// What is wrong with these parameters, if anything.
    pub(super) fn check(&self) -> Result<(), &'static str> {
        match *self {
            Backoff::Exponential { initial, max, .. } if initial > max => {
                Err("the exponential back-off's `initial` delay is above its `max`")
            }
            Backoff::Exponential { jitter, .. } if !(0.0..=1.0).contains(&jitter) => {
                Err("the exponential back-off's jitter must be within 0.0..=1.0")
            }
            _ => Ok(()),
        }
    }

    /// The delay before attempt `attempt` (1 for the first restart); `random` draws the
    /// jitter (any value; `u64::MAX` takes off the most).
    pub fn delay(&self, attempt: u32, random: u64) -> Duration {
        match *self {
            Backoff::None => Duration::ZERO,
            Backoff::Fixed(d) => d,
            Backoff::Exponential {
                initial,
                max,
                jitter,
            } => {
                let doublings = attempt.saturating_sub(1).min(63);
                let d = initial
                    .checked_mul(1u32 << doublings.min(31))
                    .unwrap_or(max)
                    .min(max);
                if jitter <= 0.0 {
                    return d;
                }
                let fraction = (random as f64 / u64::MAX as f64) * jitter.min(1.0);
                d.mul_f64(1.0 - fraction)
            }
        }
    }
}

/// A small generator for the jitter (xorshift64*): no dependency for a few draws per restart.
#[derive(Debug)]
pub(super) struct Jitter(u64);

impl Jitter {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    pub(super) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_saturates_at_the_cap() {
        let b = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(30));
        assert_eq!(b.delay(u32::MAX, 0), Duration::from_secs(30));
        assert_eq!(b.delay(0, 0), Duration::from_secs(1));
    }

    #[test]
    fn jitter_only_shortens() {
        let b =
            Backoff::exponential(Duration::from_millis(100), Duration::from_secs(1)).jitter(1.0);
        let mut j = Jitter::new(7);
        for _ in 0..100 {
            assert!(b.delay(1, j.next()) <= Duration::from_millis(100));
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let ms = Duration::from_millis;
        assert!(Backoff::exponential(ms(2), ms(1)).check().is_err());
        assert!(
            Backoff::exponential(ms(1), ms(2))
                .jitter(1.5)
                .check()
                .is_err()
        );
        assert!(Backoff::fixed(ms(0)).check().is_ok());
    }
}
