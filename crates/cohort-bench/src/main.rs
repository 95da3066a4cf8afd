//! `cohort-bench`: the classic actor benchmarks of the seed articles, run on cohort.
//!
//! `cohort-bench quick` runs every scenario at a reduced size (the README's first command);
//! `cohort-bench full` at the seeds' sizes; each scenario is also a subcommand of its own.
//! See docs/BENCHMARKS.md for what each scenario measures and where it comes from.

mod alloc;
mod compare;
mod cpu;
mod dispatcher_cmds;
mod latency_cmd;
mod machine;
mod remote_cmd;
mod report;
mod report_cmd;
mod rss;
mod scenarios;
mod seed_grids;
mod usage;
#[cfg(test)]
mod watchdog;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use machine::Machine;
use report::{Format, Record};
use scenarios::{
    Dispatcher, FifoArg, Placement, chains, counting_actor, fan_out, parallel_thread_ring,
    ping_pong, producer_consumer, self_send, skynet, state_switch, thread_ring, timers,
};
use serde_json::{Map, Value, json};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

#[derive(Parser)]
#[command(
    name = "cohort-bench",
    version,
    about = "The classic actor benchmarks, on cohort"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Clone)]
struct Common {
    /// How many times each measurement repeats (the median and min-max are reported).
    #[arg(long, global = true)]
    runs: Option<usize>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Shorthand for --format json.
    #[arg(long, global = true)]
    json: bool,
    /// Shorthand for --format csv.
    #[arg(long, global = true)]
    csv: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Two agents exchange signals (sobjectizer-performance-part3, theron PingPong).
    PingPong(PingPongArgs),
    /// One million agents created in a tree, summing their ordinals (sobjectizer-performance-part3).
    Skynet(SkynetArgs),
    /// One token passed round a ring of 503 agents (theron ThreadRing).
    ThreadRing(ThreadRingArgs),
    /// 503 tokens passed round a ring of 503 agents at once (theron ParallelThreadRing).
    ParallelThreadRing(ParallelThreadRingArgs),
    /// A plain thread floods one counting agent with messages (theron CountingActor).
    CountingActor(CountingActorArgs),
    /// Producer agents flood one consumer agent (theron ProducerConsumer).
    ProducerConsumer(ProducerConsumerArgs),
    /// One producer, N workers on a named mailbox (sobjectizer-performance-part3 1:N).
    #[command(mut_arg("dispatcher", |a| a.default_value("active-group")))]
    FanOut(FanOutArgs),
    /// Workers sending signals to themselves: the bulk effect of max_demands_at_once
    /// (sobjectizer-performance-part3).
    #[command(mut_arg("dispatcher", |a| a.default_value("thread-pool")))]
    #[command(mut_arg("fifo", |a| a.help("Fifo of a pool dispatcher (default: individual)")))]
    SelfSend(SelfSendArgs),
    /// The seed's self-send grids across max_demands_at_once, on thread_pool and
    /// work_stealing: one record per cell.
    SelfSendGrid(SelfSendGridArgs),
    /// Ping-pong through named mailboxes against direct ones, interleaved, with their ratio.
    NamedPingPong(NamedPingPongArgs),
    /// A handled message with a state switch against one without (issue 4: within 2x).
    StateSwitch(StateSwitchArgs),
    /// Many delayed sends scheduled and fired (time, memory per timer), and the CPU cost of
    /// one 1 ms periodic timer (SObjectizer issue #97).
    Timers(TimersArgs),
    /// Request/reply round trips from a plain thread to an agent (latency percentiles).
    RequestReply(RequestReplyArgs),
    /// Integers thread -> agent -> message chain -> thread.
    ChainThroughput(ChainThroughputArgs),
    /// CPU used by an idle environment with every dispatcher started (target < 1 %).
    IdleCpu(dispatcher_cmds::IdleCpuArgs),
    /// Agents with private state on 2 workers: thread_pool vs work_stealing vs a dedicated
    /// thread per agent (executors-cache-locality).
    Locality(dispatcher_cmds::LocalityArgs),
    /// Chains of agents, serial or at a given rate: latency, cross times, CPU and memory
    /// (caf-latency-benchmarks).
    #[command(visible_alias = "latency-pipeline")]
    #[command(mut_arg("dispatcher", |a| a.default_value("work-stealing")))]
    Latency(latency_cmd::LatencyArgs),
    /// The seed's 1:N grids on every dispatcher of the seed: one record per cell.
    FanOutGrid(seed_grids::FanOutGridArgs),
    /// Skynet on the default dispatcher and on thread_pool of each size with either fifo
    /// (the seed's table): one record per cell.
    SkynetGrid(seed_grids::SkynetGridArgs),
    /// Client agents on one node, echo agents on another, over TCP on loopback (Akka.NET's
    /// RemotePingPong, akka-remote-flush-batching): throughput per client count and batching
    /// policy, mean messages per write, and round-trip latency with one ping in flight.
    RemotePingPong(remote_cmd::RemotePingPongArgs),
    /// The echo side of remote-ping-pong as a child process (started by remote-ping-pong).
    #[command(hide = true)]
    RemotePingPongServer(remote_cmd::ServerArgs),
    /// Draws charts (SVG or PNG) and a markdown table from result files (--json or --csv
    /// output).
    Report(report_cmd::ReportArgs),
    /// Every scenario at a reduced size, with a progress bar and a summary table (< 2 min).
    Quick,
    /// Every scenario at the seeds' sizes.
    Full,
    /// The same scenarios on cohort and on actix, kameo, ractor and CAF (peers/), interleaved
    /// in one run: per scenario each framework's median, min-max and ratio to cohort.
    Compare(compare::CompareArgs),
}

#[derive(Args, Clone)]
struct PingPongArgs {
    /// Round trips per run.
    #[arg(long, default_value_t = 1_000_000)]
    count: u64,
    /// The mailboxes the agents send to.
    #[arg(long, value_enum, default_value_t = ping_pong::Mailbox::Direct)]
    mbox: ping_pong::Mailbox,
    /// Both agents declare a message limit (never reached): the cost of counting.
    #[arg(long)]
    limits: bool,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct NamedPingPongArgs {
    /// Round trips per run, for each kind of mailbox.
    #[arg(long, default_value_t = 1_000_000)]
    count: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct StateSwitchArgs {
    /// Signals per variant per run.
    #[arg(long, default_value_t = 5_000_000)]
    count: u64,
}

#[derive(Args, Clone)]
struct SkynetArgs {
    /// Leaf agents (a power of --branching).
    #[arg(long, default_value_t = 1_000_000)]
    leaves: u64,
    /// Children per agent.
    #[arg(long, default_value_t = 10)]
    branching: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct ThreadRingArgs {
    /// Agents in the ring.
    #[arg(long, default_value_t = thread_ring::RING_SIZE)]
    agents: u64,
    /// Hops the token makes (the seed's full run: 50,000,000).
    #[arg(long, default_value_t = 10_000_000)]
    hops: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct ParallelThreadRingArgs {
    /// Agents in the ring.
    #[arg(long, default_value_t = thread_ring::RING_SIZE)]
    agents: u64,
    /// Tokens travelling at once (token k starts at agent k; at most --agents).
    #[arg(long, default_value_t = thread_ring::RING_SIZE)]
    tokens: u64,
    /// Hops in all, split among the tokens as the seed does (its full run: 50,000,000).
    #[arg(long, default_value_t = 10_000_000)]
    hops: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct CountingActorArgs {
    /// Messages the writer thread sends (the seed's full run: 50,000,000; 3,000,000 is the
    /// size "typically used online").
    #[arg(long, default_value_t = 3_000_000)]
    count: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct ProducerConsumerArgs {
    /// Messages in all, shared equally among the producers.
    #[arg(long, default_value_t = 50_000_000)]
    count: u64,
    /// Producer agents.
    #[arg(long, default_value_t = producer_consumer::PRODUCERS)]
    producers: u64,
    /// Messages a producer sends per event before yielding (continuing with a self-signal).
    #[arg(long, default_value_t = producer_consumer::BURST)]
    burst: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct SelfSendArgs {
    /// Worker agents.
    #[arg(long, default_value_t = self_send::WORKERS)]
    workers: u64,
    /// Signals each worker handles.
    #[arg(long = "message-count", default_value_t = self_send::MESSAGE_COUNT)]
    message_count: u64,
    /// Signals each worker sends itself in `start` (signals in flight per worker).
    #[arg(long = "start-batch", default_value_t = self_send::START_BATCH)]
    start_batch: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct SelfSendGridArgs {
    /// Scales the message count per worker of both grids (0 < scale <= 1; e.g. 0.01 for a
    /// quick look).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Worker threads of the pools.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Only one of the seed's grids: 1 (50 workers x 1M, start batch 1) or 2 (1,000 workers x
    /// 1M, start batch 100).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
    only: Option<u8>,
}

#[derive(Args, Clone)]
struct TimersArgs {
    /// Delayed sends scheduled (fire and forget) to one counting agent.
    #[arg(long, default_value_t = 1_000_000)]
    count: u64,
    /// The shortest delay, in ms (long enough that every timer is pending when scheduling
    /// ends).
    #[arg(long = "delay-ms", default_value_t = 1000)]
    delay_ms: u64,
    /// Delays spread evenly over [delay, delay + spread), in ms.
    #[arg(long = "spread-ms", default_value_t = 1000)]
    spread_ms: u64,
    /// How long the 1 ms periodic timer runs, in ms (0: skip that measurement).
    #[arg(long = "periodic-ms", default_value_t = 3000)]
    periodic_ms: u64,
    /// The timer queues to measure (each run interleaves them).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "wheel,heap")]
    queue: Vec<timers::QueueArg>,
}

fn main() {
    let cli = Cli::parse();
    let format = if cli.common.json {
        Format::Json
    } else if cli.common.csv {
        Format::Csv
    } else {
        cli.common.format
    };
    let machine = Machine::detect();
    let records = match cli.command {
        Command::PingPong(a) => ping_pong_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::Skynet(a) => skynet_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::ThreadRing(a) => thread_ring_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::FanOut(a) => fan_out_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::ParallelThreadRing(a) => {
            parallel_thread_ring_records(&a, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::CountingActor(a) => {
            counting_actor_records(&a, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::ProducerConsumer(a) => {
            producer_consumer_records(&a, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::SelfSend(a) => self_send_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::NamedPingPong(a) => {
            named_ping_pong_records(&a, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::StateSwitch(a) => state_switch_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::SelfSendGrid(a) => match self_send::validate_scale(a.scale) {
            Ok(()) => suite(
                &self_send_grid(a.scale, a.threads, a.only),
                cli.common.runs.unwrap_or(5),
                &machine,
            ),
            Err(e) => {
                eprintln!("cohort-bench: {e}");
                std::process::exit(2);
            }
        },
        Command::Timers(a) => timers_records(&a, cli.common.runs.unwrap_or(3), &machine),
        Command::RequestReply(a) => {
            request_reply_records(&a, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::ChainThroughput(a) => {
            chain_throughput_records(&a, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::IdleCpu(a) => {
            dispatcher_cmds::idle_cpu_records(&a, cli.common.runs.unwrap_or(3), &machine)
        }
        Command::Locality(a) => {
            dispatcher_cmds::locality_records(&a, cli.common.runs.unwrap_or(3), &machine)
        }
        Command::Latency(a) => latency_cmd::records(&a, cli.common.runs.unwrap_or(1), &machine),
        Command::FanOutGrid(a) => {
            seed_grids::validate_scale(a.scale).unwrap_or_else(|e| usage_error(&e));
            let plan = seed_grids::fan_out_grid(a.only, a.scale, a.sleep_ms);
            suite(&plan, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::SkynetGrid(a) => {
            seed_grids::validate_sizes(&a.sizes).unwrap_or_else(|e| usage_error(&e));
            let plan = seed_grids::skynets(a.leaves, &a.sizes);
            suite(&plan, cli.common.runs.unwrap_or(5), &machine)
        }
        Command::Report(a) => match report_cmd::run(&a) {
            Ok(files) => {
                for f in files {
                    eprintln!("wrote {}", f.display());
                }
                return;
            }
            Err(e) => {
                eprintln!("cohort-bench report: {e}");
                std::process::exit(2);
            }
        },
        Command::Quick => suite(&quick_plan(), cli.common.runs.unwrap_or(3), &machine),
        Command::Full => suite(&full_plan(), cli.common.runs.unwrap_or(5), &machine),
        Command::RemotePingPong(a) => {
            remote_cmd::validate(&a).unwrap_or_else(|e| usage_error(&e));
            remote_cmd::records(&a, cli.common.runs.unwrap_or(3), &machine)
        }
        Command::RemotePingPongServer(a) => std::process::exit(remote_cmd::serve(&a)),
        Command::Compare(a) => {
            std::process::exit(compare::run(&a, cli.common.runs, format, &machine))
        }
    };
    report::print(&records, format);
    if records.iter().any(|r| !r.ok) {
        eprintln!("cohort-bench: some scenarios failed (see the table)");
        std::process::exit(1);
    }
}

/// Stops with a bad-input message and status 2.
fn usage_error(e: &str) -> ! {
    eprintln!("cohort-bench: {e}");
    std::process::exit(2)
}

/// One step of a suite.
enum Step {
    FanOut(FanOutArgs),
    PingPong(PingPongArgs),
    Skynet(SkynetArgs),
    ThreadRing(ThreadRingArgs),
    ParallelThreadRing(ParallelThreadRingArgs),
    CountingActor(CountingActorArgs),
    ProducerConsumer(ProducerConsumerArgs),
    SelfSend(SelfSendArgs),
    NamedPingPong(NamedPingPongArgs),
    StateSwitch(StateSwitchArgs),
    Timers(TimersArgs),
    RequestReply(RequestReplyArgs),
    ChainThroughput(ChainThroughputArgs),
    IdleCpu(dispatcher_cmds::IdleCpuArgs),
    Locality(dispatcher_cmds::LocalityArgs),
    /// A latency pipeline: runs once whatever the suite's --runs (a run is itself a
    /// duration-long series of messages).
    Latency(latency_cmd::LatencyArgs),
    RemotePingPong(remote_cmd::RemotePingPongArgs),
}

/// The pool placements of the seed's self-send grid: thread_pool (individual fifo) and
/// work_stealing, `threads` each, across `max_demands`.
fn pool_grid(threads: usize, max_demands: &[usize]) -> Vec<Placement> {
    let mut out = Vec::new();
    for d in [Dispatcher::ThreadPool, Dispatcher::WorkStealing] {
        for &m in max_demands {
            let mut p = Placement::of(d).fifo(FifoArg::Individual);
            p.threads = threads;
            p.max_demands = m;
            out.push(p);
        }
    }
    out
}

/// The seed's two self-send grids (or one of them), message counts scaled by `scale`.
fn self_send_grid(scale: f64, threads: usize, only: Option<u8>) -> Vec<Step> {
    let mut plan = Vec::new();
    for (i, (workers, count, start_batch)) in self_send::GRIDS.into_iter().enumerate() {
        if only.is_some_and(|g| usize::from(g) != i + 1) {
            continue;
        }
        for placement in pool_grid(threads, &self_send::GRID_MAX_DEMANDS) {
            plan.push(Step::SelfSend(SelfSendArgs {
                workers,
                message_count: self_send::scaled(count, scale),
                start_batch,
                placement,
            }));
        }
    }
    plan
}

/// ThreadRing on one thread and on the 2-thread pools.
fn thread_rings(hops: u64) -> Vec<Step> {
    [
        Placement::of(Dispatcher::OneThread),
        Placement::of(Dispatcher::ThreadPool).fifo(FifoArg::Cooperation),
        Placement::of(Dispatcher::ThreadPool).fifo(FifoArg::Individual),
        Placement::of(Dispatcher::WorkStealing),
    ]
    .into_iter()
    .map(|placement| {
        Step::ThreadRing(ThreadRingArgs {
            agents: thread_ring::RING_SIZE,
            hops,
            placement,
        })
    })
    .collect()
}

/// ParallelThreadRing on one thread and on the 2-thread pools (individual fifo: with a
/// cooperation fifo the whole ring is one queue, as on one thread).
fn parallel_thread_rings(hops: u64) -> Vec<Step> {
    [
        Placement::of(Dispatcher::OneThread),
        Placement::of(Dispatcher::ThreadPool).fifo(FifoArg::Individual),
        Placement::of(Dispatcher::WorkStealing),
    ]
    .into_iter()
    .map(|placement| {
        Step::ParallelThreadRing(ParallelThreadRingArgs {
            agents: thread_ring::RING_SIZE,
            tokens: thread_ring::RING_SIZE,
            hops,
            placement,
        })
    })
    .collect()
}

/// CountingActor (counter on one thread) and ProducerConsumer (on one thread, and on
/// work_stealing where producers and consumer run in parallel).
fn floods(counting: u64, producer_consumer: u64) -> Vec<Step> {
    let mut plan = vec![Step::CountingActor(CountingActorArgs {
        count: counting,
        placement: Placement::of(Dispatcher::OneThread),
    })];
    for placement in [
        Placement::of(Dispatcher::OneThread),
        Placement::of(Dispatcher::WorkStealing),
    ] {
        plan.push(Step::ProducerConsumer(ProducerConsumerArgs {
            count: producer_consumer,
            producers: producer_consumer::PRODUCERS,
            burst: producer_consumer::BURST,
            placement,
        }));
    }
    plan
}

fn pool_ping_pongs(count: u64) -> Vec<Step> {
    let tp = Placement::of(Dispatcher::ThreadPool);
    let ws = Placement::of(Dispatcher::WorkStealing);
    [
        tp.fifo(FifoArg::Cooperation),
        tp.fifo(FifoArg::Individual),
        ws,
    ]
    .into_iter()
    .map(|placement| {
        Step::PingPong(PingPongArgs {
            count,
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement,
        })
    })
    .collect()
}

fn quick_plan() -> Vec<Step> {
    let mut plan = vec![
        Step::IdleCpu(dispatcher_cmds::IdleCpuArgs { seconds: 1.0 }),
        Step::Locality(dispatcher_cmds::locality_plan(true)),
        Step::PingPong(PingPongArgs {
            count: 1_000_000,
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement: Placement::of(Dispatcher::OneThread),
        }),
        Step::PingPong(PingPongArgs {
            count: 200_000,
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement: Placement::of(Dispatcher::ActiveObj),
        }),
    ];
    plan.extend(pool_ping_pongs(200_000));
    plan.push(Step::NamedPingPong(NamedPingPongArgs {
        count: 300_000,
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan.push(Step::StateSwitch(StateSwitchArgs { count: 300_000 }));
    plan.push(Step::Skynet(SkynetArgs {
        leaves: 1_000_000,
        branching: 10,
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan.extend(thread_rings(1_000_000));
    plan.extend(parallel_thread_rings(1_000_000));
    plan.extend(floods(1_000_000, 1_000_000));
    plan.extend(fan_outs(
        &[(100, 20_000)],
        &[Dispatcher::ActiveGroup, Dispatcher::ThreadPool],
    ));
    for placement in pool_grid(2, &[4, 100]) {
        plan.push(Step::SelfSend(SelfSendArgs {
            workers: self_send::WORKERS,
            message_count: 20_000,
            start_batch: self_send::START_BATCH,
            placement,
        }));
    }
    plan.extend(latency_cmd::quick_runs().into_iter().map(Step::Latency));
    // Skynet on thread_pool(2) with either fifo, at a tenth of the size.
    plan.extend(seed_grids::skynets(100_000, &[2]).into_iter().skip(1));
    plan.push(timers_step(100_000, 200, 1000));
    plan.extend(chain_steps(20_000, 200_000));
    plan.push(Step::RemotePingPong(remote_cmd::quick_args()));
    plan
}

/// Request/reply and chain throughput (unbounded, and bounded to 1,024), on one thread.
fn chain_steps(requests: u64, messages: u64) -> Vec<Step> {
    let placement = Placement::of(Dispatcher::OneThread);
    let mut plan = vec![Step::RequestReply(RequestReplyArgs {
        count: requests,
        spin_us: None,
        placement,
    })];
    for capacity in [0, 1024] {
        plan.push(Step::ChainThroughput(ChainThroughputArgs {
            count: messages,
            capacity,
            placement,
        }));
    }
    plan
}

/// 1:N massive sends with idle workers, for each (workers, messages) on each dispatcher
/// (thread_pool with individual fifo and max_demands_at_once 4: the seed's collapse case).
fn fan_outs(sizes: &[(u32, u32)], dispatchers: &[Dispatcher]) -> Vec<Step> {
    let mut plan = Vec::new();
    for &(workers, messages) in sizes {
        for &d in dispatchers {
            let mut placement = Placement::of(d);
            if d == Dispatcher::ThreadPool {
                placement = placement.fifo(FifoArg::Individual);
            }
            plan.push(Step::FanOut(FanOutArgs {
                workers,
                messages,
                work: fan_out::Work::Idle,
                sleep_ms: 5,
                placement,
            }));
        }
    }
    plan
}

fn full_plan() -> Vec<Step> {
    let mut plan = vec![
        Step::PingPong(PingPongArgs {
            count: 25_000_000,
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement: Placement::of(Dispatcher::OneThread),
        }),
        Step::PingPong(PingPongArgs {
            count: 1_000_000,
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement: Placement::of(Dispatcher::ActiveObj),
        }),
    ];
    plan.extend(pool_ping_pongs(1_000_000));
    plan.push(Step::NamedPingPong(NamedPingPongArgs {
        count: 5_000_000,
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan.push(Step::StateSwitch(StateSwitchArgs { count: 10_000_000 }));
    plan.extend(thread_rings(50_000_000));
    plan.extend(parallel_thread_rings(50_000_000));
    plan.push(Step::CountingActor(CountingActorArgs {
        count: 3_000_000,
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan.extend(floods(50_000_000, 50_000_000));
    plan.extend(self_send_grid(1.0, 2, None));
    // The seed's dispatchers come with the grids below; work_stealing is cohort's own.
    plan.extend(fan_outs(
        &[(100, 100_000), (10_000, 1_000)],
        &[Dispatcher::WorkStealing],
    ));
    plan.push(timers_step(1_000_000, 1000, 3000));
    plan.extend(chain_steps(200_000, 2_000_000));
    plan.push(Step::Locality(dispatcher_cmds::locality_plan(false)));
    plan.extend(latency_cmd::full_runs().into_iter().map(Step::Latency));
    plan.extend(seed_grids::skynets(
        1_000_000,
        &seed_grids::SKYNET_POOL_SIZES,
    ));
    plan.extend(seed_grids::fan_out_grid(None, 1.0, 5));
    plan.push(Step::RemotePingPong(remote_cmd::full_args()));
    plan
}

fn suite(plan: &[Step], runs: usize, machine: &Machine) -> Vec<Record> {
    let bar = ProgressBar::new(plan.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"),
    );
    let mut out = Vec::new();
    for step in plan {
        match step {
            Step::PingPong(a) => {
                bar.set_message(format!("ping-pong {}", a.placement.label()));
                out.extend(ping_pong_records(a, runs, machine));
            }
            Step::Skynet(a) => {
                bar.set_message(format!("skynet {}", a.placement.label()));
                out.extend(skynet_records(a, runs, machine));
            }
            Step::FanOut(a) => {
                bar.set_message(format!("fan-out {}", a.placement.label()));
                out.extend(fan_out_records(a, runs, machine));
            }
            Step::ThreadRing(a) => {
                bar.set_message(format!("thread-ring {}", a.placement.label()));
                out.extend(thread_ring_records(a, runs, machine));
            }
            Step::ParallelThreadRing(a) => {
                bar.set_message(format!("parallel-thread-ring {}", a.placement.label()));
                out.extend(parallel_thread_ring_records(a, runs, machine));
            }
            Step::CountingActor(a) => {
                bar.set_message(format!("counting-actor {}", a.placement.label()));
                out.extend(counting_actor_records(a, runs, machine));
            }
            Step::ProducerConsumer(a) => {
                bar.set_message(format!("producer-consumer {}", a.placement.label()));
                out.extend(producer_consumer_records(a, runs, machine));
            }
            Step::Timers(a) => {
                bar.set_message(format!("timers {}", a.count));
                out.extend(timers_records(a, runs, machine));
            }
            Step::SelfSend(a) => {
                bar.set_message(format!(
                    "self-send {} workers x {} {}",
                    a.workers,
                    a.message_count,
                    self_send::placement_of(a.placement).label()
                ));
                out.extend(self_send_records(a, runs, machine));
            }
            Step::NamedPingPong(a) => {
                bar.set_message(format!("named-ping-pong {}", a.placement.label()));
                out.extend(named_ping_pong_records(a, runs, machine));
            }
            Step::StateSwitch(a) => {
                bar.set_message("state-switch");
                out.extend(state_switch_records(a, runs, machine));
            }
            Step::RequestReply(a) => {
                bar.set_message(format!("request-reply {}", a.placement.label()));
                out.extend(request_reply_records(a, runs, machine));
            }
            Step::ChainThroughput(a) => {
                bar.set_message(format!("chain-throughput {}", a.placement.label()));
                out.extend(chain_throughput_records(a, runs, machine));
            }
            Step::IdleCpu(a) => {
                bar.set_message(format!("idle-cpu {} s", a.seconds));
                out.extend(dispatcher_cmds::idle_cpu_records(a, runs, machine));
            }
            Step::Locality(a) => {
                bar.set_message("locality");
                out.extend(dispatcher_cmds::locality_records(a, runs, machine));
            }
            Step::RemotePingPong(a) => {
                bar.set_message("remote-ping-pong");
                out.extend(remote_cmd::records(a, runs, machine));
            }
            Step::Latency(a) => {
                bar.set_message(format!("latency {}", a.label()));
                out.extend(latency_cmd::records(a, 1, machine));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    out
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

fn params(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn ping_pong_records(a: &PingPongArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "ping-pong";
    let limits = if a.limits { ", message limits" } else { "" };
    let variant = format!("{}, {}{limits}", a.placement.label(), a.mbox.label());
    let p = params(merge(
        json!({ "count": a.count, "mailbox": format!("{:?}", a.mbox).to_lowercase(), "limits": a.limits }),
        a.placement.params(),
    ));
    let mut msgs = Vec::new();
    let mut trips = Vec::new();
    for _ in 0..runs.max(1) {
        match ping_pong::run_once(a.count, a.placement, false, a.mbox, a.limits) {
            Ok(o) => {
                let s = o.elapsed.as_secs_f64();
                trips.push(o.round_trips as f64 / s);
                msgs.push(2.0 * o.round_trips as f64 / s);
            }
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        }
    }
    let mut out = vec![
        Record::from_samples(scenario, &variant, &p, "messages_per_s", &msgs, machine),
        Record::from_samples(scenario, &variant, &p, "round_trips_per_s", &trips, machine),
    ];
    // One more run that times every round trip (timing costs a little throughput).
    let lat_count = a.count.min(1_000_000);
    match ping_pong::run_once(lat_count, a.placement, true, a.mbox, a.limits) {
        Ok(o) => {
            if let Some(h) = o.latency {
                for (metric, q) in [
                    ("latency_ns_p50", 0.5),
                    ("latency_ns_p99", 0.99),
                    ("latency_ns_p999", 0.999),
                ] {
                    let v = h.value_at_quantile(q) as f64;
                    out.push(Record::from_samples(
                        scenario,
                        &variant,
                        &p,
                        metric,
                        &[v],
                        machine,
                    ));
                }
            }
        }
        Err(e) => out.push(Record::failed(scenario, &variant, &p, e, machine)),
    }
    out
}

fn skynet_records(a: &SkynetArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "skynet";
    let variant = format!("{}, branching {}", a.placement.label(), a.branching);
    let mut p = params(merge(
        json!({ "leaves": a.leaves, "branching": a.branching }),
        a.placement.params(),
    ));
    let (mut with_teardown, mut to_result, mut rates, mut peaks) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let can_reset = rss::reset_peak();
        match skynet::run_once(a.leaves, a.branching, a.placement) {
            Ok(o) => {
                p.insert("sum".into(), json!(o.sum));
                with_teardown.push(o.with_teardown.as_secs_f64());
                to_result.push(o.to_result.as_secs_f64());
                rates.push(o.agents as f64 / o.with_teardown.as_secs_f64());
                if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
                    peaks.push(b as f64);
                }
            }
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        }
    }
    let mut out = vec![
        Record::from_samples(scenario, &variant, &p, "elapsed_s", &with_teardown, machine),
        Record::from_samples(
            scenario,
            &variant,
            &p,
            "elapsed_to_result_s",
            &to_result,
            machine,
        ),
        Record::from_samples(scenario, &variant, &p, "agents_per_s", &rates, machine),
    ];
    if !peaks.is_empty() {
        out.push(Record::from_samples(
            scenario,
            &variant,
            &p,
            "peak_rss_bytes",
            &peaks,
            machine,
        ));
    }
    out
}

/// Runs `run` `runs` times; each run returns its (metric, value) samples, in the same order
/// every time. One record per metric, or one failed record at the first error.
fn sampled(
    scenario: &str,
    variant: &str,
    p: &Map<String, Value>,
    runs: usize,
    machine: &Machine,
    mut run: impl FnMut() -> Result<Vec<(&'static str, f64)>, String>,
) -> Vec<Record> {
    let mut metrics: Vec<(&'static str, Vec<f64>)> = Vec::new();
    for _ in 0..runs.max(1) {
        match run() {
            Ok(samples) => {
                for (metric, v) in samples {
                    match metrics.iter_mut().find(|(m, _)| *m == metric) {
                        Some((_, vs)) => vs.push(v),
                        None => metrics.push((metric, vec![v])),
                    }
                }
            }
            Err(e) => return vec![Record::failed(scenario, variant, p, e, machine)],
        }
    }
    metrics
        .iter()
        .map(|(metric, vs)| Record::from_samples(scenario, variant, p, metric, vs, machine))
        .collect()
}

#[derive(Args, Clone)]
struct FanOutArgs {
    /// Subscribers of the named mailbox.
    #[arg(long, default_value_t = 100)]
    workers: u32,
    /// Messages the producer sends.
    #[arg(long, default_value_t = 100_000)]
    messages: u32,
    /// What a worker does per message.
    #[arg(long, value_enum, default_value_t = fan_out::Work::Idle)]
    work: fan_out::Work,
    /// Milliseconds a worker sleeps per message with `--work sleep`.
    #[arg(long, default_value_t = 5)]
    sleep_ms: u64,
    #[command(flatten)]
    placement: Placement,
}

fn fan_out_records(a: &FanOutArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!(
        "{}, {} workers x {}, {:?} workers",
        a.placement.label(),
        a.workers,
        a.messages,
        a.work
    )
    .to_lowercase();
    let p = params(merge(
        json!({ "workers": a.workers, "messages": a.messages, "work": format!("{:?}", a.work).to_lowercase(), "mailbox": "named" }),
        a.placement.params(),
    ));
    let sleep = std::time::Duration::from_millis(a.sleep_ms);
    let mut peaks = Vec::new();
    let mut out = sampled("fan-out", &variant, &p, runs, machine, || {
        let can_reset = rss::reset_peak();
        let o = fan_out::run_once(a.workers, a.messages, a.work, sleep, a.placement)?;
        if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
            peaks.push(b as f64);
        }
        let (send, total) = (o.send.as_secs_f64(), o.total.as_secs_f64());
        Ok(vec![
            ("deliveries_per_s", o.deliveries as f64 / total),
            ("elapsed_s", total),
            ("send_elapsed_s", send),
        ])
    });
    if !peaks.is_empty() && out.iter().all(|r| r.ok) {
        out.push(Record::from_samples(
            "fan-out",
            &variant,
            &p,
            "peak_rss_bytes",
            &peaks,
            machine,
        ));
    }
    out
}

fn thread_ring_records(a: &ThreadRingArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!("{}, {} agents", a.placement.label(), a.agents);
    let p = params(merge(
        json!({ "agents": a.agents, "hops": a.hops, "tokens": 1 }),
        a.placement.params(),
    ));
    sampled("thread-ring", &variant, &p, runs, machine, || {
        let o = thread_ring::run_once(a.agents, a.hops, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![("hops_per_s", o.hops as f64 / s), ("elapsed_s", s)])
    })
}

fn parallel_thread_ring_records(
    a: &ParallelThreadRingArgs,
    runs: usize,
    machine: &Machine,
) -> Vec<Record> {
    let variant = format!(
        "{}, {} agents, {} tokens",
        a.placement.label(),
        a.agents,
        a.tokens
    );
    let p = params(merge(
        json!({ "agents": a.agents, "hops": a.hops, "tokens": a.tokens }),
        a.placement.params(),
    ));
    sampled("parallel-thread-ring", &variant, &p, runs, machine, || {
        let o = parallel_thread_ring::run_once(a.agents, a.tokens, a.hops, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![("hops_per_s", o.hops as f64 / s), ("elapsed_s", s)])
    })
}

fn counting_actor_records(a: &CountingActorArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = format!("{}, writer: plain thread", a.placement.label());
    let p = params(merge(
        json!({ "count": a.count, "writer": "plain thread" }),
        a.placement.params(),
    ));
    sampled("counting-actor", &variant, &p, runs, machine, || {
        let o = counting_actor::run_once(a.count, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![
            ("messages_per_s", o.count as f64 / s),
            ("elapsed_s", s),
            (
                "send_messages_per_s",
                o.count as f64 / o.send_elapsed.as_secs_f64(),
            ),
        ])
    })
}

fn producer_consumer_records(
    a: &ProducerConsumerArgs,
    runs: usize,
    machine: &Machine,
) -> Vec<Record> {
    let variant = format!(
        "{}, {} producers, burst {}",
        a.placement.label(),
        a.producers,
        a.burst
    );
    let p = params(merge(
        json!({ "count": a.count, "producers": a.producers, "burst": a.burst }),
        a.placement.params(),
    ));
    sampled("producer-consumer", &variant, &p, runs, machine, || {
        let o = producer_consumer::run_once(a.count, a.producers, a.burst, a.placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![
            ("messages_per_s", o.count as f64 / s),
            ("elapsed_s", s),
        ])
    })
}

fn self_send_records(a: &SelfSendArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let placement = self_send::placement_of(a.placement);
    let variant = format!(
        "{}, {} workers x {}, start batch {}",
        placement.label(),
        a.workers,
        report::thousands(a.message_count),
        a.start_batch
    );
    let p = params(merge(
        json!({
            "workers": a.workers,
            "message_count": a.message_count,
            "start_batch": a.start_batch,
        }),
        placement.params(),
    ));
    sampled("self-send", &variant, &p, runs, machine, || {
        let o = self_send::run_once(a.workers, a.message_count, a.start_batch, placement)?;
        let s = o.elapsed.as_secs_f64();
        Ok(vec![
            ("elapsed_s", s),
            ("messages_per_s", o.messages as f64 / s),
        ])
    })
}

/// Direct and named ping-pong run alternately (so noise hits both alike), with the per-run
/// ratio of their throughputs.
fn named_ping_pong_records(a: &NamedPingPongArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    use ping_pong::Mailbox;
    let variant = a.placement.label();
    let p = params(merge(json!({ "count": a.count }), a.placement.params()));
    sampled("named-ping-pong", &variant, &p, runs, machine, || {
        let rate = |m: Mailbox| {
            ping_pong::run_once(a.count, a.placement, false, m, false)
                .map(|o| 2.0 * o.round_trips as f64 / o.elapsed.as_secs_f64())
        };
        let direct = rate(Mailbox::Direct)?;
        let named = rate(Mailbox::Named)?;
        Ok(vec![
            ("direct_messages_per_s", direct),
            ("named_messages_per_s", named),
            ("named_over_direct_ratio", named / direct),
        ])
    })
}

/// A handled message with and without a state switch, timed back to back in each run.
fn state_switch_records(a: &StateSwitchArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let variant = "one_thread, self-sent signal";
    let p = params(json!({ "count": a.count }));
    sampled("state-switch", variant, &p, runs, machine, || {
        let o = state_switch::run_once(a.count)?;
        let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / o.count as f64;
        let (plain, switch, nested) = (ns(o.plain), ns(o.switch), ns(o.nested));
        Ok(vec![
            ("plain_ns_per_msg", plain),
            ("switch_ns_per_msg", switch),
            ("nested_hooks_ns_per_msg", nested),
            ("switch_ratio", switch / plain),
            ("nested_hooks_ratio", nested / plain),
        ])
    })
}

#[derive(Args, Clone)]
struct RequestReplyArgs {
    /// Requests, sent one at a time.
    #[arg(long, default_value_t = 200_000)]
    count: u64,
    /// Microseconds the waiting thread polls for a reply before it sleeps (default:
    /// cohort's `defaults::REPLY_SPIN`).
    #[arg(long)]
    spin_us: Option<u64>,
    #[command(flatten)]
    placement: Placement,
}

fn request_reply_records(a: &RequestReplyArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let spin = a.spin_us.map(std::time::Duration::from_micros);
    let variant = match a.spin_us {
        None => format!("{}, plain thread -> agent", a.placement.label()),
        Some(us) => format!(
            "{}, plain thread -> agent, spin {us} us",
            a.placement.label()
        ),
    };
    let p = params(merge(
        json!({ "count": a.count, "spin_us": a.spin_us }),
        a.placement.params(),
    ));
    sampled("request-reply", &variant, &p, runs, machine, || {
        let o = chains::request_reply_once(a.count, spin, a.placement)?;
        let q = |q: f64| o.latency.value_at_quantile(q) as f64;
        Ok(vec![
            (
                "round_trips_per_s",
                o.count as f64 / o.elapsed.as_secs_f64(),
            ),
            ("latency_ns_p50", q(0.5)),
            ("latency_ns_p99", q(0.99)),
            ("latency_ns_p999", q(0.999)),
        ])
    })
}

/// The timers scenario on both queues: `count` timers due over [delay, 2 delay), and the 1 ms
/// periodic timer for `periodic_ms`.
fn timers_step(count: u64, delay_ms: u64, periodic_ms: u64) -> Step {
    Step::Timers(TimersArgs {
        count,
        delay_ms,
        spread_ms: delay_ms,
        periodic_ms,
        queue: vec![timers::QueueArg::Wheel, timers::QueueArg::Heap],
    })
}

fn timers_records(a: &TimersArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "timers";
    let placement = Placement::of(Dispatcher::OneThread);
    let delay = std::time::Duration::from_millis(a.delay_ms);
    let spread = std::time::Duration::from_millis(a.spread_ms);
    let mut out = Vec::new();
    // Per queue: metric name -> samples; runs interleave the queues.
    let mut mass: Vec<Vec<(&str, f64)>> = vec![Vec::new(); a.queue.len()];
    let mut periodic: Vec<Vec<(&str, f64)>> = vec![Vec::new(); a.queue.len()];
    let mut failed = vec![None; a.queue.len()];
    for _ in 0..runs.max(1) {
        for (k, q) in a.queue.iter().enumerate() {
            if failed[k].is_some() {
                continue;
            }
            let can_reset = rss::reset_peak();
            match timers::run_mass(a.count, delay, spread, q.queue(), placement) {
                Ok(o) => {
                    let m = &mut mass[k];
                    m.push((
                        "schedule_ns_per_timer",
                        o.schedule.as_nanos() as f64 / o.count as f64,
                    ));
                    m.push(("heap_bytes_per_pending_timer", o.heap_bytes_per_timer));
                    if let Some(b) = o.rss_bytes_per_timer {
                        m.push(("rss_bytes_per_pending_timer", b));
                    }
                    if let Some(c) = o.fire_cpu_per_timer {
                        m.push(("timer_thread_cpu_ns_per_timer", c.as_nanos() as f64));
                    }
                    m.push((
                        "drain_after_last_deadline_ms",
                        o.drain_after_last_deadline.as_secs_f64() * 1e3,
                    ));
                    m.push(("lateness_mean_us", o.late_mean.as_secs_f64() * 1e6));
                    m.push(("lateness_max_ms", o.late_max.as_secs_f64() * 1e3));
                    if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
                        m.push(("peak_rss_mib", b as f64 / (1024.0 * 1024.0)));
                    }
                }
                Err(e) => failed[k] = Some(e),
            }
            if a.periodic_ms > 0 {
                match timers::run_periodic(
                    std::time::Duration::from_millis(1),
                    std::time::Duration::from_millis(a.periodic_ms),
                    q.queue(),
                ) {
                    Ok(o) => {
                        let p = &mut periodic[k];
                        p.push(("ticks_per_s", o.ticks as f64 / o.elapsed.as_secs_f64()));
                        if let Some(c) = o.cpu_share {
                            p.push(("process_cpu_percent", c * 100.0));
                        }
                        if let Some(c) = o.timer_thread_share {
                            p.push(("timer_thread_cpu_percent", c * 100.0));
                        }
                    }
                    Err(e) => failed[k] = Some(e),
                }
            }
        }
    }
    for (k, q) in a.queue.iter().enumerate() {
        let variant = format!("{} queue", q.name());
        let p = params(json!({
            "count": a.count, "delay_ms": a.delay_ms, "spread_ms": a.spread_ms,
            "queue": q.name(),
        }));
        if let Some(e) = failed[k].take() {
            out.push(Record::failed(scenario, &variant, &p, e, machine));
            continue;
        }
        out.extend(group(&mass[k]).into_iter().map(|(metric, samples)| {
            Record::from_samples(scenario, &variant, &p, metric, &samples, machine)
        }));
        let pv = format!("{} queue, one 1 ms periodic timer", q.name());
        let pp = params(json!({ "period_ms": 1, "duration_ms": a.periodic_ms, "queue": q.name() }));
        out.extend(group(&periodic[k]).into_iter().map(|(metric, samples)| {
            Record::from_samples(scenario, &pv, &pp, metric, &samples, machine)
        }));
    }
    out
}

/// Samples grouped by metric, in first-seen order.
fn group<'a>(samples: &[(&'a str, f64)]) -> Vec<(&'a str, Vec<f64>)> {
    let mut out: Vec<(&str, Vec<f64>)> = Vec::new();
    for &(metric, v) in samples {
        match out.iter_mut().find(|(m, _)| *m == metric) {
            Some((_, vs)) => vs.push(v),
            None => out.push((metric, vec![v])),
        }
    }
    out
}

#[derive(Args, Clone)]
struct ChainThroughputArgs {
    /// Messages.
    #[arg(long, default_value_t = 2_000_000)]
    count: u64,
    /// Capacity of the chain (0: unbounded); a full bounded chain makes the agent wait.
    #[arg(long, default_value_t = 0)]
    capacity: usize,
    #[command(flatten)]
    placement: Placement,
}

fn chain_throughput_records(
    a: &ChainThroughputArgs,
    runs: usize,
    machine: &Machine,
) -> Vec<Record> {
    let chain = match a.capacity {
        0 => "unbounded chain".to_string(),
        c => format!("chain bounded to {c}"),
    };
    let variant = format!(
        "{}, thread -> agent -> {chain} -> thread",
        a.placement.label()
    );
    let p = params(merge(
        json!({ "count": a.count, "capacity": a.capacity }),
        a.placement.params(),
    ));
    sampled("chain-throughput", &variant, &p, runs, machine, || {
        let elapsed = chains::chain_throughput_once(a.count, a.capacity, a.placement)?;
        Ok(vec![
            ("messages_per_s", a.count as f64 / elapsed.as_secs_f64()),
            ("elapsed_s", elapsed.as_secs_f64()),
        ])
    })
}
