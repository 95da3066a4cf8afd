//! Ping-pong (sobjectizer-performance-part3.txt, "Ping pong: performance of 1:1 messaging";
//! theron-performance.txt, PingPong): two agents exchange signals; the pinger sends the next
//! ping only when the pong arrives. Throughput = round trips / s; real throughput = messages
//! / s (twice that), the figure usually quoted. A last run records every round trip's latency.

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use cohort::{Agent, Context, DefineError, Mbox, MessageLimits};
use hdrhistogram::Histogram;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The ping signal.
pub struct Ping;
/// The pong signal.
pub struct Pong;

/// What one run measured.
pub struct Outcome {
    pub elapsed: Duration,
    pub round_trips: u64,
    pub latency: Option<Histogram<u64>>,
}

#[derive(Default)]
struct Shared {
    elapsed: Option<Duration>,
    round_trips: u64,
    latency: Option<Histogram<u64>>,
}

struct Pinger {
    limits: bool,
    ponger: Option<Mbox>,
    count: u64,
    left: u64,
    started: Option<Instant>,
    last: Instant,
    latency: Option<Histogram<u64>>,
    out: Arc<Mutex<Shared>>,
}

impl Pinger {
    fn on_pong(&mut self, _: &Pong, ctx: &mut Context<'_, Self>) {
        if let Some(h) = &mut self.latency {
            let now = Instant::now();
            let _ = h.record((now - self.last).as_nanos() as u64);
            self.last = now;
        }
        self.left -= 1;
        if self.left > 0 {
            self.send_ping();
        } else {
            let elapsed = self.started.map(|s| s.elapsed()).unwrap_or_default();
            let mut out = self.out.lock().unwrap();
            out.elapsed = Some(elapsed);
            out.round_trips = self.count;
            out.latency = self.latency.take();
            ctx.stop_environment();
        }
    }

    fn send_ping(&self) {
        if let Some(p) = &self.ponger {
            p.send(Ping);
        }
    }
}

impl Agent for Pinger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if self.limits {
            ctx.set_message_limits(MessageLimits::new().drop::<Pong>(LIMIT))?;
        }
        ctx.on(Self::on_pong)?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.started = Some(Instant::now());
        self.last = Instant::now();
        self.send_ping();
    }
}

struct Ponger {
    limits: bool,
    pinger: Mbox,
}

/// The message limit of `--limits` runs: never reached (one message is in flight), so the
/// run measures what counting costs.
const LIMIT: usize = 1024;

impl Agent for Ponger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if self.limits {
            ctx.set_message_limits(MessageLimits::new().drop::<Ping>(LIMIT))?;
        }
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| me.pinger.send(Pong))?;
        Ok(())
    }
}

/// Runs one ping-pong of `round_trips` on `placement`; with `limits`, both agents declare
/// a message limit (never reached) for the message they receive.
pub fn run_once(
    round_trips: u64,
    placement: Placement,
    record_latency: bool,
    limits: bool,
) -> Result<Outcome, String> {
    if round_trips == 0 {
        return Err("--count must be at least 1".into());
    }
    placement.validate()?;
    let out = Arc::new(Mutex::new(Shared::default()));
    let out2 = out.clone();
    cohort::launch(move |env| {
        let mut coop = env.new_coop();
        coop.set_binder(placement.binder(env)?);
        let latency =
            record_latency.then(|| Histogram::new(3).expect("3 significant digits is valid"));
        let pinger = coop.add(Pinger {
            limits,
            ponger: None,
            count: round_trips,
            left: round_trips,
            started: None,
            last: Instant::now(),
            latency,
            out: out2,
        });
        let ponger = coop.add(Ponger {
            limits,
            pinger: pinger.mbox(),
        });
        coop.agent_mut(&pinger).ponger = Some(ponger.mbox());
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let mut out = out.lock().unwrap();
    let elapsed = out.elapsed.ok_or("the pinger never finished")?;
    if out.round_trips != round_trips {
        return Err(format!(
            "expected {round_trips} round trips, counted {}",
            out.round_trips
        ));
    }
    Ok(Outcome {
        elapsed,
        round_trips,
        latency: out.latency.take(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_round_trip() {
        for d in [
            Dispatcher::OneThread,
            Dispatcher::ActiveObj,
            Dispatcher::ThreadPool,
            Dispatcher::WorkStealing,
        ] {
            for limits in [false, true] {
                let d = Placement::of(d);
                let o = crate::watchdog::within(20, move || run_once(2_000, d, true, limits));
                let o = o.unwrap();
                assert_eq!(o.round_trips, 2_000);
                assert_eq!(o.latency.map(|h| h.len()), Some(2_000));
            }
        }
    }

    #[test]
    fn zero_count_is_refused() {
        assert!(run_once(0, Placement::of(Dispatcher::OneThread), false, false).is_err());
    }
}
