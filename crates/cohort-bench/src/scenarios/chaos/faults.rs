//! The fault schedule: which fault each phase of a chaos run injects, with what parameters,
//! and the reconnect bound the configured backoff allows.

use std::time::Duration;

/// One kind of fault; a phase of the run injects one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum FaultKind {
    /// Every chunk on one link delayed by a base plus a random jitter (order kept).
    Delay,
    /// One link capped to a few tens of KiB/s.
    Bandwidth,
    /// One link holds its bytes for a while, then delivers them.
    Stall,
    /// One link's connection closed toward the dialled node, left open and silent toward
    /// the dialler: the sending side must find out from the missing heartbeats.
    HalfOpen,
    /// One link's connection reset (RST both ways) mid-stream.
    Reset,
    /// One link reset and refused for 1-10 s, then healed.
    Cut,
    /// A receiving agent stalls in a handler for a while.
    ReceiverStall,
    /// A sending node with a small outbound queue that drops its oldest message when full,
    /// flooding a link that reads nothing for a while.
    FullQueue,
    /// A receiving node in another process killed (`kill -9`) and restarted.
    Kill,
    /// A receiving node in another network namespace whose veth link goes down for 1-10 s.
    LinkDown,
}

impl FaultKind {
    /// Every kind, in the order a run cycles through them.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Delay,
        FaultKind::Bandwidth,
        FaultKind::Stall,
        FaultKind::HalfOpen,
        FaultKind::Reset,
        FaultKind::Cut,
        FaultKind::ReceiverStall,
        FaultKind::FullQueue,
        FaultKind::Kill,
        FaultKind::LinkDown,
    ];

    /// The name in the report (the command-line spelling).
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::Delay => "delay",
            FaultKind::Bandwidth => "bandwidth",
            FaultKind::Stall => "stall",
            FaultKind::HalfOpen => "half-open",
            FaultKind::Reset => "reset",
            FaultKind::Cut => "cut",
            FaultKind::ReceiverStall => "receiver-stall",
            FaultKind::FullQueue => "full-queue",
            FaultKind::Kill => "kill",
            FaultKind::LinkDown => "link-down",
        }
    }

    /// Whether the phase runs a node in a child process (the others run in this one).
    pub fn needs_child(self) -> bool {
        matches!(self, FaultKind::Kill | FaultKind::LinkDown)
    }
}

/// A small deterministic generator (xorshift64*), so a run can be repeated by its seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced, xorshift cannot leave it).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform fraction in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A duration uniform in [lo, hi].
    pub fn between(&mut self, lo: Duration, hi: Duration) -> Duration {
        if hi <= lo {
            return lo;
        }
        lo + (hi - lo).mul_f64(self.unit())
    }
}

/// One phase of the run: a fault kind and how long its fault lasts.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    /// The fault.
    pub kind: FaultKind,
    /// How long the fault is held (a cut, a stall, a link down); the phase runs traffic
    /// before and after it.
    pub hold: Duration,
}

/// The phase after `index` phases: the kinds in turn, and a hold drawn for the kind within
/// what the phase length `phase` leaves (cuts and link downs 1-10 s as the issue asks,
/// shortened to the phase, never under 1 s).
pub fn phase(kinds: &[FaultKind], index: usize, phase: Duration, rng: &mut Rng) -> Phase {
    let kind = kinds[index % kinds.len()];
    let s = Duration::from_secs;
    let ms = Duration::from_millis;
    let room = phase.mul_f64(0.6);
    let (lo, hi) = match kind {
        FaultKind::Cut | FaultKind::LinkDown => (s(1), s(10).min(room).max(s(1))),
        FaultKind::Stall | FaultKind::ReceiverStall | FaultKind::FullQueue => {
            (ms(300), s(2).min(room).max(ms(300)))
        }
        FaultKind::Delay | FaultKind::Bandwidth => (room.min(s(5)), room.min(s(5))),
        FaultKind::HalfOpen | FaultKind::Reset | FaultKind::Kill => (ms(0), ms(0)),
    };
    Phase {
        kind,
        hold: rng.between(lo, hi),
    }
}

/// The reconnect backoff in force `down_for` after a connection went down, for a node that
/// waits `min` before its first dial and doubles the wait after each failed dial up to
/// `max`: the wait of the dial that comes next. A reconnect after a healed fault is due
/// within that wait; the run reports the measured time against it.
pub fn backoff_in_force(down_for: Duration, min: Duration, max: Duration) -> Duration {
    let (mut at, mut wait) = (Duration::ZERO, min);
    loop {
        at += wait;
        if at >= down_for {
            return wait;
        }
        wait = (wait * 2).min(max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_in_force_doubles_to_its_maximum() {
        let ms = Duration::from_millis;
        assert_eq!(backoff_in_force(ms(0), ms(50), ms(1000)), ms(50));
        assert_eq!(backoff_in_force(ms(60), ms(50), ms(1000)), ms(100));
        assert_eq!(backoff_in_force(ms(200), ms(50), ms(1000)), ms(200));
        assert_eq!(backoff_in_force(ms(10_000), ms(50), ms(1000)), ms(1000));
    }

    #[test]
    fn every_kind_comes_once_in_a_cycle_with_holds_in_range() {
        let mut rng = Rng::new(7);
        let p = Duration::from_secs(2);
        let kinds: Vec<_> = (0..FaultKind::ALL.len())
            .map(|i| phase(&FaultKind::ALL, i, p, &mut rng))
            .collect();
        assert_eq!(
            kinds.iter().map(|p| p.kind).collect::<Vec<_>>(),
            FaultKind::ALL
        );
        for ph in kinds {
            if matches!(ph.kind, FaultKind::Cut | FaultKind::LinkDown) {
                // 1 s at least, and no more than the 60 % of the phase left for faults.
                let secs = ph.hold.as_secs_f64();
                assert!((1.0..=1.2).contains(&secs), "{ph:?}");
            }
            assert!(ph.hold <= Duration::from_secs(10), "{ph:?}");
        }
        let long = phase(&[FaultKind::Cut], 0, Duration::from_secs(30), &mut rng);
        assert!((1..=10).contains(&long.hold.as_secs()), "{long:?}");
    }
}
