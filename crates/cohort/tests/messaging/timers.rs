//! Timers: delayed and periodic sends, cancellation by handle (drop, `cancel`), cancellation
//! racing the firing, environment stop, many timers, dead letters.
//!
//! No test sleeps to synchronise: each waits for messages (with the watchdog's limit), and
//! "nothing arrived" is proven with a sentinel that must arrive after it.

use crate::common;

use cohort::{
    Agent, Context, DefineError, DeliveryFailure, DeregReason, Environment, Mbox, TimerQueue,
};
use common::{DeadLetters, Probe, TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

/// Both timer queues, for the tests that stress the queue.
const QUEUES: [TimerQueue; 2] = [TimerQueue::Wheel, TimerQueue::Heap];

/// Forwards the instant each `M` was handled.
struct Stamp<M> {
    tx: Sender<(M, Instant)>,
}

impl<M: Clone + Send + Sync + 'static> Agent for Stamp<M> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &M, _: &mut Context<'_, Self>| {
            let _ = me.tx.send((m.clone(), Instant::now()));
        })?;
        Ok(())
    }
}

fn stamp<M: Clone + Send + Sync + 'static>(
    env: &Environment,
) -> (Mbox, mpsc::Receiver<(M, Instant)>) {
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    let mbox = coop.add(Stamp { tx }).mbox();
    env.register_coop(coop).unwrap();
    (mbox, rx)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Timer(u32),
    Sentinel(u32),
}

#[test]
fn delayed_message_arrives_not_before_its_delay() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (mbox, rx) = stamp::<u32>(&env);
        for (i, ms) in [0u64, 1, 5, 20].into_iter().enumerate() {
            let delay = Duration::from_millis(ms);
            let t0 = Instant::now();
            let timer = env.send_delayed(&mbox, delay, i as u32);
            let (v, at) = common::recv(&rx, "the delayed message");
            assert_eq!(v, i as u32);
            assert!(
                at - t0 >= delay,
                "handled {:?} after scheduling, delay {delay:?}",
                at - t0
            );
            assert!(!timer.is_active(), "a delayed timer is done once fired");
        }
        assert_eq!(env.timer_count(), 0);
        assert_eq!(env.dead_letters(), 0);
    });
}

#[test]
fn periodic_timer_repeats_every_period() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (mbox, rx) = stamp::<&'static str>(&env);
        let delay = Duration::from_millis(2);
        let period = Duration::from_millis(3);
        let t0 = Instant::now();
        let timer = env.send_periodic(&mbox, delay, period, "tick");
        for i in 0..5u32 {
            let (v, at) = common::recv(&rx, "a periodic tick");
            assert_eq!(v, "tick");
            assert!(
                at - t0 >= delay + period * i,
                "tick {i} handled {:?} after scheduling",
                at - t0
            );
        }
        assert!(timer.is_active());
        assert_eq!(env.stats().timers, 1);
        drop(timer);
        assert_eq!(env.stats().timers, 0);
    });
}

#[test]
fn zero_period_fires_once() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let probe = Probe::<Msg>::new();
        let timer = env.send_periodic(&probe.mbox, Duration::ZERO, Duration::ZERO, Msg::Timer(0));
        let sentinel = env.send_delayed(&probe.mbox, Duration::from_millis(5), Msg::Sentinel(0));
        assert_eq!(probe.recv("the timer"), Msg::Timer(0));
        assert_eq!(probe.recv("the sentinel"), Msg::Sentinel(0));
        assert!(!timer.is_active() && !sentinel.is_active());
        assert!(probe.nothing_more());
        probe.shutdown();
    });
}

#[test]
fn dropping_or_cancelling_the_handle_cancels() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let probe = Probe::<Msg>::new();
        // Due far enough ahead that they cannot fire before the cancellation below, even
        // under valgrind (a 2 ms delay did, on a loaded CI machine).
        let dropped = env
            .send_delayed(&probe.mbox, Duration::from_millis(200), Msg::Timer(1))
            .cancel_on_drop();
        let mut cancelled = env.send_periodic(
            &probe.mbox,
            Duration::from_millis(200),
            Duration::from_millis(1),
            Msg::Timer(2),
        );
        assert_eq!(env.timer_count(), 2);
        drop(dropped);
        cancelled.cancel();
        cancelled.cancel(); // idempotent
        assert!(!cancelled.is_active());
        assert_eq!(env.timer_count(), 0);
        // Timers fire in deadline order from one thread: the later sentinel proves the
        // cancelled ones did not fire.
        env.send_delayed(&probe.mbox, Duration::from_millis(300), Msg::Sentinel(0));
        assert_eq!(probe.recv("the sentinel"), Msg::Sentinel(0));
        assert!(probe.nothing_more());
        probe.shutdown();
    });
}

#[test]
fn cancel_racing_the_firing_delivers_at_most_once_and_never_after_cancel() {
    for queue in QUEUES {
        watchdog(TIMEOUT, move || cancel_race(queue));
    }
}

fn cancel_race(queue: TimerQueue) {
    {
        let env = Environment::builder().timer_queue(queue).start().unwrap();
        let probe = Probe::<Msg>::new();
        let n = common::count(2000) as u32;
        for i in 0..n {
            // Deadlines from 0 to 60 µs, cancels after 0 to ~60 µs of spinning: both sides
            // win often.
            let delay = Duration::from_nanos(u64::from(i * 7919 % 60) * 1000);
            let timer = env.send_delayed(&probe.mbox, delay, Msg::Timer(i));
            let spin = Instant::now();
            while spin.elapsed() < Duration::from_nanos(u64::from(i * 104_729 % 60) * 1000) {
                std::hint::spin_loop();
            }
            timer.cancel();
            // Sent after `cancel` returned: a timer message queued after this would violate
            // the guarantee, and would arrive after the sentinel.
            probe.mbox.send(Msg::Sentinel(i));
        }
        let mut fired = 0;
        let mut pending_timer = None;
        let mut next_sentinel = 0;
        while next_sentinel < n {
            match probe.recv("a sentinel") {
                Msg::Timer(i) => {
                    assert_eq!(i, next_sentinel, "timer {i} delivered after its cancel");
                    assert!(
                        pending_timer.replace(i).is_none(),
                        "timer {i} delivered twice"
                    );
                    fired += 1;
                }
                Msg::Sentinel(i) => {
                    assert_eq!(i, next_sentinel);
                    pending_timer = None;
                    next_sentinel += 1;
                }
            }
        }
        assert_eq!(env.timer_count(), 0);
        eprintln!("{queue:?}: {fired} of {n} timers fired before their cancel");
        // Nothing late: one more round through the timer thread.
        env.send_delayed(&probe.mbox, Duration::from_millis(1), Msg::Sentinel(n));
        assert_eq!(probe.recv("the last sentinel"), Msg::Sentinel(n));
        assert!(probe.nothing_more());
        probe.shutdown();
    }
}

#[test]
fn stopping_the_environment_cancels_its_timers() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let probe = Probe::<Msg>::new();
        let delayed = env.send_delayed(&probe.mbox, Duration::from_secs(3600), Msg::Timer(0));
        let periodic = env.send_periodic(
            &probe.mbox,
            Duration::ZERO,
            Duration::from_millis(1),
            Msg::Timer(1),
        );
        assert_eq!(probe.recv("a first tick"), Msg::Timer(1));
        env.stop();
        assert!(!delayed.is_active() && !periodic.is_active());
        assert_eq!(env.stats().timers, 0);
        // Stop cancels without dead letters; a timer scheduled afterwards is refused and its
        // message counted.
        assert!(dead.all().is_empty());
        let late = env.send_delayed(&probe.mbox, Duration::ZERO, Msg::Timer(2));
        assert!(!late.is_active());
        assert_eq!(dead.of::<Msg>(), vec![DeliveryFailure::ReceiverGone]);
        // `stop` returned after the timer thread ended: ticks queued before it may arrive,
        // none after the sentinel.
        probe.mbox.send(Msg::Sentinel(0));
        while probe.recv("the sentinel") != Msg::Sentinel(0) {}
        env.wait();
        assert!(probe.nothing_more());
        probe.shutdown();
    });
}

#[test]
fn many_timers_fire_and_cancelled_ones_are_compacted() {
    for queue in QUEUES {
        watchdog(TIMEOUT, move || many_timers(queue));
    }
}

fn many_timers(queue: TimerQueue) {
    {
        let env = Environment::builder().timer_queue(queue).start().unwrap();
        let probe = Probe::<Msg>::new();
        let n = common::count(20_000) as u32;
        // Half fire soon (fire-and-forget), half are far off and cancelled in bulk (enough
        // to compact the queue).
        let mut kept = Vec::new();
        for i in 0..n {
            let delay = if i % 2 == 0 {
                Duration::from_micros(u64::from(i % 5000))
            } else {
                Duration::from_secs(3600) + Duration::from_micros(u64::from(i))
            };
            let t = env.send_delayed(&probe.mbox, delay, Msg::Timer(i));
            if i % 2 == 1 {
                kept.push(t.cancel_on_drop());
            }
        }
        let active = env.timer_count();
        assert!(
            active >= kept.len() && active <= n as usize,
            "{active} active"
        );
        drop(kept);
        env.send_delayed(&probe.mbox, Duration::from_millis(10), Msg::Sentinel(0));
        let mut seen = vec![false; n as usize];
        // Until the sentinel.
        while let Msg::Timer(i) = probe.recv("the timers") {
            assert_eq!(i % 2, 0, "cancelled timer {i} fired");
            assert!(!std::mem::replace(&mut seen[i as usize], true));
        }
        assert!(seen.iter().step_by(2).all(|&s| s), "every kept timer fired");
        assert_eq!(env.timer_count(), 0);
        assert_eq!(env.dead_letters(), 0);
        probe.shutdown();
    }
}

#[test]
fn a_timer_to_a_gone_receiver_is_a_dead_letter() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let mbox = coop.add(Stamp::<u64> { tx }).mbox();
        let handle = env.register_coop(coop).unwrap();
        env.send_delayed(&mbox, Duration::ZERO, 1u64);
        common::recv(&rx, "the first delivery");
        handle.deregister(DeregReason::Normal);
        common::wait_until(|| handle.is_gone());
        env.send_delayed(&mbox, Duration::ZERO, 2u64);
        common::wait_until(|| !dead.of::<u64>().is_empty());
        assert_eq!(dead.of::<u64>(), vec![DeliveryFailure::ReceiverGone]);
        assert_eq!(env.dead_letters(), 1);
        assert_eq!(env.timer_count(), 0);
    });
}

/// Takes a mutable message by value.
struct Taker {
    tx: Sender<Vec<u8>>,
}

impl Agent for Taker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_mut(|me: &mut Self, v: Vec<u8>, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(v);
        })?;
        Ok(())
    }
}

#[test]
fn delayed_mutable_message_is_moved_to_a_direct_mailbox() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let taker = coop.add(Taker { tx }).mbox();
        env.register_coop(coop).unwrap();
        env.send_delayed_mut(&taker, Duration::from_millis(1), vec![1u8, 2, 3])
            .unwrap();
        assert_eq!(common::recv(&rx, "the mutable message"), vec![1, 2, 3]);
        let err = env
            .send_delayed_mut(&env.named_mbox("n"), Duration::ZERO, vec![0u8])
            .unwrap_err();
        assert!(err.to_string().contains("multi-consumer"), "{err}");
        assert_eq!(env.timer_count(), 0);
    });
}
