//! Ping-pong (sobjectizer-performance-part3.txt, "Ping pong: performance of 1:1 messaging";
//! theron-performance.txt, PingPong): two agents exchange signals; the pinger sends the next
//! ping only when the pong arrives. Throughput = round trips / s; real throughput = messages
//! / s (twice that), the figure usually quoted. A last run records every round trip's latency.
//!
//! With `--mbox named` the agents talk through two named mailboxes (`ping`, `pong`) instead of
//! each other's direct mailbox: each send then goes through a named mailbox's subscriber
//! lookup and a broadcast demand (cohort's target: within 25 % of direct).

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use cohort::{Agent, Context, DefineError, Mbox, MessageLimits};
use hdrhistogram::Histogram;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which mailboxes the two agents send to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mailbox {
    /// Each other's direct mailbox.
    Direct,
    /// Two named mailboxes, `ping` and `pong`, each with one subscriber.
    Named,
}

impl Mailbox {
    /// The variant's words in results.
    pub fn label(self) -> &'static str {
        match self {
            Mailbox::Direct => "direct mailboxes",
            Mailbox::Named => "named mailboxes",
        }
    }
}

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
    mailbox: Mailbox,
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
        match self.mailbox {
            Mailbox::Direct => ctx.on(Self::on_pong)?,
            Mailbox::Named => {
                ctx.subscribe(&ctx.environment().named_mbox("pong"), Self::on_pong)?
            }
        }
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.started = Some(Instant::now());
        self.last = Instant::now();
        self.send_ping();
    }
}

struct Ponger {
    mailbox: Mailbox,
    limits: bool,
    pinger: Mbox,
}

/// The message limit of `--limits` runs: never reached (one message is in flight), so the
/// run measures what counting costs.
const LIMIT: usize = 1024;

impl Ponger {
    fn on_ping(&mut self, _: &Ping, _: &mut Context<'_, Self>) {
        self.pinger.send(Pong)
    }
}

impl Agent for Ponger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if self.limits {
            ctx.set_message_limits(MessageLimits::new().drop::<Ping>(LIMIT))?;
        }
        match self.mailbox {
            Mailbox::Direct => ctx.on(Self::on_ping)?,
            Mailbox::Named => {
                ctx.subscribe(&ctx.environment().named_mbox("ping"), Self::on_ping)?
            }
        }
        Ok(())
    }
}

/// Runs one ping-pong of `round_trips` on `placement` through `mailbox`es; with `limits`,
/// both agents declare a message limit (never reached) for the message they receive.
pub fn run_once(
    round_trips: u64,
    placement: Placement,
    record_latency: bool,
    mailbox: Mailbox,
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
            mailbox,
            limits,
            ponger: None,
            count: round_trips,
            left: round_trips,
            started: None,
            last: Instant::now(),
            latency,
            out: out2,
        });
        let (to_pinger, to_ponger) = match mailbox {
            Mailbox::Direct => (pinger.mbox(), None),
            Mailbox::Named => (env.named_mbox("pong"), Some(env.named_mbox("ping"))),
        };
        let ponger = coop.add(Ponger {
            mailbox,
            limits,
            pinger: to_pinger,
        });
        coop.agent_mut(&pinger).ponger = Some(to_ponger.unwrap_or_else(|| ponger.mbox()));
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
            for (m, limits) in [
                (Mailbox::Direct, false),
                (Mailbox::Named, false),
                (Mailbox::Direct, true),
            ] {
                let d = Placement::of(d);
                // Few round trips: on a thread per agent each one is two wake-ups, slow when
                // the test shares busy cores.
                let o = crate::watchdog::within(20, move || run_once(200, d, true, m, limits));
                let o = o.unwrap();
                assert_eq!(o.round_trips, 200);
                assert_eq!(o.latency.map(|h| h.len()), Some(200));
            }
        }
    }

    #[test]
    fn zero_count_is_refused() {
        assert!(
            run_once(
                0,
                Placement::of(Dispatcher::OneThread),
                false,
                Mailbox::Direct,
                false
            )
            .is_err()
        );
    }
}
