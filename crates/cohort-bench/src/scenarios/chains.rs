//! Message chains and request/reply (sobjectizer's mchain and request_value):
//!
//! - `request-reply`: a plain thread sends `count` requests, one at a time, to an agent that
//!   answers each (`Context::on_request`), waiting for every reply with
//!   `PendingReply::wait` (spinning `--spin-us` before it sleeps, default
//!   `defaults::REPLY_SPIN`): the round-trip latency (p50/p99/p99.9, hdrhistogram) and round
//!   trips per second.
//! - `chain-throughput`: a producer thread sends `count` integers to an agent's direct
//!   mailbox; the agent forwards each to a message chain's mailbox; the benchmark thread
//!   receives them from the chain (`receive(from(&chain).handle_n(count))`). Messages per
//!   second from the first send to the last receive, with an unbounded chain or a bounded
//!   one (`capacity` > 0, the agent waiting when it is full).

use super::Placement;
use cohort::mchain::{Handlers, MchainParams, StopReason, from, receive};
use cohort::{Agent, Context, DefineError, Environment, Mbox, WrappedEnv};
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};

/// How long a benchmark waits for one reply before it calls the run failed.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

struct Echo;
impl Agent for Echo {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|_: &mut Self, n: &u64, _: &mut Context<'_, Self>| n + 1)?;
        Ok(())
    }
}

/// Checks the arguments and starts an environment.
fn start(count: u64, placement: Placement) -> Result<WrappedEnv, String> {
    if count == 0 {
        return Err("--count must be at least 1".into());
    }
    placement.validate()?;
    Environment::builder()
        .start()
        .map_err(|e| format!("environment: {e}"))
}

/// Registers `agent` alone in a cooperation placed by `placement`; its mailbox.
fn add_one<A: Agent>(env: &Environment, agent: A, placement: Placement) -> Result<Mbox, String> {
    let mut coop = env.new_coop();
    coop.set_binder(placement.binder(env)?);
    let mbox = coop.add(agent).mbox();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    Ok(mbox)
}

/// What one request/reply run measured.
pub struct RequestOutcome {
    pub elapsed: Duration,
    pub count: u64,
    /// Round-trip nanoseconds.
    pub latency: Histogram<u64>,
}

/// `count` requests from this thread to one agent, one at a time.
pub fn request_reply_once(
    count: u64,
    spin: Option<Duration>,
    placement: Placement,
) -> Result<RequestOutcome, String> {
    let env = start(count, placement)?;
    let echo = add_one(&env, Echo, placement)?;
    let mut latency =
        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| e.to_string())?;
    let started = Instant::now();
    for i in 0..count {
        let t = Instant::now();
        let mut pending = echo.request::<u64, u64>(i);
        if let Some(spin) = spin {
            pending = pending.spin(spin);
        }
        let r = pending
            .wait(REPLY_TIMEOUT)
            .map_err(|e| format!("request {i}: {e}"))?;
        latency.saturating_record(t.elapsed().as_nanos() as u64);
        if r != i + 1 {
            return Err(format!("request {i}: reply {r}, expected {}", i + 1));
        }
    }
    let elapsed = started.elapsed();
    env.stop_and_wait();
    Ok(RequestOutcome {
        elapsed,
        count,
        latency,
    })
}

struct ToChain(Mbox);
impl Agent for ToChain {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, n: &u64, _: &mut Context<'_, Self>| me.0.send(*n))?;
        Ok(())
    }
}

/// `count` integers thread -> agent -> chain -> this thread; elapsed from the first send to
/// the last receive. `capacity` 0: an unbounded chain.
pub fn chain_throughput_once(
    count: u64,
    capacity: usize,
    placement: Placement,
) -> Result<Duration, String> {
    let env = start(count, placement)?;
    let params = if capacity == 0 {
        MchainParams::unbounded()
    } else {
        MchainParams::bounded(capacity)
            .preallocated()
            .wait_on_full(REPLY_TIMEOUT)
    };
    let chain = env.create_mchain(params).map_err(|e| e.to_string())?;
    let agent = add_one(&env, ToChain(chain.as_mbox()), placement)?;
    let started = Instant::now();
    let producer = std::thread::spawn(move || {
        for i in 0..count {
            agent.send(i);
        }
    });
    let mut sum = 0u64;
    let r = receive(
        from(&chain)
            .handle_n(count as usize)
            .empty_timeout(REPLY_TIMEOUT),
        &mut Handlers::new().on(|n: &u64| sum = sum.wrapping_add(*n)),
    );
    let elapsed = started.elapsed();
    producer.join().map_err(|_| "the producer panicked")?;
    env.stop_and_wait();
    let expected = (0..count).fold(0u64, |a, b| a.wrapping_add(b));
    if r.stop != StopReason::HandleN || sum != expected {
        return Err(format!(
            "received {} messages summing to {sum} ({:?}), expected {count} summing to {expected}",
            r.handled, r.stop
        ));
    }
    Ok(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::Dispatcher;

    #[test]
    fn request_reply_counts_every_round_trip() {
        crate::watchdog::within(60, || {
            let o = request_reply_once(100, None, Placement::of(Dispatcher::OneThread)).unwrap();
            assert_eq!(o.latency.len(), 100);
            assert_eq!(o.count, 100);
        });
    }

    #[test]
    fn chain_throughput_delivers_everything_bounded_and_not() {
        crate::watchdog::within(60, || {
            for cap in [0, 8] {
                chain_throughput_once(1_000, cap, Placement::of(Dispatcher::OneThread)).unwrap();
            }
            assert!(chain_throughput_once(0, 0, Placement::of(Dispatcher::OneThread)).is_err());
        });
    }
}
