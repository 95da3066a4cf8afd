//! `cohort-bench`: the classic actor benchmarks of published articles and suites (Theron's,
//! SObjectizer's, CAF's, Akka.NET's), run on cohort.
//!
//! `cohort-bench quick` runs every scenario at a reduced size (the README's first command);
//! `cohort-bench full` at the sizes of their sources; each scenario is also a subcommand of its
//! own. See docs/BENCHMARKS.md for what each scenario measures and where it comes from.
//!
//! Layout: `cli` parses the command line; `commands/` holds, per scenario subcommand, its flags
//! and how its runs become records; `plans/` lists the steps of the `quick` and `full` suites
//! and of the SObjectizer grids; `suite` runs such a list; `report` prints the records;
//! `scenarios/` runs one measurement; `compare` and `report_cmd` are the `compare` and
//! `report` subcommands.

mod alloc;
mod cli;
mod commands;
mod compare;
mod cpu;
mod floors;
mod machine;
mod plans;
mod report;
mod report_cmd;
mod rss;
mod scenarios;
mod suite;
mod usage;
#[cfg(test)]
mod watchdog;

use clap::Parser;
use cli::{Cli, Command};
use commands::{
    async_interop, chaos, chaos_runtime, churn, cluster, floor, http_load, idle_agents, idle_cpu,
    latency, locality, remote_flood, remote_ping_pong, restart, soak, timers,
};
use machine::Machine;
use plans::sobjectizer_grids;
use suite::{Step, single, suite};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

fn main() {
    let cli = Cli::parse();
    let format = cli.common.output_format();
    let machine = Machine::detect();
    let runs = |default: usize| cli.common.runs.unwrap_or(default);
    let records = match cli.command {
        Command::PingPong(a) => single(&Step::PingPong(a), runs(5), &machine),
        Command::Skynet(a) => single(&Step::Skynet(a), runs(5), &machine),
        Command::ThreadRing(a) => single(&Step::ThreadRing(a), runs(5), &machine),
        Command::FanOut(a) => single(&Step::FanOut(a), runs(5), &machine),
        Command::ParallelThreadRing(a) => single(&Step::ParallelThreadRing(a), runs(5), &machine),
        Command::CountingActor(a) => single(&Step::CountingActor(a), runs(5), &machine),
        Command::ProducerConsumer(a) => single(&Step::ProducerConsumer(a), runs(5), &machine),
        Command::SelfSend(a) => single(&Step::SelfSend(a), runs(5), &machine),
        Command::NamedPingPong(a) => single(&Step::NamedPingPong(a), runs(5), &machine),
        Command::StateSwitch(a) => single(&Step::StateSwitch(a), runs(5), &machine),
        Command::Churn(a) => churn::records(&a, runs(3), &machine),
        Command::Restart(a) => restart::records(&a, runs(1), &machine),
        Command::SelfSendGrid(a) => {
            scenarios::self_send::validate_scale(a.scale).unwrap_or_else(|e| usage_error(&e));
            let plan = sobjectizer_grids::self_send_grid(a.scale, a.threads, a.only);
            suite(&plan, runs(5), &machine)
        }
        Command::Timers(a) => timers::records(&a, runs(3), &machine),
        Command::RequestReply(a) => single(&Step::RequestReply(a), runs(5), &machine),
        Command::ChainThroughput(a) => single(&Step::ChainThroughput(a), runs(5), &machine),
        Command::SpawnDeliver(a) => async_interop::spawn_deliver_records(&a, runs(5), &machine),
        Command::AsyncAsk(a) => async_interop::async_ask_records(&a, runs(5), &machine),
        Command::IdleCpu(a) => idle_cpu::records(&a, runs(3), &machine),
        Command::HttpLoad(a) => http_load::records(&a, runs(3), &machine),
        Command::Locality(a) => locality::records(&a, runs(3), &machine),
        Command::Latency(a) => latency::records(&a, runs(1), &machine),
        Command::FanOutGrid(a) => {
            sobjectizer_grids::validate_scale(a.scale).unwrap_or_else(|e| usage_error(&e));
            let plan = sobjectizer_grids::fan_out_grid(a.only, a.scale, a.sleep_ms);
            suite(&plan, runs(5), &machine)
        }
        Command::SkynetGrid(a) => {
            sobjectizer_grids::validate_sizes(&a.sizes).unwrap_or_else(|e| usage_error(&e));
            let plan = sobjectizer_grids::skynets(a.leaves, &a.sizes);
            suite(&plan, runs(5), &machine)
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
        Command::Quick(a) => {
            let size = if a.tiny {
                plans::QuickSize::Tiny
            } else {
                plans::QuickSize::Reduced
            };
            suite(&plans::quick(size), runs(3), &machine)
        }
        Command::Floor(a) => {
            let floors = floor::floors(&a).unwrap_or_else(|e| usage_error(&e));
            floor::records(&floors, runs(3), &machine)
        }
        Command::IdleAgents(a) => {
            idle_agents::validate(&a).unwrap_or_else(|e| usage_error(&e));
            idle_agents::records(&a, runs(1), &machine)
        }
        Command::Full => suite(&plans::full(), runs(5), &machine),
        Command::RemotePingPong(a) => {
            remote_ping_pong::validate(&a).unwrap_or_else(|e| usage_error(&e));
            remote_ping_pong::records(&a, runs(3), &machine)
        }
        Command::Cluster(a) => {
            cluster::validate(&a).unwrap_or_else(|e| usage_error(&e));
            cluster::records(&a, runs(1), &machine)
        }
        Command::RemoteFlood(a) => {
            remote_flood::validate(&a).unwrap_or_else(|e| usage_error(&e));
            remote_flood::records(&a, runs(1), &machine)
        }
        Command::Soak(a) => std::process::exit(soak::main(&a, format)),
        Command::ChaosRuntime(a) => std::process::exit(chaos_runtime::main(&a, format)),
        Command::RemotePingPongServer(a) => std::process::exit(remote_ping_pong::serve(&a)),
        Command::Chaos(a) => std::process::exit(chaos::run(&a)),
        Command::ChaosNode(a) => std::process::exit(chaos::serve(&a)),
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
