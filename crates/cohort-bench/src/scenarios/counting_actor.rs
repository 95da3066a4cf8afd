//! CountingActor (theron-performance.txt, CountingActor): a plain thread (Theron's "writing
//! thread", here the thread that runs the benchmark) sends `count` integer messages to one
//! counting agent as fast as it can, then a final request; the agent adds the messages up and,
//! on the final request, checks how many it received and their total. The writer can flood
//! the reader's unbounded queue, so this measures enqueueing from outside the runtime plus
//! the memory traffic of a long queue: messages / s, from the first send to the counter's
//! check. Theron's full run sends 50,000,000 messages; 3,000,000 is the size "typically used
//! online".

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use cohort::{Agent, Context, DefineError, Environment};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The writer's last message: "how many did you count?".
struct GetCount;

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    /// From the first send to the counter's check.
    pub elapsed: Duration,
    /// How long the writer took to send everything.
    pub send_elapsed: Duration,
    pub count: u64,
}

struct Tally {
    at: Instant,
    count: u64,
    sum: u64,
}

struct Counter {
    count: u64,
    sum: u64,
    out: Arc<Mutex<Option<Tally>>>,
}

impl Agent for Counter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, v: &u64, _: &mut Context<'_, Self>| {
            me.count += 1;
            me.sum = me.sum.wrapping_add(*v);
        })?;
        ctx.on(|me: &mut Self, _: &GetCount, ctx: &mut Context<'_, Self>| {
            *me.out.lock().unwrap() = Some(Tally {
                at: Instant::now(),
                count: me.count,
                sum: me.sum,
            });
            ctx.stop_environment();
        })?;
        Ok(())
    }
}

/// 1 + 2 + ... + n (wrapping, as the counter adds).
fn expected_sum(n: u64) -> u64 {
    let (a, b) = if n.is_multiple_of(2) {
        (n / 2, n.wrapping_add(1))
    } else {
        (n, n.div_ceil(2))
    };
    a.wrapping_mul(b)
}

/// Runs one CountingActor: `count` messages (the values 1..=count) from this thread.
pub fn run_once(count: u64, placement: Placement) -> Result<Outcome, String> {
    if count == 0 {
        return Err("--count must be at least 1".into());
    }
    placement.validate()?;
    let out = Arc::new(Mutex::new(None));
    let env = Environment::builder()
        .start()
        .map_err(|e| format!("environment: {e}"))?;
    let mut coop = env.new_coop();
    coop.set_binder(placement.binder(&env)?);
    let counter = coop
        .add(Counter {
            count: 0,
            sum: 0,
            out: out.clone(),
        })
        .mbox();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    let started = Instant::now();
    for i in 1..=count {
        counter.send(i);
    }
    let send_elapsed = started.elapsed();
    counter.send(GetCount);
    drop(counter);
    env.wait();
    drop(env);
    let tally = out
        .lock()
        .unwrap()
        .take()
        .ok_or("the counter never answered")?;
    if tally.count != count || tally.sum != expected_sum(count) {
        return Err(format!(
            "the counter received {} messages summing to {}, expected {count} summing to {}",
            tally.count,
            tally.sum,
            expected_sum(count)
        ));
    }
    Ok(Outcome {
        elapsed: tally.at.saturating_duration_since(started),
        send_elapsed,
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_message() {
        for p in [
            Placement::of(Dispatcher::OneThread),
            Placement::of(Dispatcher::ActiveObj),
            Placement::of(Dispatcher::ThreadPool),
            Placement::of(Dispatcher::WorkStealing),
        ] {
            let o = crate::watchdog::within(20, move || run_once(20_000, p)).unwrap();
            assert_eq!(o.count, 20_000);
        }
    }

    #[test]
    fn sums() {
        assert_eq!(expected_sum(1), 1);
        assert_eq!(expected_sum(4), 10);
        assert_eq!(expected_sum(5), 15);
        assert_eq!(expected_sum(50_000_000), 1_250_000_025_000_000);
    }

    #[test]
    fn zero_count_is_refused() {
        assert!(
            run_once(0, Placement::of(Dispatcher::OneThread))
                .unwrap_err()
                .contains("--count")
        );
    }
}
