//! The suite runner: a plan is a list of steps, each a scenario subcommand with its flags.

mod child;

use crate::commands::{
    async_interop, chains, counting_actor, fan_out, idle_cpu, latency, locality,
    parallel_thread_ring, ping_pong, producer_consumer, remote_ping_pong, self_send, skynet,
    state_switch, thread_ring, timers,
};
use crate::machine::Machine;
use crate::report::Record;
use crate::{floors, scenarios};
use indicatif::{ProgressBar, ProgressStyle};

/// One step of a suite.
pub enum Step {
    FanOut(fan_out::FanOutArgs),
    PingPong(ping_pong::PingPongArgs),
    Skynet(skynet::SkynetArgs),
    ThreadRing(thread_ring::ThreadRingArgs),
    ParallelThreadRing(parallel_thread_ring::ParallelThreadRingArgs),
    CountingActor(counting_actor::CountingActorArgs),
    ProducerConsumer(producer_consumer::ProducerConsumerArgs),
    SelfSend(self_send::SelfSendArgs),
    NamedPingPong(ping_pong::NamedPingPongArgs),
    StateSwitch(state_switch::StateSwitchArgs),
    Timers(timers::TimersArgs),
    RequestReply(chains::RequestReplyArgs),
    ChainThroughput(chains::ChainThroughputArgs),
    SpawnDeliver(async_interop::SpawnDeliverArgs),
    AsyncAsk(async_interop::AsyncAskArgs),
    IdleCpu(idle_cpu::IdleCpuArgs),
    Locality(locality::LocalityArgs),
    /// A latency pipeline: runs once whatever the suite's --runs (a run is itself a
    /// duration-long series of messages).
    Latency(latency::LatencyArgs),
    RemotePingPong(remote_ping_pong::RemotePingPongArgs),
}

/// Runs every step of `plan` in order, `runs` times each (a latency pipeline once), with a
/// progress bar on standard error; the records of all steps, each with its floor (run once
/// per suite for every distinct floor, after the first step that uses it; a step run in a
/// process of its own runs its floor there).
pub fn suite(plan: &[Step], runs: usize, machine: &Machine) -> Vec<Record> {
    let bar = ProgressBar::new(plan.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"),
    );
    let mut out = Vec::new();
    let mut cache = floors::Cache::new();
    for step in plan {
        bar.set_message(label(step));
        // Each step's memory figures start from the memory in use, not from what the
        // steps before it left free in the heap.
        crate::rss::trim_heap();
        match own_process(step) {
            Some(args) => out.extend(child::records(&args, runs, machine)),
            None => out.extend(with_floor(step, runs, machine, &mut cache)),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    out
}

/// The subcommand and flags of a step that a suite runs in a process of its own (see
/// `child`): those with a peak RSS row, which would otherwise start from what earlier steps
/// left resident.
fn own_process(step: &Step) -> Option<Vec<String>> {
    match step {
        Step::Skynet(a) => Some(a.cli_args()),
        Step::FanOut(a) => Some(a.cli_args()),
        Step::Timers(a) => Some(a.cli_args()),
        Step::SpawnDeliver(a) => Some(a.cli_args()),
        _ => None,
    }
}

/// Runs one step `runs` times and its floor once: its records, with `floor` and
/// `ratio_to_floor` set where the floor measured the same metric.
pub fn single(step: &Step, runs: usize, machine: &Machine) -> Vec<Record> {
    with_floor(step, runs, machine, &mut floors::Cache::new())
}

fn with_floor(
    step: &Step,
    runs: usize,
    machine: &Machine,
    cache: &mut floors::Cache,
) -> Vec<Record> {
    // The floor runs after the step: the step's own runs start in the state the scenario
    // alone leaves (its heap, its peak RSS), as they did before floors existed.
    let mut records = records(step, runs, machine);
    if records.iter().any(|r| r.ok) {
        let failed = floors::attach(step, &mut records, cache, machine);
        records.extend(failed);
    }
    records
}

/// What the progress bar says while `step` runs.
fn label(step: &Step) -> String {
    match step {
        Step::PingPong(a) => format!("ping-pong {}", a.placement.label()),
        Step::Skynet(a) => format!("skynet {}", a.placement.label()),
        Step::FanOut(a) => format!("fan-out {}", a.placement.label()),
        Step::ThreadRing(a) => format!("thread-ring {}", a.placement.label()),
        Step::ParallelThreadRing(a) => format!("parallel-thread-ring {}", a.placement.label()),
        Step::CountingActor(a) => format!("counting-actor {}", a.placement.label()),
        Step::ProducerConsumer(a) => format!("producer-consumer {}", a.placement.label()),
        Step::Timers(a) => format!("timers {}", a.count),
        Step::SelfSend(a) => format!(
            "self-send {} workers x {} {}",
            a.workers,
            a.message_count,
            scenarios::self_send::placement_of(a.placement).label()
        ),
        Step::NamedPingPong(a) => format!("named-ping-pong {}", a.placement.label()),
        Step::StateSwitch(_) => "state-switch".into(),
        Step::RequestReply(a) => format!("request-reply {}", a.placement.label()),
        Step::ChainThroughput(a) => format!("chain-throughput {}", a.placement.label()),
        Step::SpawnDeliver(_) => "spawn-deliver".into(),
        Step::AsyncAsk(_) => "async-ask".into(),
        Step::IdleCpu(a) => format!("idle-cpu {} s", a.seconds),
        Step::Locality(_) => "locality".into(),
        Step::RemotePingPong(_) => "remote-ping-pong".into(),
        Step::Latency(a) => format!("latency {}", a.label()),
    }
}

/// The records of `step` run `runs` times (a latency pipeline once).
fn records(step: &Step, runs: usize, machine: &Machine) -> Vec<Record> {
    match step {
        Step::PingPong(a) => ping_pong::records(a, runs, machine),
        Step::Skynet(a) => skynet::records(a, runs, machine),
        Step::FanOut(a) => fan_out::records(a, runs, machine),
        Step::ThreadRing(a) => thread_ring::records(a, runs, machine),
        Step::ParallelThreadRing(a) => parallel_thread_ring::records(a, runs, machine),
        Step::CountingActor(a) => counting_actor::records(a, runs, machine),
        Step::ProducerConsumer(a) => producer_consumer::records(a, runs, machine),
        Step::Timers(a) => timers::records(a, runs, machine),
        Step::SelfSend(a) => self_send::records(a, runs, machine),
        Step::NamedPingPong(a) => ping_pong::named_records(a, runs, machine),
        Step::StateSwitch(a) => state_switch::records(a, runs, machine),
        Step::RequestReply(a) => chains::request_reply_records(a, runs, machine),
        Step::ChainThroughput(a) => chains::chain_throughput_records(a, runs, machine),
        Step::SpawnDeliver(a) => async_interop::spawn_deliver_records(a, runs, machine),
        Step::AsyncAsk(a) => async_interop::async_ask_records(a, runs, machine),
        Step::IdleCpu(a) => idle_cpu::records(a, runs, machine),
        Step::Locality(a) => locality::records(a, runs, machine),
        Step::RemotePingPong(a) => remote_ping_pong::records(a, runs, machine),
        Step::Latency(a) => latency::records(a, 1, machine),
    }
}
