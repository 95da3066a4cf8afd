//! The timer queue of a service: the kind chosen with
//! [`EnvironmentBuilder::timer_queue`](crate::EnvironmentBuilder::timer_queue).

use super::Entry;
use super::heap::HeapQueue;
use super::wheel::WheelQueue;

/// Where pending timers wait: a binary heap or a hierarchical timing wheel.
///
/// Both fire every timer at its exact deadline (never before it). They differ in cost with
/// many pending timers: the heap pays O(log n) per timer fired, the wheel O(1) amortised,
/// and the wheel keeps up to a tick's worth of imminent timers in a small heap. See
/// docs/BENCHMARKS.md (`cohort-bench timers`) for the measured figures behind the default,
/// [`defaults::TIMER_QUEUE`](crate::defaults::TIMER_QUEUE).
///
/// ```
/// let env = cohort::Environment::builder()
///     .timer_queue(cohort::TimerQueue::Heap)
///     .start()
///     .unwrap();
/// # drop(env);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerQueue {
    /// A binary min-heap of deadlines: O(log n) to schedule and to fire.
    Heap,
    /// A hierarchical timing wheel (six levels of 64 slots of
    /// [`defaults::TIMER_WHEEL_TICK`](crate::defaults::TIMER_WHEEL_TICK) at the bottom) in
    /// front of a heap for the current tick: O(1) to schedule and to fire.
    Wheel,
}

/// The queue of one service.
pub(crate) enum Queue {
    Heap(HeapQueue),
    Wheel(Box<WheelQueue>),
}

/// Calls the same method on either queue.
macro_rules! either {
    ($q:expr, $v:ident => $e:expr) => {
        match $q {
            Queue::Heap($v) => $e,
            Queue::Wheel($v) => $e,
        }
    };
}

impl Queue {
    pub(crate) fn new(kind: TimerQueue) -> Self {
        match kind {
            TimerQueue::Heap => Queue::Heap(HeapQueue::default()),
            TimerQueue::Wheel => Queue::Wheel(Box::new(WheelQueue::new(
                u64::try_from(crate::defaults::TIMER_WHEEL_TICK.as_nanos()).unwrap_or(u64::MAX),
            ))),
        }
    }

    pub(crate) fn push(&mut self, e: Entry) {
        either!(self, q => q.push(e))
    }

    /// The instant (ns) the service must next wake at, if any.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        either!(self, q => q.next_deadline())
    }

    /// Moves every entry due at `now` to `out`, earliest first.
    pub(crate) fn pop_due(&mut self, now: u64, out: &mut Vec<Entry>) {
        either!(self, q => q.pop_due(now, out))
    }

    pub(crate) fn len(&self) -> usize {
        either!(self, q => q.len())
    }

    /// Moves the entries of cancelled timers to `out` (never waits for a firing timer).
    pub(crate) fn remove_inactive(&mut self, out: &mut Vec<Entry>) {
        either!(self, q => q.remove_inactive(out))
    }

    /// Moves every entry to `out`.
    pub(crate) fn take_all(&mut self, out: &mut Vec<Entry>) {
        either!(self, q => q.take_all(out))
    }
}
