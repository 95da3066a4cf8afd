//! [`Intensity`]: how many restarts a supervisor allows in a window of time before it gives
//! up.

use std::collections::VecDeque;
use std::time::Duration;

/// At most `max_restarts` restarts within any window of `within`; one more and the
/// supervisor gives up and escalates (OTP's `intensity` and `period`).
///
/// `max_restarts` 0 is allowed: the supervisor gives up at the first failure. A zero window
/// is refused when the supervisor is built
/// ([`SupervisorError::ZeroWindow`](super::SupervisorError::ZeroWindow)).
///
/// ```
/// use cohort::supervision::Intensity;
/// use std::time::Duration;
/// let i = Intensity::new(3, Duration::from_secs(5));
/// assert_eq!(i.max_restarts(), 3);
/// assert_eq!(Intensity::default(), Intensity::new(3, Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intensity {
    max_restarts: u32,
    within: Duration,
}

impl Default for Intensity {
    /// OTP's default: 3 restarts within 5 seconds.
    fn default() -> Self {
        Self::new(3, Duration::from_secs(5))
    }
}

impl Intensity {
    /// At most `max_restarts` within `within`.
    pub fn new(max_restarts: u32, within: Duration) -> Self {
        Self {
            max_restarts,
            within,
        }
    }

    /// The number of restarts allowed within the window.
    pub fn max_restarts(&self) -> u32 {
        self.max_restarts
    }

    /// The window.
    pub fn within(&self) -> Duration {
        self.within
    }
}

/// The restart times within the current window.
#[derive(Debug, Default)]
pub(super) struct RestartWindow {
    times: VecDeque<Duration>,
}

impl RestartWindow {
    /// Forgets the restarts older than the window ending at `now`.
    fn prune(&mut self, now: Duration, within: Duration) {
        while self
            .times
            .front()
            .is_some_and(|&t| now.saturating_sub(t) >= within)
        {
            self.times.pop_front();
        }
    }

    /// Records a restart at `now` if the limit allows it; false if it is one too many.
    pub(super) fn admit(&mut self, now: Duration, limit: Intensity) -> bool {
        self.prune(now, limit.within);
        if self.times.len() >= limit.max_restarts as usize {
            return false;
        }
        self.times.push_back(now);
        true
    }

    /// Restarts within the window ending at `now`.
    pub(super) fn count(&mut self, now: Duration, within: Duration) -> u32 {
        self.prune(now, within);
        self.times.len() as u32
    }

    /// Records a restart at `now` without a limit (a child's own count, for its back-off).
    pub(super) fn record(&mut self, now: Duration, within: Duration) {
        self.prune(now, within);
        self.times.push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides() {
        let limit = Intensity::new(2, Duration::from_secs(10));
        let mut w = RestartWindow::default();
        let s = Duration::from_secs;
        assert!(w.admit(s(0), limit));
        assert!(w.admit(s(1), limit));
        assert!(!w.admit(s(2), limit));
        // The restart at 0 s leaves the window at 10 s.
        assert!(w.admit(s(10), limit));
        assert_eq!(w.count(s(10), limit.within()), 2);
    }

    #[test]
    fn zero_restarts_admits_none() {
        let mut w = RestartWindow::default();
        assert!(!w.admit(Duration::ZERO, Intensity::new(0, Duration::from_secs(1))));
    }
}
