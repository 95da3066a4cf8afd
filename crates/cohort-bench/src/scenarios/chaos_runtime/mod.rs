//! `chaos-runtime`: many faults at once inside one process, every message checked by the
//! ledger.
//!
//! The run is a sequence of rounds; each round is one environment with a dispatcher of every
//! kind (pools with each fifo), and while it lives:
//!
//! - sender threads pick a receiver at random and send it a burst of numbered messages
//!   (`cohort::testing::ledger`: one stream per sender and receiver);
//! - churn threads register cooperations of receivers on a random dispatcher (some as
//!   children of others) and deregister them at random, while senders still hold their
//!   mailboxes;
//! - some receivers panic now and then (their cooperation deregisters), some have a message
//!   limit that overflows; supervised receivers on named mailboxes panic and are restarted;
//! - a timer thread schedules delayed messages through a mailbox that records the firing,
//!   and cancels half of them around the moment they fire;
//! - the environment is stopped in the middle of all that.
//!
//! After each round every numbered message must be handled once or counted as a dead letter,
//! none twice, in order per stream; every delayed message sent by its timer handled or
//! counted once, one not sent neither, and every message value dropped once.

pub mod agents;

use agents::{Num, Receiver, StreamKey, Tap, Timed, TimerBook, TimerTally, record_dead_letter};
use cohort::supervision::{ChildSpec, Intensity, Supervisor};
use cohort::testing::ledger::{Ledger, Violation};
use cohort::{Binder, CoopHandle, DeregReason, Environment, Mbox, RegisterError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Supervised receivers per round (each on a named mailbox, restarted after each panic).
const SUPERVISED: usize = 3;
/// Cooperations a churn thread keeps registered at most.
const MAX_LIVE: usize = 6;
/// The longest burst a sender sends to one receiver.
const MAX_BURST: u64 = 24;
/// How long the threads keep going after `stop` (the race with the stop).
const AFTER_STOP: Duration = Duration::from_millis(20);

/// The run's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long the whole run lasts.
    pub total: Duration,
    /// How long one environment lives before it is stopped.
    pub round: Duration,
    /// Sender threads.
    pub senders: usize,
    /// Threads registering and deregistering cooperations.
    pub churners: usize,
    /// Seeds the random choices.
    pub seed: u64,
}

impl Config {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.total.is_zero() {
            return Err("--secs must be at least 1".into());
        }
        if self.round.is_zero() {
            return Err("--round-ms must be at least 1".into());
        }
        if self.senders == 0 || self.churners == 0 {
            return Err("--senders and --churners must be at least 1".into());
        }
        Ok(())
    }
}

/// What the run did and found.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub rounds: u64,
    pub elapsed: Duration,
    /// Numbered messages sent, handled, and counted as dead letters by reason.
    pub sent: u64,
    pub handled: u64,
    pub dead: BTreeMap<String, u64>,
    /// Handled messages (numbered and delayed) per dispatcher kind.
    pub handled_by_kind: BTreeMap<String, u64>,
    pub coops_registered: u64,
    pub coops_deregistered: u64,
    pub panics: u64,
    pub restarts: u64,
    pub timers: TimerTally,
    /// Numbered messages neither handled nor counted as dead letters (must be 0).
    pub unaccounted: u64,
    /// Numbered messages handled twice (must be 0).
    pub duplicates: u64,
    /// Numbered messages handled out of order within their stream (must be 0).
    pub reordered: u64,
    /// Every violation found, with its round, the first few of each round (empty: the run
    /// passed).
    pub violations: Vec<String>,
}

impl Outcome {
    /// True when nothing was lost, duplicated, reordered or leaked, and no thread failed.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    fn add(&mut self, r: Outcome) {
        self.rounds += r.rounds;
        self.sent += r.sent;
        self.handled += r.handled;
        for (k, v) in r.dead {
            *self.dead.entry(k).or_default() += v;
        }
        for (k, v) in r.handled_by_kind {
            *self.handled_by_kind.entry(k).or_default() += v;
        }
        self.coops_registered += r.coops_registered;
        self.coops_deregistered += r.coops_deregistered;
        self.panics += r.panics;
        self.restarts += r.restarts;
        let (a, b) = (&mut self.timers, r.timers);
        a.scheduled += b.scheduled;
        a.fired += b.fired;
        a.handled += b.handled;
        a.dead += b.dead;
        a.lost += b.lost;
        a.duplicates += b.duplicates;
        a.bad_drops += b.bad_drops;
        self.unaccounted += r.unaccounted;
        self.duplicates += r.duplicates;
        self.reordered += r.reordered;
        self.violations.extend(r.violations);
    }
}

/// Where the run is, for a watchdog: a counter that moves while it makes progress, and the
/// phase it is in.
#[derive(Default)]
pub struct Progress {
    pub ticks: AtomicU64,
    pub phase: Mutex<String>,
}

impl Progress {
    fn enter(&self, phase: String) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = phase;
    }

    /// The phase last entered.
    pub fn phase(&self) -> String {
        self.phase.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A small xorshift generator: the choices need no quality, only speed and a seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A receiver senders may pick: its mailbox and its stream key per sender.
#[derive(Clone)]
struct Target {
    name: Arc<str>,
    mbox: Mbox,
    keys: Arc<Vec<StreamKey>>,
}

impl Target {
    fn new(name: String, mbox: Mbox, senders: usize) -> Self {
        let keys = (0..senders)
            .map(|s| Arc::new((format!("s{s}"), name.clone())))
            .collect();
        Self {
            name: name.into(),
            mbox,
            keys: Arc::new(keys),
        }
    }
}

/// A registered cooperation of receivers and their names.
type Live = (CoopHandle, Vec<Arc<str>>);

/// A dispatcher of the round: its label, binder and handled-message counter.
struct Kind {
    label: String,
    binder: Binder,
    handled: Arc<AtomicU64>,
}

/// What a round's threads share.
struct Round {
    env: Environment,
    ledger: Arc<Ledger>,
    book: Arc<TimerBook>,
    kinds: Vec<Kind>,
    targets: Mutex<Vec<Target>>,
    senders: usize,
    stop: AtomicBool,
    serial: AtomicU64,
    registered: AtomicU64,
    deregistered: AtomicU64,
    progress: Arc<Progress>,
}

impl Round {
    fn random_target(&self, rng: &mut Rng) -> Option<Target> {
        let t = self.targets.lock().unwrap_or_else(|e| e.into_inner());
        (!t.is_empty()).then(|| t[rng.below(t.len() as u64) as usize].clone())
    }

    fn retire(&self, names: &[Arc<str>]) {
        self.targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|t| !names.contains(&t.name));
    }

    fn receiver(&self, kind: usize, rng: &mut Rng, named: Option<Mbox>) -> Receiver {
        Receiver {
            ledger: self.ledger.clone(),
            book: self.book.clone(),
            fragile: named.is_some() || rng.below(3) == 0,
            limit: (rng.below(3) == 0).then(|| 2 + rng.below(16) as usize),
            named,
            handled: self.kinds[kind].handled.clone(),
        }
    }

    /// Registers a cooperation of one to three receivers on dispatcher `kind` (a child of
    /// `parent` if given) and offers them to the senders; `None` when the environment or the
    /// parent is going away, which the chaos makes normal.
    fn register(
        &self,
        kind: usize,
        rng: &mut Rng,
        parent: Option<&CoopHandle>,
    ) -> Result<Option<Live>, String> {
        let mut coop = self.env.new_coop();
        coop.set_binder(self.kinds[kind].binder.clone());
        if let Some(p) = parent {
            coop.set_parent(p);
        }
        let mut targets = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let serial = self.serial.fetch_add(1, Ordering::Relaxed);
            let name = format!("r{serial}@{kind}");
            let mbox = coop.add(self.receiver(kind, rng, None)).mbox();
            targets.push(Target::new(name, mbox, self.senders));
        }
        match self.env.register_coop(coop) {
            Ok(h) => {
                self.registered.fetch_add(1, Ordering::Relaxed);
                let names = targets.iter().map(|t| t.name.clone()).collect();
                self.targets
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(targets);
                Ok(Some((h, names)))
            }
            Err(RegisterError::ParentDeregistering | RegisterError::EnvironmentStopped) => Ok(None),
            Err(_) if self.env.is_stopping() => Ok(None),
            Err(e) => Err(format!("registering on {}: {e}", self.kinds[kind].label)),
        }
    }

    /// A supervisor (one-for-one, restarts without limit or back-off) over a receiver of
    /// named mailbox `name` that panics now and then.
    fn supervise(&self, kind: usize, name: &str, rng: &mut Rng) -> Result<(), String> {
        let named = self.env.named_mbox(name);
        let binder = self.kinds[kind].binder.clone();
        let mut child_rng = Rng::new(rng.next_u64());
        let make = {
            let (ledger, book, handled) = (
                self.ledger.clone(),
                self.book.clone(),
                self.kinds[kind].handled.clone(),
            );
            let (named, binder) = (named.clone(), binder.clone());
            move |coop: &mut cohort::Coop| {
                coop.set_binder(binder.clone());
                coop.add(Receiver {
                    ledger: ledger.clone(),
                    book: book.clone(),
                    fragile: true,
                    limit: (child_rng.below(2) == 0).then_some(8),
                    named: Some(named.clone()),
                    handled: handled.clone(),
                });
            }
        };
        let sup = Supervisor::builder(name)
            .intensity(Intensity::new(u32::MAX, Duration::from_secs(1)))
            .child(ChildSpec::new("receiver", make))
            .build()
            .map_err(|e| e.to_string())?;
        let mut coop = self.env.new_coop();
        coop.set_binder(binder);
        coop.add(sup);
        self.env
            .register_coop(coop)
            .map_err(|e| format!("registering supervisor {name}: {e}"))?;
        self.targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Target::new(name.to_string(), named, self.senders));
        Ok(())
    }
}

/// Sends bursts of numbered messages to random receivers until the round stops.
fn sender(round: Arc<Round>, index: usize, seed: u64) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    while !round.stop.load(Ordering::Relaxed) {
        let Some(t) = round.random_target(&mut rng) else {
            std::thread::yield_now();
            continue;
        };
        let key = &t.keys[index];
        for _ in 0..1 + rng.below(MAX_BURST) {
            let seq = round.ledger.next(&key.0, &key.1);
            t.mbox.send(Num {
                key: key.clone(),
                seq,
            });
        }
        round.progress.ticks.fetch_add(1, Ordering::Relaxed);
        // A pause between bursts keeps the queues (and the ledger) within memory: senders
        // at full speed outrun receivers for the whole round.
        std::thread::sleep(Duration::from_micros(rng.below(100)));
    }
    Ok(())
}

/// Registers and deregisters cooperations at random until the round stops.
fn churner(round: Arc<Round>, seed: u64) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let mut live: Vec<Live> = Vec::new();
    // Deregistered receivers stay with the senders a little longer, so sends race with
    // the deregistration and reach agents that are finishing or gone.
    let mut retiring: Vec<(u32, Vec<Arc<str>>)> = Vec::new();
    let mut next_kind = rng.below(round.kinds.len() as u64) as usize;
    while !round.stop.load(Ordering::Relaxed) {
        if live.len() < MAX_LIVE && (live.len() < 2 || rng.below(2) == 0) {
            let parent = (!live.is_empty() && rng.below(4) == 0)
                .then(|| live[rng.below(live.len() as u64) as usize].0.clone());
            next_kind = (next_kind + 1) % round.kinds.len();
            if let Some(c) = round.register(next_kind, &mut rng, parent.as_ref())? {
                live.push(c);
            }
        } else if !live.is_empty() {
            let (handle, names) = live.swap_remove(rng.below(live.len() as u64) as usize);
            handle.deregister(DeregReason::Normal);
            round.deregistered.fetch_add(1, Ordering::Relaxed);
            retiring.push((1 + rng.below(4) as u32, names));
        }
        // Coops deregistered by a panic or with their parent stay in `live` until picked:
        // deregistering them again is allowed (the first reason wins).
        retiring.retain_mut(|(turns, names)| {
            *turns -= 1;
            if *turns == 0 {
                round.retire(names);
            }
            *turns > 0
        });
        round.progress.ticks.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_micros(200 + rng.below(800)));
    }
    Ok(())
}

/// Schedules delayed messages to random receivers through a [`Tap`], cancelling half of them
/// around the moment they are due.
fn timers(round: Arc<Round>, seed: u64) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    while !round.stop.load(Ordering::Relaxed) {
        let Some(t) = round.random_target(&mut rng) else {
            std::thread::yield_now();
            continue;
        };
        let id = round.book.open();
        let tap = Mbox::custom(Tap {
            to: t.mbox.clone(),
            book: round.book.clone(),
        });
        let delay = Duration::from_micros(rng.below(400));
        let timer = round.env.send_delayed(
            &tap,
            delay,
            Timed {
                id,
                book: round.book.clone(),
            },
        );
        if rng.below(2) == 0 {
            // Around the deadline: before, at, or just after it fired.
            std::thread::sleep(Duration::from_micros(rng.below(600)));
            timer.cancel();
        } else {
            std::thread::sleep(Duration::from_micros(rng.below(300)));
        }
        round.progress.ticks.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

fn spawn(
    name: String,
    f: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<JoinHandle<Result<(), String>>, String> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| format!("spawning a chaos thread: {e}"))
}

/// One round: an environment under chaos for `length`, then stopped in the middle of it.
fn round(
    cfg: &Config,
    index: u64,
    length: Duration,
    progress: &Arc<Progress>,
) -> Result<Outcome, String> {
    progress.enter(format!("round {index}: starting"));
    let ledger = Arc::new(Ledger::new());
    let book = Arc::new(TimerBook::default());
    let env = {
        let (l, b) = (ledger.clone(), book.clone());
        Environment::builder()
            .autoshutdown(false)
            .dead_letter_hook(move |d| record_dead_letter(&l, &b, d))
            .start()
            .map_err(|e| e.to_string())?
    };
    let mut kinds = Vec::new();
    for p in super::every_placement() {
        kinds.push(Kind {
            label: p.label(),
            binder: p.binder(&env)?,
            handled: Arc::new(AtomicU64::new(0)),
        });
    }
    let round = Arc::new(Round {
        env: env.environment(),
        ledger: ledger.clone(),
        book: book.clone(),
        kinds,
        targets: Mutex::new(Vec::new()),
        senders: cfg.senders,
        stop: AtomicBool::new(false),
        serial: AtomicU64::new(0),
        registered: AtomicU64::new(0),
        deregistered: AtomicU64::new(0),
        progress: progress.clone(),
    });
    let mut rng = Rng::new(cfg.seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407));
    // A receiver on every dispatcher kind for the whole round, so each kind gets traffic.
    for k in 0..round.kinds.len() {
        round.register(k, &mut rng, None)?;
    }
    for i in 0..SUPERVISED {
        let kind = rng.below(round.kinds.len() as u64) as usize;
        round.supervise(kind, &format!("chaos.supervised.{i}"), &mut rng)?;
    }
    let mut threads = Vec::new();
    for s in 0..cfg.senders {
        let (r, seed) = (round.clone(), rng.next_u64());
        threads.push(spawn(format!("chaos-sender-{s}"), move || {
            sender(r, s, seed)
        })?);
    }
    for c in 0..cfg.churners {
        let (r, seed) = (round.clone(), rng.next_u64());
        threads.push(spawn(format!("chaos-churn-{c}"), move || churner(r, seed))?);
    }
    {
        let (r, seed) = (round.clone(), rng.next_u64());
        threads.push(spawn("chaos-timers".into(), move || timers(r, seed))?);
    }
    progress.enter(format!("round {index}: chaos"));
    std::thread::sleep(length);
    progress.enter(format!("round {index}: stopping in the middle"));
    env.stop();
    std::thread::sleep(AFTER_STOP);
    round.stop.store(true, Ordering::Relaxed);
    let mut errors = Vec::new();
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("a chaos thread panicked".into()),
        }
    }
    progress.enter(format!("round {index}: waiting for the environment"));
    env.wait();
    let stats = env.stats();
    let panics = env.panics();
    let handled_by_kind = round
        .kinds
        .iter()
        .map(|k| (k.label.clone(), k.handled.load(Ordering::Relaxed)))
        .collect();
    let (registered, deregistered) = (
        round.registered.load(Ordering::Relaxed),
        round.deregistered.load(Ordering::Relaxed),
    );
    // Every mailbox, binder and agent of the round goes before the count: a message still
    // held anywhere is dropped (and counted, if the runtime counts it) by then.
    drop(round);
    env.stop_and_wait();
    progress.enter(format!("round {index}: checking"));
    let mut out = Outcome {
        rounds: 1,
        handled_by_kind,
        coops_registered: registered,
        coops_deregistered: deregistered,
        panics,
        restarts: stats.supervision.restarts,
        timers: book.tally(),
        ..Outcome::default()
    };
    match ledger.check() {
        Ok(r) => {
            out.sent = r.sent;
            out.handled = r.handled;
            out.dead = r.dead;
        }
        Err(vs) => {
            for v in &vs {
                match v {
                    Violation::Lost {
                        missing, counted, ..
                    } => out.unaccounted += missing.saturating_sub(*counted),
                    Violation::Duplicate { .. } | Violation::DeadAndHandled { .. } => {
                        out.duplicates += 1
                    }
                    Violation::Reordered { .. } => out.reordered += 1,
                    Violation::CountedButHandled { .. } | Violation::NeverSent { .. } => {}
                }
            }
            for v in vs.iter().take(8) {
                out.violations.push(format!("round {index}: {v:?}"));
            }
        }
    }
    let t = &out.timers;
    if t.lost > 0 || t.duplicates > 0 || t.bad_drops > 0 {
        out.violations.push(format!(
            "round {index}: delayed messages: {} lost, {} duplicated, {} not dropped exactly once",
            t.lost, t.duplicates, t.bad_drops
        ));
    }
    out.violations
        .extend(errors.into_iter().map(|e| format!("round {index}: {e}")));
    Ok(out)
}

/// Runs rounds until `cfg.total` has passed (at least one), adding up what they found.
pub fn run(cfg: &Config, progress: &Arc<Progress>) -> Result<Outcome, String> {
    cfg.validate()?;
    let started = Instant::now();
    let mut total = Outcome::default();
    let mut index = 0;
    loop {
        let left = cfg.total.saturating_sub(started.elapsed());
        let length = cfg.round.min(left).max(Duration::from_millis(50));
        let r = round(cfg, index, length, progress)?;
        total.add(r);
        index += 1;
        if started.elapsed() >= cfg.total {
            break;
        }
    }
    total.elapsed = started.elapsed();
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few seconds of every fault at once (`COHORT_CHAOS_SECS` sets how many: memcheck
    /// runs it shorter), asserting the zeros.
    #[test]
    fn chaos_runtime_accounts_for_every_message() {
        let secs: u64 = std::env::var("COHORT_CHAOS_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3);
        // The panics on purpose print nothing: the harness captures this test's threads.
        let out = crate::watchdog::within(300, move || {
            let cfg = Config {
                total: Duration::from_secs(secs),
                round: Duration::from_millis(700),
                senders: 2,
                churners: 2,
                seed: 28,
            };
            run(&cfg, &Arc::new(Progress::default())).unwrap()
        });
        assert!(out.passed(), "{:#?}", out.violations);
        assert_eq!((out.unaccounted, out.duplicates, out.reordered), (0, 0, 0));
        assert_eq!((out.timers.lost, out.timers.duplicates), (0, 0));
        assert!(out.rounds >= 1);
        assert!(out.sent > 0 && out.handled > 0, "{out:?}");
        assert!(
            out.coops_registered > 0 && out.timers.scheduled > 0,
            "{out:?}"
        );
        // Every kind took part; how many messages each one handled depends on how the OS
        // runs the threads (under memcheck one kind may handle none in a short run).
        let kinds = super::super::every_placement().len();
        assert_eq!(out.handled_by_kind.len(), kinds);
    }
}
