//! The command line: the subcommands, and the flags every subcommand takes (`--runs` and
//! the output format). Each scenario's own flags live with its records in `commands/`.

use crate::commands::{
    async_interop, chains, chaos, chaos_runtime, churn, cluster, counting_actor, fan_out, floor,
    http_load, idle_agents, idle_cpu, latency, locality, parallel_thread_ring, ping_pong,
    producer_consumer, remote_flood, remote_ping_pong, restart, self_send, skynet, soak,
    state_switch, thread_ring, timers,
};
use crate::plans::sobjectizer_grids;
use crate::report::Format;
use crate::{compare, report_cmd};
use clap::{Args, Parser, Subcommand};

/// The command line: a subcommand and the output flags every subcommand takes.
#[derive(Parser)]
#[command(
    name = "cohort-bench",
    version,
    about = "The classic actor benchmarks, on cohort"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub common: Common,
}

/// Flags of every subcommand.
#[derive(Args, Clone)]
pub struct Common {
    /// How many times each measurement repeats (the median and min-max are reported).
    #[arg(long, global = true)]
    pub runs: Option<usize>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Shorthand for --format json.
    #[arg(long, global = true)]
    pub json: bool,
    /// Shorthand for --format csv.
    #[arg(long, global = true)]
    pub csv: bool,
}

/// The subcommands: one per scenario, the grids, the suites, `report` and `compare`.
#[derive(Subcommand)]
pub enum Command {
    /// Two agents exchange signals (sobjectizer-performance-part3, theron PingPong).
    PingPong(ping_pong::PingPongArgs),
    /// One million agents created in a tree, summing their ordinals (sobjectizer-performance-part3).
    Skynet(skynet::SkynetArgs),
    /// Cooperations of named-mailbox subscribers registered and deregistered while a plain
    /// thread publishes (the delivery rule at deregistration, under churn).
    Churn(churn::ChurnArgs),
    /// One token passed round a ring of 503 agents (theron ThreadRing).
    ThreadRing(thread_ring::ThreadRingArgs),
    /// 503 tokens passed round a ring of 503 agents at once (theron ParallelThreadRing).
    ParallelThreadRing(parallel_thread_ring::ParallelThreadRingArgs),
    /// A plain thread floods one counting agent with messages (theron CountingActor).
    CountingActor(counting_actor::CountingActorArgs),
    /// Producer agents flood one consumer agent (theron ProducerConsumer).
    ProducerConsumer(producer_consumer::ProducerConsumerArgs),
    /// One producer, N workers on a named mailbox (sobjectizer-performance-part3 1:N).
    #[command(mut_arg("dispatcher", |a| a.default_value("active-group")))]
    FanOut(fan_out::FanOutArgs),
    /// Workers sending signals to themselves: the bulk effect of max_demands_at_once
    /// (sobjectizer-performance-part3).
    #[command(mut_arg("dispatcher", |a| a.default_value("thread-pool")))]
    #[command(mut_arg("fifo", |a| a.help("Fifo of a pool dispatcher (default: individual)")))]
    SelfSend(self_send::SelfSendArgs),
    /// sobjectizer-performance-part3's self-send grids across max_demands_at_once, on thread_pool and
    /// work_stealing: one record per cell.
    SelfSendGrid(sobjectizer_grids::SelfSendGridArgs),
    /// Ping-pong through named mailboxes against direct ones, interleaved, with their ratio.
    NamedPingPong(ping_pong::NamedPingPongArgs),
    /// A handled message with a state switch against one without (cohort's target: within 2x).
    StateSwitch(state_switch::StateSwitchArgs),
    /// Supervision: panic-to-first-message time of a one-for-one restart (p50, p99) on
    /// one_thread and work_stealing, and a crash storm (1,000 panics/s) beside a healthy
    /// ping-pong on the same dispatcher.
    Restart(restart::RestartArgs),
    /// Many delayed sends scheduled and fired (time, memory per timer), and the CPU cost of
    /// one 1 ms periodic timer (SObjectizer issue #97).
    Timers(timers::TimersArgs),
    /// Request/reply round trips from a plain thread to an agent (latency percentiles).
    RequestReply(chains::RequestReplyArgs),
    /// Agents spawn trivial futures and handle their outputs: completions/s, peak RSS.
    SpawnDeliver(async_interop::SpawnDeliverArgs),
    /// One agent asks another without blocking, the reply an event of the asker.
    AsyncAsk(async_interop::AsyncAskArgs),
    /// Integers thread -> agent -> message chain -> thread.
    ChainThroughput(chains::ChainThroughputArgs),
    /// CPU used by an idle environment with every dispatcher started (target < 1 %).
    IdleCpu(idle_cpu::IdleCpuArgs),
    /// The http_front example (axum, a pool of desk agents asked per request) driven on
    /// loopback by N kept-alive connections: requests/s and latency percentiles.
    HttpLoad(http_load::HttpLoadArgs),
    /// Agents with private state on 2 workers: thread_pool vs work_stealing vs a dedicated
    /// thread per agent (executors-cache-locality).
    Locality(locality::LocalityArgs),
    /// Chains of agents, serial or at a given rate: latency, cross times, CPU and memory
    /// (caf-latency-benchmarks).
    #[command(visible_alias = "latency-pipeline")]
    #[command(mut_arg("dispatcher", |a| a.default_value("work-stealing")))]
    Latency(latency::LatencyArgs),
    /// sobjectizer-performance-part3's 1:N grids on every dispatcher it tries: one record per
    /// cell.
    FanOutGrid(sobjectizer_grids::FanOutGridArgs),
    /// Skynet on the default dispatcher and on thread_pool of each size with either fifo
    /// (sobjectizer-performance-part3's table): one record per cell.
    SkynetGrid(sobjectizer_grids::SkynetGridArgs),
    /// Client agents on one node, echo agents on another, over TCP on loopback (Akka.NET's
    /// RemotePingPong, akka-remote-flush-batching): throughput per client count and batching
    /// policy, mean messages per write, and round-trip latency with one ping in flight.
    RemotePingPong(remote_ping_pong::RemotePingPongArgs),
    /// A real peer's ping-pong with a node while a peer floods it (heartbeats, tiny
    /// messages), 10,000 connection attempts come from one address, or connections stall a
    /// max-length frame: throughput against an undisturbed run, and memory.
    RemoteFlood(remote_flood::RemoteFloodArgs),
    /// N cluster members in this process on loopback, each its own remoting node and gossip
    /// runtime: convergence, registration spread, crash detection, gossip bytes.
    Cluster(cluster::ClusterArgs),
    /// A mixed workload (every dispatcher kind, named mailboxes, timers, chains,
    /// request/reply, remote traffic with a child process) for minutes, sampling RSS, open
    /// file descriptors and threads of both processes: samples, a plot and a growth verdict.
    Soak(soak::SoakArgs),
    /// Cooperations churned from several threads, panics, restarts, overflowing limits,
    /// timers cancelled while firing and stops in the middle, on every dispatcher kind, every
    /// message checked by the ledger.
    ChaosRuntime(chaos_runtime::ChaosRuntimeArgs),
    /// Nodes exchanging numbered messages under injected faults (delay, bandwidth caps,
    /// stalls, half-open connections, resets, cuts, a stalled receiver, a full queue, a
    /// killed and restarted node, a link down): every message handled once or counted, in
    /// order. Exit status 1 when anything is unaccounted, duplicated or reordered.
    Chaos(chaos::ChaosArgs),
    /// A receiving node of `chaos` as a child process (started by chaos).
    #[command(hide = true)]
    ChaosNode(crate::scenarios::chaos::child::NodeArgs),
    /// The echo side of remote-ping-pong as a child process (started by remote-ping-pong).
    #[command(hide = true)]
    RemotePingPongServer(remote_ping_pong::ServerArgs),
    /// Draws charts (SVG or PNG) and a markdown table from result files (--json or --csv
    /// output).
    Report(report_cmd::ReportArgs),
    /// Every scenario at a reduced size, with a progress bar and a summary table (< 2 min).
    Quick(QuickArgs),
    /// A scenario's work written by hand without any framework (or every scenario's, with
    /// `all`), at the sizes `quick` runs it with: the floors the suite's records compare to.
    Floor(floor::FloorArgs),
    /// Bytes per registered idle agent: many agents in many cooperations, as RSS and as
    /// allocator bytes, with a breakdown by what each agent holds.
    IdleAgents(idle_agents::IdleAgentsArgs),
    /// Every scenario at the sizes of its source.
    Full,
    /// The same scenarios on cohort and on actix, kameo, ractor and CAF (peers/), interleaved
    /// in one run: per scenario each framework's median, min-max and ratio to cohort.
    Compare(compare::CompareArgs),
}

/// `quick`'s flags.
#[derive(clap::Args, Clone, Debug)]
pub struct QuickArgs {
    /// Tiny sizes: checks that every scenario runs and gives its records, in seconds even in a
    /// debug build (CI's smoke test; no figures).
    #[arg(long)]
    pub tiny: bool,
}

impl Common {
    /// The output format: `--json` or `--csv` if given, else `--format`.
    pub fn output_format(&self) -> Format {
        if self.json {
            Format::Json
        } else if self.csv {
            Format::Csv
        } else {
            self.format
        }
    }
}
