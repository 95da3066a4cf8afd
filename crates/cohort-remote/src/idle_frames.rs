//! A connection's budget of idle frames: frames that hand nothing to a local mailbox
//! (heartbeats, `Ack`s that acknowledge nothing new, messages the node refuses or cannot
//! deliver). A peer within its budget never notices it; a peer that floods them makes its
//! connection's reader pause, so the socket fills, the peer's writes wait in its kernel, and
//! the node's I/O thread and cores go to its other peers. Nothing read is dropped: every
//! frame is still acted on and counted, only later.

use std::time::{Duration, Instant};

/// The part of a second's budget a paused reader waits for before it reads on: waking for
/// every single token would cost more than the frames it admits.
const RESUME_FRACTION: u32 = 16;

/// A token bucket of idle frames, refilled lazily: the clock is read only when the bucket is
/// empty, so a connection within its budget pays one decrement per idle frame.
#[derive(Debug)]
pub(crate) struct IdleFrames {
    tokens: u32,
    /// Per second, and the burst.
    rate: u32,
    /// When the bucket was last refilled (or made).
    refilled: Instant,
}

impl IdleFrames {
    /// A full bucket of `rate` idle frames per second (a burst of as many).
    pub(crate) fn new(rate: u32, now: Instant) -> Self {
        Self {
            tokens: rate,
            rate,
            refilled: now,
        }
    }

    /// Spends one idle frame's token; `false` when the bucket is empty even after refilling
    /// it: the reader should pause for [`IdleFrames::resume_after`].
    #[inline]
    pub(crate) fn spend(&mut self) -> bool {
        if self.tokens == 0 && !self.refill(Instant::now()) {
            return false;
        }
        self.tokens -= 1;
        true
    }

    /// Adds the tokens earned since the last refill (at most a full bucket); whether the
    /// bucket holds any now.
    fn refill(&mut self, now: Instant) -> bool {
        let earned = now.duration_since(self.refilled).as_secs_f64() * f64::from(self.rate);
        if earned >= 1.0 {
            // The saturating float-to-int conversion caps a long quiet spell at a full bucket.
            self.tokens = self.tokens.saturating_add(earned as u32).min(self.rate);
            self.refilled = now;
        }
        self.tokens > 0
    }

    /// How long an empty bucket takes to earn a sixteenth of a second's budget.
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
        let mut b = IdleFrames::new(32, start);
        b.refilled = start + Duration::from_secs(3600);
        for _ in 0..32 {
            assert!(b.spend());
        }
        assert!(!b.spend(), "the 33rd frame of the burst pauses the reader");
    }

    #[test]
    fn an_empty_bucket_earns_tokens_at_its_rate_up_to_a_full_one() {
        let start = Instant::now();
        let mut b = IdleFrames::new(1000, start);
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
    fn a_paused_reader_waits_for_a_sixteenth_of_the_budget() {
        let b = IdleFrames::new(16_384, Instant::now());
        assert_eq!(b.resume_after(), Duration::from_micros(62_500));
        let slow = IdleFrames::new(1, Instant::now());
        assert_eq!(slow.resume_after(), Duration::from_secs(1));
    }
}
