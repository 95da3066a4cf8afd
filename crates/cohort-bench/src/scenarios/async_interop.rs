//! Agents and async code:
//!
//! - `spawn-deliver`: agents spawn trivial futures (`Context::spawn`) on the environment's
//!   embedded tokio runtime, each keeping `in_flight` of them running and spawning the next
//!   one from the handler of an output, until `count` outputs were handled in all:
//!   completions per second and peak RSS.
//! - `async-ask`: one agent asks another (`Context::request(..).then(..)`), the reply coming
//!   back as an event of the asker, which asks again from that handler; both agents on one
//!   thread, each on its own, or both on a pool that places them: round trips per second and
//!   round-trip latency percentiles.

use cohort::dispatcher::{Fifo, PoolBindParams};
use cohort::{
    Agent, Binder, Context, DefineError, Environment, Mbox, OneThreadBuilder, RequestError,
    ThreadPoolBuilder, WrappedEnv,
};
use hdrhistogram::Histogram;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

/// How long a run may take before it is called failed.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn start(threads: usize) -> Result<WrappedEnv, String> {
    Environment::builder()
        .async_threads(threads)
        .map_err(|e| e.to_string())?
        .start()
        .map_err(|e| format!("environment: {e}"))
}

struct Spawner {
    left_to_spawn: u64,
    window: u64,
    in_flight: u64,
    done: Sender<()>,
}

impl Spawner {
    fn spawn_one(&mut self, ctx: &mut Context<'_, Self>) {
        self.left_to_spawn -= 1;
        self.in_flight += 1;
        let spawned = ctx.spawn(async { 1u64 }).then(Self::on_output);
        if let Err(e) = spawned {
            panic!("spawn: {e}");
        }
    }

    fn on_output(&mut self, out: u64, ctx: &mut Context<'_, Self>) {
        self.in_flight -= out;
        if self.left_to_spawn > 0 {
            self.spawn_one(ctx);
        } else if self.in_flight == 0 {
            let _ = self.done.send(());
        }
    }
}

impl Agent for Spawner {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for _ in 0..self.left_to_spawn.min(self.window) {
            self.spawn_one(ctx);
        }
    }
}

/// What one `spawn-deliver` run measured.
pub struct SpawnOutcome {
    pub elapsed: Duration,
    pub count: u64,
}

/// `count` futures spawned by `agents` agents (one thread), `in_flight` each at a time, on an
/// embedded runtime of `threads` threads.
pub fn spawn_deliver_once(
    count: u64,
    agents: u64,
    in_flight: u64,
    threads: usize,
) -> Result<SpawnOutcome, String> {
    if count == 0 || agents == 0 || in_flight == 0 {
        return Err("--count, --agents and --in-flight must be at least 1".into());
    }
    let env = start(threads)?;
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    for i in 0..agents {
        let share = count / agents + u64::from(i < count % agents);
        if share == 0 {
            continue;
        }
        coop.add(Spawner {
            left_to_spawn: share,
            window: in_flight,
            in_flight: 0,
            done: tx.clone(),
        });
    }
    let expected = agents.min(count) as usize;
    let started = Instant::now();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    for _ in 0..expected {
        rx.recv_timeout(RUN_TIMEOUT)
            .map_err(|_| "spawn-deliver: an agent did not get all its outputs".to_string())?;
    }
    let elapsed = started.elapsed();
    let stats = env.stats();
    env.stop_and_wait();
    if stats.futures != 0 || stats.futures_cancelled != 0 {
        return Err(format!(
            "spawn-deliver: {} futures still running, {} cancelled",
            stats.futures, stats.futures_cancelled
        ));
    }
    Ok(SpawnOutcome { elapsed, count })
}

struct Responder;
impl Agent for Responder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|_: &mut Self, n: &u64, _: &mut Context<'_, Self>| n + 1)?;
        Ok(())
    }
}

/// The asker's record of a run: as the peers' ports keep it (a pre-sized vector of
/// nanoseconds, turned into a histogram after the clock stops, and the time from the first ask
/// to the last reply), so that no framework's figure carries more bookkeeping than another's.
struct AskRecord {
    latencies_ns: Vec<u64>,
    elapsed: Duration,
}

struct Asker {
    to: Mbox,
    left: u64,
    timeout: Option<Duration>,
    started: Option<Instant>,
    /// Whether each round trip is timed.
    timed: bool,
    latencies_ns: Vec<u64>,
    done: Sender<Result<AskRecord, String>>,
}

impl Asker {
    fn ask(&mut self, ctx: &mut Context<'_, Self>) {
        let sent = self.timed.then(Instant::now);
        let n = self.left;
        let mut ask = ctx.request::<u64, u64>(&self.to, n);
        if let Some(t) = self.timeout {
            ask = ask.timeout(t);
        }
        let asked = ask.then(
            move |me: &mut Self, reply: Result<u64, RequestError>, ctx: &mut Context<'_, Self>| {
                if let Some(sent) = sent {
                    me.latencies_ns.push(sent.elapsed().as_nanos() as u64);
                }
                match reply {
                    Ok(r) if r == n + 1 => {}
                    other => {
                        let _ = me.done.send(Err(format!("ask {n}: {other:?}")));
                        return;
                    }
                }
                me.left -= 1;
                if me.left == 0 {
                    let elapsed = me.started.map_or(Duration::ZERO, |t| t.elapsed());
                    let _ = me.done.send(Ok(AskRecord {
                        latencies_ns: std::mem::take(&mut me.latencies_ns),
                        elapsed,
                    }));
                } else {
                    me.ask(ctx);
                }
            },
        );
        if let Err(e) = asked {
            let _ = self.done.send(Err(e.to_string()));
        }
    }
}

impl Agent for Asker {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.started = Some(Instant::now());
        self.ask(ctx);
    }
}

/// What one `async-ask` run measured.
pub struct AskOutcome {
    pub elapsed: Duration,
    pub count: u64,
    /// Round-trip nanoseconds.
    pub latency: Histogram<u64>,
}

/// Where `async-ask`'s two agents run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AskLayout {
    /// One thread: both on the default dispatcher's thread; two: the responder on a
    /// `one_thread` dispatcher of its own (as the peers' answerer on an arbiter or a thread
    /// of its own), so every ask and every reply crosses between two threads.
    Dedicated,
    /// Both on one `thread_pool` of that many workers, each agent with a queue of its own:
    /// the pool decides where each runs (as a tokio runtime places the peers' actors), and
    /// its hand-off slot keeps a request and its reply on the worker that sent it.
    Pool,
}

/// The binders of the responder and of the asker for `threads` threads laid out as `layout`.
fn ask_binders(
    env: &Environment,
    threads: usize,
    layout: AskLayout,
) -> Result<(Binder, Binder), String> {
    match layout {
        AskLayout::Dedicated if threads == 1 => Ok((env.default_binder(), env.default_binder())),
        AskLayout::Dedicated => {
            let own = OneThreadBuilder::new()
                .name("responder")
                .build(env)
                .map_err(|e| e.to_string())?;
            Ok((own.binder(), env.default_binder()))
        }
        AskLayout::Pool => {
            let pool = ThreadPoolBuilder::new()
                .name("ask-pool")
                .threads(threads)
                .build(env)
                .and_then(|p| p.pool_binder(PoolBindParams::new().fifo(Fifo::Individual)))
                .map_err(|e| e.to_string())?;
            Ok((pool.clone(), pool))
        }
    }
}

/// `count` asks, one at a time, from one agent to another on `threads` threads (1 or 2)
/// laid out as `layout`; each round trip timed when `timed` (else the latency histogram
/// stays empty and the run reads no clock between its first ask and its last reply).
pub fn async_ask_once(
    count: u64,
    threads: usize,
    layout: AskLayout,
    timeout: Option<Duration>,
    timed: bool,
) -> Result<AskOutcome, String> {
    if count == 0 {
        return Err("--count must be at least 1".into());
    }
    if !(1..=2).contains(&threads) {
        return Err("--threads takes 1 or 2".into());
    }
    let env = start(1)?;
    let (responder, asker) = ask_binders(&env, threads, layout)?;
    let mut coop = env.new_coop();
    coop.set_binder(responder);
    let to = coop.add(Responder).mbox();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(asker);
    coop.add(Asker {
        to,
        left: count,
        timeout,
        started: None,
        timed,
        latencies_ns: Vec::with_capacity(if timed { count as usize } else { 0 }),
        done: tx,
    });
    env.register_coop(coop).map_err(|e| e.to_string())?;
    let record = rx
        .recv_timeout(RUN_TIMEOUT)
        .map_err(|_| "async-ask: no end in time".to_string())??;
    env.stop_and_wait();
    let mut latency =
        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| e.to_string())?;
    for ns in record.latencies_ns {
        latency.saturating_record(ns);
    }
    Ok(AskOutcome {
        elapsed: record.elapsed,
        count,
        latency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_deliver_handles_every_output() {
        let o = spawn_deliver_once(1_000, 3, 7, 1).unwrap();
        assert_eq!(o.count, 1_000);
    }

    #[test]
    fn async_ask_counts_every_round_trip() {
        for layout in [AskLayout::Dedicated, AskLayout::Pool] {
            for threads in [1, 2] {
                let o = async_ask_once(100, threads, layout, Some(Duration::from_secs(10)), true)
                    .unwrap();
                assert_eq!(o.latency.len(), 100);
                let o = async_ask_once(100, threads, layout, None, false).unwrap();
                assert_eq!((o.count, o.latency.len()), (100, 0));
            }
        }
    }
}
