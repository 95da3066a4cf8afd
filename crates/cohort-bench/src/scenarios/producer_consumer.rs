//! ProducerConsumer (theron-performance.txt, ProducerConsumer): producer agents (two in
//! Theron's, each sending half of the 50,000,000 messages) send integer messages concurrently to
//! one consumer agent, which counts them, checks their total once all have arrived and stops
//! the environment. Like CountingActor the writers can flood the reader's unbounded queue;
//! unlike it the writers are agents, so they compete with the consumer for the dispatcher's
//! threads. Measured: messages / s, from the first producer's start to the last message.
//!
//! A producer sends `burst` messages per event and continues with a signal to itself, so that
//! producers sharing a thread (or a pool) with the consumer take turns with it instead of
//! holding the thread for their whole run; `--burst` equal to the count gives one loop per
//! producer.

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use cohort::{Agent, Context, DefineError, Mbox};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Theron's number of producers.
pub const PRODUCERS: u64 = 2;
/// Messages a producer sends per event.
pub const BURST: u64 = 1_000;

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    pub elapsed: Duration,
    pub count: u64,
}

#[derive(Default)]
struct Shared {
    started: OnceLock<Instant>,
    /// When the consumer saw the last message, what it counted and their total.
    done: Mutex<Option<(Instant, u64, u64)>>,
}

/// "Send the next burst."
struct Continue;

struct Producer {
    consumer: Mbox,
    /// The next value to send; values run from 1 to `last`.
    next: u64,
    last: u64,
    burst: u64,
    shared: Arc<Shared>,
}

impl Producer {
    fn send_burst(&mut self, ctx: &mut Context<'_, Self>) {
        let end = self.last.min(self.next.saturating_add(self.burst - 1));
        for v in self.next..=end {
            self.consumer.send(v);
        }
        self.next = end + 1;
        if self.next <= self.last {
            ctx.send_self(Continue);
        }
    }
}

impl Agent for Producer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Continue, ctx: &mut Context<'_, Self>| me.send_burst(ctx))?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.shared.started.get_or_init(Instant::now);
        self.send_burst(ctx);
    }
}

struct Consumer {
    expected: u64,
    count: u64,
    sum: u64,
    shared: Arc<Shared>,
}

impl Agent for Consumer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, v: &u64, ctx: &mut Context<'_, Self>| {
            me.count += 1;
            me.sum = me.sum.wrapping_add(*v);
            if me.count == me.expected {
                *me.shared.done.lock().unwrap() = Some((Instant::now(), me.count, me.sum));
                ctx.stop_environment();
            }
        })?;
        Ok(())
    }
}

/// How `count` messages are shared among `producers`: as equal as possible.
pub fn shares(count: u64, producers: u64) -> Vec<u64> {
    (0..producers)
        .map(|p| count / producers + u64::from(p < count % producers))
        .collect()
}

fn triangle(n: u64) -> u64 {
    if n.is_multiple_of(2) {
        (n / 2).wrapping_mul(n.wrapping_add(1))
    } else {
        n.wrapping_mul(n.div_ceil(2))
    }
}

/// Checks the parameters.
pub fn validate(count: u64, producers: u64, burst: u64) -> Result<(), String> {
    if producers == 0 {
        return Err("--producers must be at least 1".into());
    }
    if producers > 10_000 {
        return Err(format!(
            "--producers ({producers}) is too large: at most 10,000"
        ));
    }
    if count < producers {
        return Err(format!(
            "--count ({count}) must be at least --producers ({producers}): every producer sends"
        ));
    }
    if burst == 0 {
        return Err("--burst must be at least 1".into());
    }
    Ok(())
}

/// Runs one ProducerConsumer: `producers` agents sending `count` messages in all to one
/// consumer; every agent bound to `placement`.
pub fn run_once(
    count: u64,
    producers: u64,
    burst: u64,
    placement: Placement,
) -> Result<Outcome, String> {
    validate(count, producers, burst)?;
    placement.validate()?;
    let shares = shares(count, producers);
    let expected_sum = shares
        .iter()
        .fold(0u64, |a, &n| a.wrapping_add(triangle(n)));
    let shared = Arc::new(Shared::default());
    let shared2 = shared.clone();
    cohort::launch(move |env| {
        let mut coop = env.new_coop();
        coop.set_binder(placement.binder(env)?);
        let consumer = coop
            .add(Consumer {
                expected: count,
                count: 0,
                sum: 0,
                shared: shared2.clone(),
            })
            .mbox();
        for n in shares {
            coop.add(Producer {
                consumer: consumer.clone(),
                next: 1,
                last: n,
                burst,
                shared: shared2.clone(),
            });
        }
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let started = *shared.started.get().ok_or("no producer ever started")?;
    let (at, got, sum) = shared
        .done
        .lock()
        .unwrap()
        .take()
        .ok_or("the consumer never received every message")?;
    if got != count || sum != expected_sum {
        return Err(format!(
            "the consumer received {got} messages summing to {sum}, expected {count} summing to {expected_sum}"
        ));
    }
    Ok(Outcome {
        elapsed: at.saturating_duration_since(started),
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumes_every_message() {
        for p in [
            Placement::of(Dispatcher::OneThread),
            Placement::of(Dispatcher::ActiveObj),
            Placement::of(Dispatcher::ThreadPool).fifo(super::super::FifoArg::Individual),
            Placement::of(Dispatcher::WorkStealing),
        ] {
            let o =
                crate::watchdog::within(20, move || run_once(20_001, PRODUCERS, 100, p)).unwrap();
            assert_eq!(o.count, 20_001);
        }
        // One loop per producer, and more producers than a burst.
        let p = Placement::of(Dispatcher::WorkStealing);
        let o = crate::watchdog::within(20, move || run_once(10_000, 2, 10_000, p)).unwrap();
        assert_eq!(o.count, 10_000);
        let o = crate::watchdog::within(20, move || run_once(1_000, 7, 3, p)).unwrap();
        assert_eq!(o.count, 1_000);
    }

    #[test]
    fn shares_are_even() {
        assert_eq!(shares(50_000_000, 2), vec![25_000_000, 25_000_000]);
        assert_eq!(shares(7, 3), vec![3, 2, 2]);
        assert_eq!(triangle(4), 10);
        assert_eq!(triangle(5), 15);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let p = Placement::of(Dispatcher::OneThread);
        assert!(run_once(0, 2, 10, p).unwrap_err().contains("--count"));
        assert!(run_once(1, 2, 10, p).unwrap_err().contains("--count"));
        assert!(run_once(10, 0, 10, p).unwrap_err().contains("--producers"));
        assert!(run_once(10, 2, 0, p).unwrap_err().contains("--burst"));
    }
}
