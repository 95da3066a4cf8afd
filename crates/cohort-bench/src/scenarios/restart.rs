//! `restart`: what supervision costs when something fails.
//!
//! Latency: a supervised worker panics; its supervisor (one-for-one, no back-off) builds a
//! new incarnation, whose first message (sent to itself in `start`) is timed from the
//! instant before the panic. One restart at a time, driven from the main thread.
//!
//! Crash storm: on one dispatcher, a supervised crasher is made to panic by a 1 ms periodic
//! timer (1,000 panics per second) while a healthy pair plays ping-pong; the pair's round
//! trips per second are measured without the storm, then during it, and the process's RSS
//! at the storm's start and end.

use super::Placement;
use cohort::supervision::{ChildSpec, Intensity, Supervisor};
use cohort::{Agent, Binder, Context, DefineError, Environment, Mbox};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Makes the crasher panic.
#[derive(Clone)]
struct Crash;
/// The new incarnation's first message.
struct First;

/// Panics on `Crash`, noting the instant just before; a new incarnation times its first
/// message from that instant.
struct Crasher {
    inbox: Mbox,
    since: Arc<Mutex<Option<Instant>>>,
    report: Option<Sender<Option<Duration>>>,
}

impl Agent for Crasher {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, _: &Crash, _: &mut Context<'_, Self>| {
                *me.since.lock().unwrap() = Some(Instant::now());
                panic!("crash on request");
            },
        )?;
        ctx.on(|me: &mut Self, _: &First, _: &mut Context<'_, Self>| {
            // The first incarnation has no panic before it: `None` says it is ready.
            let since = me.since.lock().unwrap().take();
            if let Some(r) = &me.report {
                let _ = r.send(since.map(|t| t.elapsed()));
            }
        })?;
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_self(First);
    }
}

/// A panic hook, as `std::panic::take_hook` returns it.
type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send>;

/// Silences the default panic hook while alive (every restart here is a panic on purpose).
pub struct QuietPanics(Option<PanicHook>);

impl QuietPanics {
    /// Installs a silent hook; the old one comes back on drop.
    pub fn new() -> Self {
        let old = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        Self(Some(old))
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            std::panic::set_hook(h);
        }
    }
}

fn env_and_binder(placement: Placement) -> Result<(cohort::WrappedEnv, Binder), String> {
    let env = Environment::builder()
        .autoshutdown(false)
        .start()
        .map_err(|e| e.to_string())?;
    let binder = placement.binder(&env)?;
    Ok((env, binder))
}

/// Registers a one-for-one supervisor (no back-off, no practical intensity limit) over one
/// crasher listening on `inbox`.
fn supervise(
    env: &Environment,
    binder: &Binder,
    inbox: &Mbox,
    report: Option<Sender<Option<Duration>>>,
) -> Result<(), String> {
    let (b, i) = (binder.clone(), inbox.clone());
    let since = Arc::new(Mutex::new(None));
    let sup = Supervisor::builder("bench")
        .intensity(Intensity::new(u32::MAX, Duration::from_secs(1)))
        .child(ChildSpec::new("crasher", move |coop| {
            coop.set_binder(b.clone());
            coop.add(Crasher {
                inbox: i.clone(),
                since: since.clone(),
                report: report.clone(),
            });
        }))
        .build()
        .map_err(|e| e.to_string())?;
    let mut coop = env.new_coop();
    coop.set_binder(binder.clone());
    coop.add(sup);
    env.register_coop(coop).map_err(|e| e.to_string())?;
    Ok(())
}

/// Panic-to-first-message latencies of `samples` restarts, in nanoseconds.
pub fn run_latency(placement: Placement, samples: u64) -> Result<Histogram<u64>, String> {
    let _quiet = QuietPanics::new();
    let (env, binder) = env_and_binder(placement)?;
    let inbox = env.named_mbox("crasher");
    let (tx, rx) = mpsc::channel();
    supervise(&env, &binder, &inbox, Some(tx))?;
    let mut h = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    let limit = Duration::from_secs(10);
    let next = || {
        rx.recv_timeout(limit)
            .map_err(|_| "a crasher did not handle its first message".to_string())
    };
    // The first incarnation is subscribed once it handles its first message.
    next()?;
    for _ in 0..samples {
        inbox.send(Crash);
        let d = next()?.ok_or("a first message without a panic before it")?;
        h.record(d.as_nanos() as u64).map_err(|e| e.to_string())?;
    }
    env.stop_and_wait();
    Ok(h)
}

/// Bounces one message between two agents forever, counting round trips.
struct Player {
    peer: Option<Mbox>,
    trips: Arc<AtomicU64>,
    serve: bool,
}

struct Ball;

impl Agent for Player {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ball, _: &mut Context<'_, Self>| {
            if me.serve {
                me.trips.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(p) = &me.peer {
                p.send(Ball);
            }
        })?;
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        if self.serve
            && let Some(p) = &self.peer
        {
            p.send(Ball);
        }
    }
}

/// What a crash storm did.
pub struct Storm {
    /// Ping-pong round trips per second without the storm.
    pub calm_trips_per_s: f64,
    /// The same during the storm.
    pub storm_trips_per_s: f64,
    /// Panics (restarts) per second during the storm.
    pub panics_per_s: f64,
    /// RSS at the storm's start and end, if known.
    pub rss_start: Option<u64>,
    pub rss_end: Option<u64>,
}

/// Ping-pong for `secs` undisturbed, then `secs` with 1,000 panics per second in a supervised
/// crasher on the same dispatcher.
pub fn run_storm(placement: Placement, secs: f64) -> Result<Storm, String> {
    let _quiet = QuietPanics::new();
    let (env, binder) = env_and_binder(placement)?;
    let trips = Arc::new(AtomicU64::new(0));
    let mut coop = env.new_coop();
    coop.set_binder(binder.clone());
    let a = coop.add(Player {
        peer: None,
        trips: trips.clone(),
        serve: true,
    });
    let b = coop.add(Player {
        peer: Some(a.mbox()),
        trips: trips.clone(),
        serve: false,
    });
    coop.agent_mut(&a).peer = Some(b.mbox());
    env.register_coop(coop).map_err(|e| e.to_string())?;
    let inbox = env.named_mbox("crasher");
    supervise(&env, &binder, &inbox, None)?;
    let window = Duration::from_secs_f64(secs);
    let rate = |since: Instant, before: u64| {
        (trips.load(Ordering::Relaxed) - before) as f64 / since.elapsed().as_secs_f64()
    };

    let (t, n) = (Instant::now(), trips.load(Ordering::Relaxed));
    std::thread::sleep(window);
    let calm = rate(t, n);

    let rss_start = crate::rss::current_bytes();
    let restarts = env.stats().supervision.restarts;
    let ms = Duration::from_millis(1);
    let timer = env.send_periodic(&inbox, ms, ms, Crash);
    let (t, n) = (Instant::now(), trips.load(Ordering::Relaxed));
    std::thread::sleep(window);
    let storm = rate(t, n);
    let panics = (env.stats().supervision.restarts - restarts) as f64 / t.elapsed().as_secs_f64();
    drop(timer);
    let rss_end = crate::rss::current_bytes();
    env.stop_and_wait();
    Ok(Storm {
        calm_trips_per_s: calm,
        storm_trips_per_s: storm,
        panics_per_s: panics,
        rss_start,
        rss_end,
    })
}
