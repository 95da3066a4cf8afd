//! How an idle worker waits before it parks: [`WorkerSpin`], the setting every dispatcher
//! builder takes, and [`Spinner`], one worker's state under it.
//!
//! A worker that runs out of work polls for more before it parks, because a hand-off between
//! two busy threads costs far less than waking a parked one. How long polling is worth it
//! depends on the traffic: between two agents passing a message back and forth a wait lasts
//! a few hundred nanoseconds and every spin ends in work; under a trickle of a message every
//! few hundred microseconds every spin ends in a park, and each one is CPU lost. The
//! adaptive setting learns which case it is in from how long its own recent waits lasted
//! (from the start of a spin to the work, found by the spin or after a park), as a moving
//! average: while a typical wait is within [`PARK_AFTER_WAITS_OF`] times the maximum spin it
//! spins the maximum, as a fixed spin would; once typical waits are longer than that,
//! spinning would only delay the park, and it spins [`MIN_ADAPTIVE_SPIN`]. It reads the clock
//! no more often than a fixed spin does (once per round of [`POLLS_PER_ROUND`] polls), plus
//! once after each park.

use crate::error::DispatcherError;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The shortest spin of an adaptive worker. Longer than a hand-off between two busy threads
/// (a few hundred nanoseconds on the reference VM), so a worker that spins this little under
/// a trickle still catches a hot exchange that starts again, and learns from it.
pub const MIN_ADAPTIVE_SPIN: Duration = Duration::from_micros(2);

/// The longest spin a builder accepts. A worker spinning longer than this between messages
/// keeps a core busy for traffic that a park and a wake-up (tens of microseconds) serve
/// nearly as fast.
pub const MAX_WORKER_SPIN: Duration = Duration::from_millis(10);

/// How many times the maximum spin a typical wait may last before an adaptive worker stops
/// spinning the maximum. Waits vary: with a typical wait up to twice the maximum, a fair
/// share of them still end within the spin (a remote round trip on loopback is about as long
/// as the default maximum); beyond, nearly every spin ends in a park anyway.
pub(crate) const PARK_AFTER_WAITS_OF: u64 = 2;

/// Waits longer than this many times the maximum spin count as this long in the average, so
/// that one long idle period does not keep the worker from spinning for long afterwards.
const WAIT_CAP: u64 = 4;

/// Polls between two looks at the clock (and two `sched_yield`s): a look at the clock costs
/// tens of polls on a VM, and a yield lets a thread with work have the vCPU.
pub(crate) const POLLS_PER_ROUND: u32 = 64;

/// How an idle worker thread waits for work before it parks.
///
/// `Duration`s convert into [`WorkerSpin::Fixed`], so `.worker_spin(Duration::ZERO)` still
/// means "park at once".
///
/// ```
/// use cohort::WorkerSpin;
/// use std::time::Duration;
/// let env = cohort::Environment::builder()
///     // The default: adaptive, at most defaults::WORKER_SPIN.
///     .worker_spin(WorkerSpin::Adaptive { max: Duration::from_micros(100) })
///     .start()
///     .unwrap();
/// let pinned = cohort::ActiveObjBuilder::new()
///     .worker_spin(Duration::from_micros(20)) // always 20 µs
///     .build(&env)
///     .unwrap();
/// # let _ = pinned;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerSpin {
    /// Spins for at most `max`, for as long as the worker's recent spins say is worth it
    /// (between [`MIN_ADAPTIVE_SPIN`] and `max`; see the module's documentation).
    Adaptive {
        /// The longest spin (at least [`MIN_ADAPTIVE_SPIN`], at most [`MAX_WORKER_SPIN`]).
        max: Duration,
    },
    /// Spins for exactly this long every time (zero: parks at once; at most
    /// [`MAX_WORKER_SPIN`]).
    Fixed(Duration),
}

impl Default for WorkerSpin {
    /// [`WorkerSpin::Adaptive`] up to [`defaults::WORKER_SPIN`](crate::defaults::WORKER_SPIN).
    fn default() -> Self {
        WorkerSpin::Adaptive {
            max: crate::defaults::WORKER_SPIN,
        }
    }
}

impl From<Duration> for WorkerSpin {
    /// A spin fixed by hand.
    fn from(d: Duration) -> Self {
        WorkerSpin::Fixed(d)
    }
}

impl WorkerSpin {
    /// Checks the setting of dispatcher `dispatcher` (`worker_spin`).
    pub(crate) fn validate(&self, dispatcher: &str) -> Result<(), DispatcherError> {
        let (spin, kind) = match *self {
            WorkerSpin::Adaptive { max } => (max, "an adaptive spin's max"),
            WorkerSpin::Fixed(d) => (d, "a fixed spin"),
        };
        if spin > MAX_WORKER_SPIN {
            return Err(DispatcherError::invalid(
                dispatcher,
                "worker_spin",
                format!(
                    "{kind} of {spin:?} is longer than {MAX_WORKER_SPIN:?}: a worker would keep a \
                     core busy that long after each message; use at most {MAX_WORKER_SPIN:?} \
                     (the default is adaptive up to {:?})",
                    crate::defaults::WORKER_SPIN
                ),
            ));
        }
        if let WorkerSpin::Adaptive { max } = *self
            && max < MIN_ADAPTIVE_SPIN
        {
            return Err(DispatcherError::invalid(
                dispatcher,
                "worker_spin",
                format!(
                    "an adaptive spin's max of {max:?} is shorter than its floor, \
                     {MIN_ADAPTIVE_SPIN:?}; use WorkerSpin::Fixed({max:?}) to spin that long \
                     every time (Duration::ZERO parks at once)"
                ),
            ));
        }
        Ok(())
    }
}

/// One worker's spin before it parks, under its [`WorkerSpin`]: owned by the worker thread
/// (a `Cell`, not shared), so learning costs no atomic.
#[derive(Debug)]
pub(crate) struct Spinner {
    /// The longest spin, in nanoseconds.
    max: u64,
    /// False for a fixed spin, which never learns.
    adaptive: bool,
    /// The moving average of the recent waits (a quarter of the newest), in nanoseconds.
    typical_wait: Cell<u64>,
}

impl Spinner {
    /// A worker's spinner; an adaptive one starts as if its waits were short (a worker
    /// starts because work is coming).
    pub(crate) fn new(setting: WorkerSpin) -> Self {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let (max, adaptive) = match setting {
            WorkerSpin::Adaptive { max } => (nanos(max), true),
            WorkerSpin::Fixed(d) => (nanos(d), false),
        };
        Spinner {
            max,
            adaptive,
            typical_wait: Cell::new(0),
        }
    }

    /// The next spin's budget, in nanoseconds.
    #[inline]
    fn budget_ns(&self) -> u64 {
        if !self.adaptive || self.typical_wait.get() <= self.max.saturating_mul(PARK_AFTER_WAITS_OF)
        {
            self.max
        } else {
            // Not below the floor, nor above the max (an adaptive max is at least the floor).
            u64::try_from(MIN_ADAPTIVE_SPIN.as_nanos())
                .unwrap_or(u64::MAX)
                .min(self.max)
        }
    }

    /// The next spin's budget.
    #[cfg(all(test, not(cohort_loom)))]
    pub(crate) fn budget(&self) -> Duration {
        Duration::from_nanos(self.budget_ns())
    }

    /// Waits for `ready()`: spins for at most the budget, then, unless it held, calls `park`
    /// (which returns once woken, or spuriously: the caller looks again), and learns how long
    /// the wait lasted. Returns whether the spin found work. Yields the CPU between rounds of
    /// [`POLLS_PER_ROUND`] polls.
    pub(crate) fn wait(&self, ready: impl Fn() -> bool, park: impl FnOnce()) -> bool {
        let start = Instant::now();
        match spin_for(ready, start, self.budget_ns()) {
            Some(waited) => {
                self.learn(waited);
                true
            }
            None => {
                park();
                if self.adaptive {
                    self.learn(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
                }
                false
            }
        }
    }

    /// A wait of `waited_ns` is over: into the moving average, capped.
    #[inline]
    pub(crate) fn learn(&self, waited_ns: u64) {
        if !self.adaptive {
            return;
        }
        let w = waited_ns.min(self.max.saturating_mul(WAIT_CAP));
        let t = self.typical_wait.get();
        // t + (w - t) / 4, in unsigned arithmetic.
        self.typical_wait.set(t - t / 4 + w / 4);
    }
}

/// Polls `ready()` for at most `budget_ns` from `start`: `Some` with how long it had spun at
/// its last look at the clock (a lower bound of the wait, read once per round) when it held,
/// `None` when the budget ran out. With a zero budget, one poll.
fn spin_for(ready: impl Fn() -> bool, start: Instant, budget_ns: u64) -> Option<u64> {
    if budget_ns == 0 {
        return ready().then_some(0);
    }
    let mut spun = 0;
    loop {
        for _ in 0..POLLS_PER_ROUND {
            if ready() {
                return Some(spun);
            }
            std::hint::spin_loop();
        }
        spun = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if spun >= budget_ns {
            return None;
        }
        crate::sync::yield_now();
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;

    const MAX: Duration = Duration::from_micros(50);
    const US: u64 = 1_000;

    fn adaptive() -> Spinner {
        Spinner::new(WorkerSpin::Adaptive { max: MAX })
    }

    #[test]
    fn short_waits_keep_the_full_spin() {
        let s = adaptive();
        assert_eq!(s.budget(), MAX);
        for _ in 0..100 {
            s.learn(300);
            assert_eq!(s.budget(), MAX);
        }
    }

    #[test]
    fn a_trickle_of_long_waits_shrinks_the_spin_to_its_floor() {
        // A message every 200 µs against a 50 µs maximum: three waits, then the floor.
        let s = adaptive();
        let mut waits = 0;
        while s.budget() == MAX {
            s.learn(200 * US);
            waits += 1;
            assert!(
                waits < 10,
                "still spinning the max after {waits} long waits"
            );
        }
        assert_eq!(s.budget(), MIN_ADAPTIVE_SPIN);
        for _ in 0..100 {
            s.learn(10_000 * US);
            assert_eq!(s.budget(), MIN_ADAPTIVE_SPIN);
        }
    }

    #[test]
    fn a_hot_exchange_after_an_idle_hour_spins_the_max_again_within_a_few_waits() {
        let s = adaptive();
        for _ in 0..20 {
            s.learn(3_600_000_000 * US);
        }
        assert_eq!(s.budget(), MIN_ADAPTIVE_SPIN);
        let mut waits = 0;
        while s.budget() != MAX {
            s.learn(300);
            waits += 1;
            assert!(waits < 10, "still at the floor after {waits} short waits");
        }
    }

    #[test]
    fn waits_about_as_long_as_the_max_keep_the_full_spin() {
        // A remote round trip on loopback: 40-90 µs against a 50 µs maximum.
        let s = adaptive();
        for i in 0..100u64 {
            s.learn((40 + i % 6 * 10) * US);
            assert_eq!(s.budget(), MAX, "after {i}");
        }
    }

    #[test]
    fn a_fixed_spin_never_changes() {
        for d in [Duration::ZERO, Duration::from_micros(7)] {
            let s = Spinner::new(WorkerSpin::Fixed(d));
            for w in [0, 1_000_000 * US, 300, u64::MAX] {
                s.learn(w);
                assert_eq!(s.budget(), d);
            }
        }
    }

    #[test]
    fn a_max_below_the_floor_is_refused_and_names_the_fix() {
        let e = WorkerSpin::Adaptive {
            max: Duration::from_nanos(500),
        }
        .validate("d")
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`worker_spin`"), "{text}");
        assert!(text.contains("WorkerSpin::Fixed"), "{text}");
    }

    #[test]
    fn a_spin_too_long_is_refused() {
        for s in [
            WorkerSpin::Fixed(Duration::from_secs(1)),
            WorkerSpin::Adaptive {
                max: Duration::from_secs(1),
            },
        ] {
            let e = s.validate("d").unwrap_err();
            assert!(matches!(
                e,
                DispatcherError::InvalidParameter {
                    parameter: "worker_spin",
                    ..
                }
            ));
        }
        assert!(WorkerSpin::default().validate("d").is_ok());
        assert!(WorkerSpin::Fixed(Duration::ZERO).validate("d").is_ok());
        assert!(WorkerSpin::Fixed(MAX_WORKER_SPIN).validate("d").is_ok());
    }

    #[test]
    fn a_zero_spin_polls_once_then_parks() {
        let polls = Cell::new(0);
        let parked = Cell::new(false);
        let s = Spinner::new(WorkerSpin::Fixed(Duration::ZERO));
        let found = s.wait(
            || {
                polls.set(polls.get() + 1);
                false
            },
            || parked.set(true),
        );
        assert!(!found);
        assert_eq!((polls.get(), parked.get()), (1, true));
    }

    #[test]
    fn a_spin_returns_as_soon_as_there_is_work_without_parking() {
        let polls = Cell::new(0);
        let s = adaptive();
        let found = s.wait(
            || {
                polls.set(polls.get() + 1);
                polls.get() == 3
            },
            || panic!("parked with work found"),
        );
        assert!(found);
        assert_eq!(polls.get(), 3);
    }
}
