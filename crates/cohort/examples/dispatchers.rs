//! Choosing a dispatcher: the same two small workloads on `one_thread`, `active_obj`,
//! `thread_pool` and `work_stealing`, timed.
//!
//! `cargo run --release -p cohort --example dispatchers` (a debug build works too; its
//! figures are slower but rank the same way)
//!
//! The workloads:
//! - **chatty**: 4 ping-pong pairs, 5,000 round trips each: messages, almost no work;
//! - **cpu**: 8 agents, each handling 20 messages of about the same CPU work.
//!
//! Each run is a fresh environment (`launch`), so the figure includes starting and joining
//! the dispatcher's threads: part of what a dispatcher costs. Each pair or agent is a
//! cooperation of its own, and ends itself; the environment stops when the last one is gone.
//!
//! What it shows: a dispatcher is chosen per cooperation (`Coop::set_binder`) or per agent
//! (`Coop::add_with_binder`), and the choice changes only where handlers run, never the
//! agents' code. The figures are from this machine, now, and noisy: read them as an order
//! of magnitude, and measure your own workload.

use cohort::{
    ActiveObjBuilder, Agent, Binder, Context, DefineError, DeregReason, Environment, Mbox,
    ThreadPoolBuilder, WorkStealingBuilder,
};
use std::hint::black_box;
use std::time::{Duration, Instant};

const PAIRS: usize = 4;
const ROUND_TRIPS: u32 = 5_000;
const CRUNCHERS: usize = 8;
const CRUNCHES: u32 = 20;

struct Ping;
struct Pong;

struct Pinger {
    ponger: Option<Mbox>,
    left: u32,
}

struct Ponger {
    pinger: Mbox,
}

impl Agent for Pinger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Pong, ctx| {
            me.left -= 1;
            if me.left == 0 {
                ctx.deregister_coop(DeregReason::Normal);
            } else {
                me.ponger.as_ref().expect("wired").send(Ping);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.ponger.as_ref().expect("wired").send(Ping);
    }
}

impl Agent for Ponger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Ping, _| me.pinger.send(Pong))?;
        Ok(())
    }
}

/// One unit of CPU work.
struct Crunch;

struct Cruncher {
    left: u32,
    acc: u64,
}

impl Agent for Cruncher {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Crunch, ctx| {
            for i in 0..50_000u64 {
                me.acc = black_box(me.acc.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            me.left -= 1;
            if me.left == 0 {
                ctx.deregister_coop(DeregReason::Normal);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for _ in 0..self.left {
            ctx.send_self(Crunch);
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    OneThread,
    ActiveObj,
    ThreadPool,
    WorkStealing,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::OneThread => "one_thread",
            Kind::ActiveObj => "active_obj",
            Kind::ThreadPool => "thread_pool(2)",
            Kind::WorkStealing => "work_stealing(2)",
        }
    }

    /// The binder for this run's agents: the dispatcher is built in the environment.
    fn binder(self, env: &Environment) -> Result<Binder, cohort::DispatcherError> {
        Ok(match self {
            // The default dispatcher is a `one_thread`.
            Kind::OneThread => env.default_binder(),
            Kind::ActiveObj => ActiveObjBuilder::new().name("ao").build(env)?.binder(),
            Kind::ThreadPool => ThreadPoolBuilder::new()
                .name("tp")
                .threads(2)
                .build(env)?
                .binder(),
            Kind::WorkStealing => WorkStealingBuilder::new()
                .name("ws")
                .threads(2)
                .build(env)?
                .binder(),
        })
    }
}

fn chatty(kind: Kind) -> Duration {
    let t = Instant::now();
    cohort::launch(|env| {
        let binder = kind.binder(env)?;
        for _ in 0..PAIRS {
            let mut coop = env.new_coop();
            coop.set_binder(binder.clone());
            let pinger = coop.add(Pinger {
                ponger: None,
                left: ROUND_TRIPS,
            });
            let ponger = coop.add(Ponger {
                pinger: pinger.mbox(),
            });
            coop.agent_mut(&pinger).ponger = Some(ponger.mbox());
            env.register_coop(coop)?;
        }
        Ok(())
    })
    .expect("the environment ran");
    t.elapsed()
}

fn cpu(kind: Kind) -> Duration {
    let t = Instant::now();
    cohort::launch(|env| {
        let binder = kind.binder(env)?;
        for _ in 0..CRUNCHERS {
            let mut coop = env.new_coop();
            coop.set_binder(binder.clone());
            coop.add(Cruncher {
                left: CRUNCHES,
                acc: 1,
            });
            env.register_coop(coop)?;
        }
        Ok(())
    })
    .expect("the environment ran");
    t.elapsed()
}

fn main() {
    println!(
        "{} cores; chatty: {PAIRS} pairs x {ROUND_TRIPS} round trips; cpu: {CRUNCHERS} agents x {CRUNCHES} units",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("{:<18} {:>10} {:>10}", "dispatcher", "chatty ms", "cpu ms");
    for kind in [
        Kind::OneThread,
        Kind::ActiveObj,
        Kind::ThreadPool,
        Kind::WorkStealing,
    ] {
        let (c, p) = (chatty(kind), cpu(kind));
        println!(
            "{:<18} {:>10.1} {:>10.1}",
            kind.name(),
            c.as_secs_f64() * 1e3,
            p.as_secs_f64() * 1e3
        );
    }
    println!();
    println!("one_thread:    one thread for all its agents; messages between them never cross");
    println!("               threads. Choose it for chatty agents and light handlers.");
    println!("active_obj:    a thread per agent: true parallelism and blocking calls are fine,");
    println!("               but a thread costs memory and each message may wake a thread.");
    println!("thread_pool:   N threads share the agents (a queue per cooperation by default);");
    println!("               choose it for many agents with CPU work, on all cores.");
    println!("work_stealing: N threads, each with its own queues, stealing when idle; an agent");
    println!("               a handler wakes runs next on the same core. Choose it for many");
    println!("               agents that message each other and also do work.");
    println!("done: dispatchers");
}
