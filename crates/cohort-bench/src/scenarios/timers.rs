//! Timers (SObjectizer issue #97): the cost of many pending timers, and the idle
//! cost of one fast periodic timer.
//!
//! - `mass`: a plain thread schedules `count` delayed sends (fire and forget) to one counting
//!   agent, with delays spread evenly over `[delay, delay + spread)` (a fixed pseudo-random
//!   order), so that they are all pending when scheduling ends; then waits until the agent has
//!   handled every one. Reported: scheduling time per timer, memory per pending timer (heap
//!   bytes the scheduling thread allocated and kept, and RSS growth, each divided by the
//!   timers then pending), the CPU time of the
//!   `cohort-timer` thread per timer fired, the time from the last deadline to the last
//!   message handled, the mean and maximum lateness of a message (handling time minus its
//!   deadline as the bench computed it, which is at most the real one), and the peak RSS.
//! - `periodic`: one 1 ms periodic timer to an idle agent for a while: ticks
//!   received, and the CPU time of the whole process as a share of one core (a timer thread
//!   that polled would show close to 100 %).

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use crate::{cpu, rss};
use cohort::{Agent, Context, DefineError, Environment, TimerQueue};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

/// A timer queue, as a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueueArg {
    /// The hierarchical timing wheel.
    Wheel,
    /// The binary heap.
    Heap,
}

impl QueueArg {
    pub fn queue(self) -> TimerQueue {
        match self {
            QueueArg::Wheel => TimerQueue::Wheel,
            QueueArg::Heap => TimerQueue::Heap,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            QueueArg::Wheel => "wheel",
            QueueArg::Heap => "heap",
        }
    }
}

/// A fired timer: its deadline, in nanoseconds after the run's base instant.
#[derive(Clone, Copy)]
struct Due(u64);

struct Tally {
    handled: u64,
    late_sum: u128,
    late_max: u64,
    last: Instant,
}

struct Counter {
    base: Instant,
    expected: u64,
    tally: Tally,
    out: Sender<Tally>,
}

impl Agent for Counter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, d: &Due, _: &mut Context<'_, Self>| {
            let now = Instant::now();
            let at = u64::try_from(now.duration_since(me.base).as_nanos()).unwrap_or(u64::MAX);
            let late = at.saturating_sub(d.0);
            let t = &mut me.tally;
            t.handled += 1;
            t.late_sum += u128::from(late);
            t.late_max = t.late_max.max(late);
            if t.handled == me.expected {
                t.last = now;
                let _ = me.out.send(Tally { ..*t });
            }
        })?;
        Ok(())
    }
}

/// What one mass run measured.
#[derive(Debug)]
pub struct MassOutcome {
    pub count: u64,
    /// Scheduling every timer (from the plain thread).
    pub schedule: Duration,
    /// Heap bytes the scheduling thread allocated and kept, per timer then pending (timer,
    /// queue entry and the queue's spare capacity).
    pub heap_bytes_per_timer: f64,
    /// RSS growth over the scheduling per timer then pending (`None` without /proc; low
    /// when the allocator reuses pages freed by an earlier run).
    pub rss_bytes_per_timer: Option<f64>,
    /// CPU time of the `cohort-timer` thread over the run, per timer.
    pub fire_cpu_per_timer: Option<Duration>,
    /// From the last deadline to the last message handled.
    pub drain_after_last_deadline: Duration,
    pub late_mean: Duration,
    pub late_max: Duration,
}

/// Delay of timer `i` of `count`: spread evenly over `[delay, delay + spread)` in a fixed
/// pseudo-random order (a multiplicative permutation).
fn delay_of(i: u64, count: u64, delay: Duration, spread: Duration) -> Duration {
    // A prime (2^31 - 1) times i, modulo count: a permutation of 0..count unless the prime
    // divides count.
    let k = (u128::from(i) * 2_147_483_647 % u128::from(count)) as u64;
    delay + spread.mul_f64(k as f64 / count as f64)
}

/// Schedules `count` delayed sends and waits until every one is handled.
pub fn run_mass(
    count: u64,
    delay: Duration,
    spread: Duration,
    queue: TimerQueue,
    placement: Placement,
) -> Result<MassOutcome, String> {
    if count == 0 {
        return Err("--count must be at least 1".into());
    }
    placement.validate()?;
    let (out, tally) = mpsc::channel();
    let env = Environment::builder()
        .timer_queue(queue)
        .start()
        .map_err(|e| format!("environment: {e}"))?;
    let base = Instant::now();
    let mut coop = env.new_coop();
    coop.set_binder(placement.binder(&env)?);
    let counter = coop
        .add(Counter {
            base,
            expected: count,
            tally: Tally {
                handled: 0,
                late_sum: 0,
                late_max: 0,
                last: base,
            },
            out,
        })
        .mbox();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    // Start the timer thread first, so that its stack is not counted as timer memory.
    env.send_delayed(&counter, Duration::from_secs(3600), Due(0))
        .cancel();
    let cpu_before = cpu::threads_named("cohort-timer");
    let rss_before = rss::current_bytes();
    let started = Instant::now();
    let (last_deadline, heap_bytes) = crate::alloc::net_bytes_of(|| {
        let mut last_deadline = 0u64;
        for i in 0..count {
            let d = delay_of(i, count, delay, spread);
            let due = u64::try_from((Instant::now() - base + d).as_nanos()).unwrap_or(u64::MAX);
            last_deadline = last_deadline.max(due);
            env.send_delayed(&counter, d, Due(due));
        }
        last_deadline
    });
    let schedule = started.elapsed();
    let pending = env.timer_count();
    let rss_bytes_per_timer = match (rss_before, rss::current_bytes()) {
        (Some(a), Some(b)) if pending > 0 => Some(b.saturating_sub(a) as f64 / pending as f64),
        _ => None,
    };
    drop(counter);
    let limit = delay + spread + Duration::from_secs(60);
    let tally = tally
        .recv_timeout(limit)
        .map_err(|_| format!("the counter did not receive every timer within {limit:?}"))?;
    // Read while the timer thread lives (stopping joins it).
    let cpu_after = cpu::threads_named("cohort-timer");
    drop(env);
    let last_deadline = base + Duration::from_nanos(last_deadline);
    Ok(MassOutcome {
        count,
        schedule,
        heap_bytes_per_timer: heap_bytes as f64 / pending.max(1) as f64,
        rss_bytes_per_timer,
        fire_cpu_per_timer: match (cpu_before, cpu_after) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) / count as u32),
            _ => None,
        },
        drain_after_last_deadline: tally.last.saturating_duration_since(last_deadline),
        late_mean: Duration::from_nanos((tally.late_sum / u128::from(count)) as u64),
        late_max: Duration::from_nanos(tally.late_max),
    })
}

/// What one periodic run measured.
#[derive(Debug)]
pub struct PeriodicOutcome {
    pub ticks: u64,
    pub elapsed: Duration,
    /// CPU time of the whole process over the run, as a share of one core (0..=1 per core).
    pub cpu_share: Option<f64>,
    /// CPU time of the `cohort-timer` thread over the run, as a share of one core.
    pub timer_thread_share: Option<f64>,
}

/// Counts ticks.
struct Ticks(Arc<std::sync::atomic::AtomicU64>);

#[derive(Clone)]
struct Tick;

impl Agent for Ticks {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {
            me.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })?;
        Ok(())
    }
}

/// One `period` periodic timer to an idle agent for `duration`.
pub fn run_periodic(
    period: Duration,
    duration: Duration,
    queue: TimerQueue,
) -> Result<PeriodicOutcome, String> {
    let env = Environment::builder()
        .timer_queue(queue)
        .start()
        .map_err(|e| format!("environment: {e}"))?;
    let ticks = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut coop = env.new_coop();
    let mbox = coop.add(Ticks(ticks.clone())).mbox();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    let timer = env.send_periodic(&mbox, Duration::ZERO, period, Tick);
    let cpu_before = cpu::threads_named("");
    let timer_before = cpu::threads_named("cohort-timer");
    let started = Instant::now();
    // The measurement is the passing of time itself: the bench thread sleeps meanwhile.
    std::thread::sleep(duration);
    let cpu_after = cpu::threads_named("");
    let timer_after = cpu::threads_named("cohort-timer");
    let elapsed = started.elapsed();
    let ticks = ticks.load(std::sync::atomic::Ordering::Relaxed);
    drop(timer);
    drop(env);
    if ticks == 0 {
        return Err("the periodic timer never fired".into());
    }
    Ok(PeriodicOutcome {
        ticks,
        elapsed,
        cpu_share: share(cpu_before, cpu_after, elapsed),
        timer_thread_share: share(timer_before, timer_after, elapsed),
    })
}

/// CPU time between two readings as a share of `elapsed`.
fn share(before: Option<Duration>, after: Option<Duration>, elapsed: Duration) -> Option<f64> {
    Some(after?.saturating_sub(before?).as_secs_f64() / elapsed.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_timer_fires_on_both_queues() {
        for queue in [TimerQueue::Heap, TimerQueue::Wheel] {
            let o = crate::watchdog::within(60, move || {
                run_mass(
                    20_000,
                    Duration::from_millis(20),
                    Duration::from_millis(30),
                    queue,
                    Placement::of(Dispatcher::OneThread),
                )
            })
            .unwrap();
            assert_eq!(o.count, 20_000);
        }
    }

    #[test]
    fn delays_cover_the_spread() {
        let d = Duration::from_millis(10);
        let s = Duration::from_millis(100);
        let all: Vec<_> = (0..1000).map(|i| delay_of(i, 1000, d, s)).collect();
        assert!(all.iter().all(|&x| x >= d && x < d + s));
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000, "a permutation");
    }

    #[test]
    fn periodic_ticks() {
        let o = crate::watchdog::within(60, || {
            run_periodic(
                Duration::from_millis(1),
                Duration::from_millis(50),
                TimerQueue::Heap,
            )
        })
        .unwrap();
        assert!(o.ticks >= 1);
    }

    #[test]
    fn zero_count_is_refused() {
        let e = run_mass(
            0,
            Duration::ZERO,
            Duration::ZERO,
            TimerQueue::Heap,
            Placement::of(Dispatcher::OneThread),
        )
        .unwrap_err();
        assert!(e.contains("--count"));
    }
}
