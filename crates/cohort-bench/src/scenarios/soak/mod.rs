//! `soak`: a mixed workload run for minutes while the memory, descriptors and threads of
//! both processes are sampled: nothing may leak.
//!
//! The workload, paced so it leaves the machine usable: two worker agents on every
//! dispatcher kind (pools with each fifo) take jobs from a driver thread and report each to
//! a sink agent, every worker is a subscriber of one named mailbox (1:N) the driver
//! publishes to, the driver asks a worker (request/reply) and schedules delayed messages,
//! a periodic timer ticks and is replaced now and then, a cooperation of a subscriber is
//! registered and an old one deregistered every few ticks, workers forward every fourth
//! job to a message chain a plain thread drains, and a client node plays rounds of remote
//! ping-pong with remote-ping-pong's echo node in a child process.

pub mod plot;
pub mod sample;

use super::remote_ping_pong::{Pair, Policy, Processes};
use super::{Dispatcher, every_placement};
use cohort::mchain::{Handlers, Mchain, MchainParams, from, receive};
use cohort::{Agent, Binder, Context, CoopHandle, DefineError, DeregReason, Environment, Mbox};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

/// The driver's pace: one tick of work per this.
const TICK: Duration = Duration::from_millis(5);
/// Jobs per worker per tick.
const JOBS: u64 = 4;
/// Remote ping-pong clients, and messages (pings and pongs) per client per round.
const REMOTE_CLIENTS: usize = 4;
const REMOTE_MESSAGES: u64 = 2_000;
/// Churned cooperations kept registered.
const CHURN_LIVE: usize = 4;
/// How long the driver waits for a reply, or a round of remote ping-pong for its end.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// What the workload did, counted as it went.
#[derive(Debug, Default)]
pub struct Counts {
    pub jobs: AtomicU64,
    pub news: AtomicU64,
    pub asks: AtomicU64,
    pub delayed: AtomicU64,
    pub ticks: AtomicU64,
    pub chained: AtomicU64,
    pub coops: AtomicU64,
    pub remote_messages: AtomicU64,
    pub remote_rounds: AtomicU64,
    /// Replies that failed or were wrong, and other errors of the workload's threads.
    pub errors: AtomicU64,
}

struct Job;
struct Done;
struct News;
struct Ask(u64);
struct Delayed;
#[derive(Clone)]
struct Tick;

struct Worker {
    counts: Arc<Counts>,
    sink: Mbox,
    topic: Mbox,
    chain: Mbox,
    jobs: u64,
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Job, _: &mut Context<'_, Self>| {
            me.jobs += 1;
            me.sink.send(Done);
            if me.jobs.is_multiple_of(4) {
                me.chain.send(me.jobs);
            }
        })?;
        let topic = self.topic.clone();
        ctx.subscribe(
            &topic,
            |me: &mut Self, _: &News, _: &mut Context<'_, Self>| {
                me.counts.news.fetch_add(1, Ordering::Relaxed);
            },
        )?;
        ctx.on_request(|_: &mut Self, a: &Ask, _: &mut Context<'_, Self>| a.0 + 1)?;
        ctx.on(|me: &mut Self, _: &Delayed, _: &mut Context<'_, Self>| {
            me.counts.delayed.fetch_add(1, Ordering::Relaxed);
        })?;
        Ok(())
    }
}

struct Sink(Arc<Counts>);

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Done, _: &mut Context<'_, Self>| {
            me.0.jobs.fetch_add(1, Ordering::Relaxed);
        })?;
        ctx.on(|me: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {
            me.0.ticks.fetch_add(1, Ordering::Relaxed);
        })?;
        Ok(())
    }
}

/// The running workload; [`Workload::stop`] ends it.
pub struct Workload {
    env: Option<cohort::WrappedEnv>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<(), String>>>,
    chain: Mchain,
    /// The echo node's process, if the remote part runs.
    pub child_pid: Option<u32>,
    pub counts: Arc<Counts>,
}

/// The local agents and mailboxes the driver works with.
struct Local {
    env: Environment,
    counts: Arc<Counts>,
    workers: Vec<Mbox>,
    topic: Mbox,
    sink: Mbox,
    chain: Mbox,
    /// Where churned cooperations go (every kind but `active_obj`, whose thread per agent
    /// would make the thread count depend on the moment of the sample).
    churn_binders: Vec<Binder>,
}

impl Local {
    fn worker(&self) -> Worker {
        Worker {
            counts: self.counts.clone(),
            sink: self.sink.clone(),
            topic: self.topic.clone(),
            chain: self.chain.clone(),
            jobs: 0,
        }
    }

    /// The driver's loop: one tick of every kind of traffic per [`TICK`].
    fn drive(&self, stop: &AtomicBool) -> Result<(), String> {
        let mut churned: Vec<CoopHandle> = Vec::new();
        let mut periodic = None;
        let mut tick = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for w in &self.workers {
                for _ in 0..JOBS {
                    w.send(Job);
                }
            }
            self.topic.send(News);
            let w = &self.workers[tick as usize % self.workers.len()];
            match w.request::<Ask, u64>(Ask(tick)).wait(REPLY_TIMEOUT) {
                Ok(r) if r == tick + 1 => self.counts.asks.fetch_add(1, Ordering::Relaxed),
                _ => self.counts.errors.fetch_add(1, Ordering::Relaxed),
            };
            self.env
                .send_delayed(w, Duration::from_millis(1 + tick % 20), Delayed);
            if tick.is_multiple_of(20) {
                let mut coop = self.env.new_coop();
                let b = &self.churn_binders[(tick / 20) as usize % self.churn_binders.len()];
                coop.set_binder(b.clone());
                coop.add(self.worker());
                let h = self.env.register_coop(coop).map_err(|e| e.to_string())?;
                self.counts.coops.fetch_add(1, Ordering::Relaxed);
                churned.push(h);
                if churned.len() > CHURN_LIVE {
                    churned.remove(0).deregister(DeregReason::Normal);
                }
            }
            if tick.is_multiple_of(200) {
                // The old periodic timer is cancelled as its handle drops.
                periodic = Some(self.env.send_periodic(
                    &self.sink,
                    Duration::ZERO,
                    Duration::from_millis(10),
                    Tick,
                ));
            }
            tick += 1;
            std::thread::sleep(TICK);
        }
        drop(periodic);
        for h in churned {
            h.deregister(DeregReason::Normal);
        }
        Ok(())
    }
}

/// Drains the chain until the workload stops.
fn drain(chain: Mchain, counts: Arc<Counts>, stop: Arc<AtomicBool>) -> Result<(), String> {
    while !stop.load(Ordering::Relaxed) {
        let r = receive(
            from(&chain)
                .handle_n(4_096)
                .empty_timeout(Duration::from_millis(100)),
            &mut Handlers::new().on(|_: &u64| {}),
        );
        counts
            .chained
            .fetch_add(r.handled as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Rounds of remote ping-pong with the child's echo node until the workload stops; the
/// child's process id goes to `pid` once it runs.
fn remote(
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    pid: mpsc::Sender<Result<Option<u32>, String>>,
) -> Result<(), String> {
    let mut pair = match Pair::start(Processes::Two, Policy::Adaptive, REMOTE_CLIENTS) {
        Ok(p) => p,
        Err(e) => {
            let _ = pid.send(Err(e.clone()));
            return Err(e);
        }
    };
    let _ = pid.send(Ok(pair.child_pid()));
    while !stop.load(Ordering::Relaxed) {
        let client = pair.client();
        client.rewind_slots();
        let r = client.round(REMOTE_CLIENTS, REMOTE_MESSAGES, 8, false)?;
        counts
            .remote_messages
            .fetch_add(r.messages, Ordering::Relaxed);
        counts.remote_rounds.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn spawn(
    name: &str,
    f: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<JoinHandle<Result<(), String>>, String> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| format!("spawning {name}: {e}"))
}

impl Workload {
    /// Starts everything; with `remote`, also the child process and the client node.
    pub fn start(remote_part: bool) -> Result<Self, String> {
        let env = Environment::builder()
            .autoshutdown(false)
            .start()
            .map_err(|e| e.to_string())?;
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let chain = env
            .create_mchain(MchainParams::unbounded())
            .map_err(|e| e.to_string())?;
        let mut sink = env.new_coop();
        let sink_mbox = sink.add(Sink(counts.clone())).mbox();
        env.register_coop(sink).map_err(|e| e.to_string())?;
        let mut local = Local {
            env: env.environment(),
            counts: counts.clone(),
            workers: Vec::new(),
            topic: env.named_mbox("soak.topic"),
            sink: sink_mbox,
            chain: chain.as_mbox(),
            churn_binders: Vec::new(),
        };
        for p in every_placement() {
            let binder = p.binder(&env)?;
            let mut coop = env.new_coop();
            coop.set_binder(binder.clone());
            for _ in 0..2 {
                let w = coop.add(local.worker()).mbox();
                local.workers.push(w);
            }
            env.register_coop(coop).map_err(|e| e.to_string())?;
            if p.dispatcher != Dispatcher::ActiveObj {
                local.churn_binders.push(binder);
            }
        }
        let mut threads = Vec::new();
        {
            let stop = stop.clone();
            threads.push(spawn("soak-driver", move || local.drive(&stop))?);
        }
        {
            let (chain, counts, stop) = (chain.clone(), counts.clone(), stop.clone());
            threads.push(spawn("soak-chain", move || drain(chain, counts, stop))?);
        }
        let mut child_pid = None;
        if remote_part {
            let (tx, rx) = mpsc::channel();
            let (counts, stop2) = (counts.clone(), stop.clone());
            threads.push(spawn("soak-remote", move || remote(counts, stop2, tx))?);
            let started = rx
                .recv_timeout(Duration::from_secs(60))
                .map_err(|_| "the remote part did not start within 60 s".to_string())
                .and_then(|r| r);
            match started {
                Ok(pid) => child_pid = pid,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(format!("remote part: {e}"));
                }
            }
        }
        Ok(Self {
            env: Some(env),
            stop,
            threads,
            chain,
            child_pid,
            counts,
        })
    }

    /// Stops the workload and its threads; the errors they ended with, if any.
    pub fn stop(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        let mut errors = Vec::new();
        for t in self.threads.drain(..) {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(e),
                Err(_) => errors.push("a workload thread panicked".into()),
            }
        }
        self.chain.close_drop_content();
        if let Some(env) = self.env.take() {
            env.stop_and_wait();
        }
        errors
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local part runs every kind of traffic and stops cleanly (the remote part needs
    /// the bench binary as its child, which a test binary is not).
    #[test]
    fn the_local_workload_runs_and_stops() {
        crate::watchdog::within(120, || {
            let w = Workload::start(false).unwrap();
            let c = w.counts.clone();
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let seen = |a: &AtomicU64| a.load(Ordering::Relaxed) > 0;
            while !(seen(&c.jobs)
                && seen(&c.news)
                && seen(&c.asks)
                && seen(&c.delayed)
                && seen(&c.chained)
                && seen(&c.ticks))
            {
                assert!(std::time::Instant::now() < deadline, "no traffic: {c:?}");
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(w.stop(), Vec::<String>::new());
            assert_eq!(c.errors.load(Ordering::Relaxed), 0);
        });
    }
}
