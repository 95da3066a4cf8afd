//! A token bucket refilled lazily: the clock is read only when the bucket is empty, so a
//! caller within its rate pays one decrement per token. The listener's handshakes per source
//! address and each connection's idle frames (frames that hand nothing to a local mailbox:
//! heartbeats, `Ack`s with nothing new, messages refused or undeliverable here) spend one.

use std::time::{Duration, Instant};

/// The part of a second's budget a paused reader waits for before it reads on: waking for
/// every single token would cost more than the frames it admits.
const RESUME_FRACTION: u32 = 16;

/// `rate` tokens a second, a burst of as many.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    tokens: u32,
    /// Per second, and the burst.
    rate: u32,
    /// Up to when the tokens earned have been added (fractions of a token carry over).
    refilled: Instant,
}

impl TokenBucket {
    /// A full bucket of `rate` tokens a second (a burst of as many).
    pub(crate) fn new(rate: u32, now: Instant) -> Self {
        Self {
            tokens: rate,
            rate,
            refilled: now,
        }
    }

    /// Spends a token; `false` when the bucket is empty even after refilling it.
    #[inline]
    pub(crate) fn spend(&mut self) -> bool {
        self.spend_with(Instant::now)
    }

    /// [`TokenBucket::spend`] with the caller's clock.
    pub(crate) fn spend_at(&mut self, now: Instant) -> bool {
        self.spend_with(|| now)
    }

    /// Spends a token, reading the clock (`now`) only when the bucket is empty.
    #[inline]
    fn spend_with(&mut self, now: impl FnOnce() -> Instant) -> bool {
        if self.tokens == 0 && !self.refill(now()) {
            return false;
        }
        self.tokens -= 1;
        true
    }

    /// Adds the tokens earned since the last refill (at most a full bucket); whether the
    /// bucket holds any now.
    fn refill(&mut self, now: Instant) -> bool {
        let rate = f64::from(self.rate);
        let earned = now.saturating_duration_since(self.refilled).as_secs_f64() * rate;
        if earned >= 1.0 {
            let room = self.rate - self.tokens;
            if earned >= f64::from(room) {
                self.tokens = self.rate;
                self.refilled = now;
            } else {
                let whole = earned as u32;
                self.tokens += whole;
                self.refilled += Duration::from_secs_f64(f64::from(whole) / rate);
            }
        }
        self.tokens > 0
    }

    /// How long an empty bucket takes to earn a sixteenth of a second's tokens (a paused
    /// reader's sleep).
    pub(crate) fn resume_after(&self) -> Duration {
        let want = (self.rate / RESUME_FRACTION).max(1);
        Duration::from_secs_f64(f64::from(want) / f64::from(self.rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_admits_its_burst_then_refuses() {
        let start = Instant::now();
        let mut b = TokenBucket::new(32, start);
        for _ in 0..32 {
            assert!(b.spend_at(start));
        }
        assert!(!b.spend_at(start), "the 33rd token of the burst is refused");
    }

    #[test]
    fn an_empty_bucket_earns_tokens_at_its_rate_up_to_a_full_one() {
        let start = Instant::now();
        let mut b = TokenBucket::new(1000, start);
        b.tokens = 0;
        assert!(b.refill(start + Duration::from_millis(10)));
        assert_eq!(b.tokens, 10);
        b.tokens = 0;
        assert!(b.refill(start + Duration::from_secs(3600)));
        assert_eq!(
            b.tokens, 1000,
            "a long quiet spell gives a full bucket, no more"
        );
        b.tokens = 0;
        assert!(
            !b.refill(start + Duration::from_secs(3600) + Duration::from_micros(500)),
            "half a token is not one"
        );
    }

    #[test]
    fn fractions_of_a_token_carry_over() {
        let start = Instant::now();
        let mut b = TokenBucket::new(64, start);
        b.tokens = 0;
        // 20 ms at 64/s is 1.28 tokens: one now, and the 0.28 counts toward the next.
        assert!(b.spend_at(start + Duration::from_millis(20)));
        assert!(!b.spend_at(start + Duration::from_millis(25)));
        assert!(b.spend_at(start + Duration::from_millis(32)));
    }

    #[test]
    fn a_paused_reader_waits_for_a_sixteenth_of_the_budget() {
        let b = TokenBucket::new(16_384, Instant::now());
        assert_eq!(b.resume_after(), Duration::from_micros(62_500));
        let slow = TokenBucket::new(1, Instant::now());
        assert_eq!(slow.resume_after(), Duration::from_secs(1));
    }
}
