//! The suite runner: a plan is a list of steps, each a scenario subcommand with its flags.

use crate::commands::{
    async_interop, chains, counting_actor, fan_out, idle_cpu, latency, locality,
    parallel_thread_ring, ping_pong, producer_consumer, remote_ping_pong, self_send, skynet,
    state_switch, thread_ring, timers,
};
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios;
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
/// progress bar on standard error; the records of all steps.
pub fn suite(plan: &[Step], runs: usize, machine: &Machine) -> Vec<Record> {
    let bar = ProgressBar::new(plan.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"),
    );
    let mut out = Vec::new();
    for step in plan {
        match step {
            Step::PingPong(a) => {
                bar.set_message(format!("ping-pong {}", a.placement.label()));
                out.extend(ping_pong::records(a, runs, machine));
            }
            Step::Skynet(a) => {
                bar.set_message(format!("skynet {}", a.placement.label()));
                out.extend(skynet::records(a, runs, machine));
            }
            Step::FanOut(a) => {
                bar.set_message(format!("fan-out {}", a.placement.label()));
                out.extend(fan_out::records(a, runs, machine));
            }
            Step::ThreadRing(a) => {
                bar.set_message(format!("thread-ring {}", a.placement.label()));
                out.extend(thread_ring::records(a, runs, machine));
            }
            Step::ParallelThreadRing(a) => {
                bar.set_message(format!("parallel-thread-ring {}", a.placement.label()));
                out.extend(parallel_thread_ring::records(a, runs, machine));
            }
            Step::CountingActor(a) => {
                bar.set_message(format!("counting-actor {}", a.placement.label()));
                out.extend(counting_actor::records(a, runs, machine));
            }
            Step::ProducerConsumer(a) => {
                bar.set_message(format!("producer-consumer {}", a.placement.label()));
                out.extend(producer_consumer::records(a, runs, machine));
            }
            Step::Timers(a) => {
                bar.set_message(format!("timers {}", a.count));
                out.extend(timers::records(a, runs, machine));
            }
            Step::SelfSend(a) => {
                bar.set_message(format!(
                    "self-send {} workers x {} {}",
                    a.workers,
                    a.message_count,
                    scenarios::self_send::placement_of(a.placement).label()
                ));
                out.extend(self_send::records(a, runs, machine));
            }
            Step::NamedPingPong(a) => {
                bar.set_message(format!("named-ping-pong {}", a.placement.label()));
                out.extend(ping_pong::named_records(a, runs, machine));
            }
            Step::StateSwitch(a) => {
                bar.set_message("state-switch");
                out.extend(state_switch::records(a, runs, machine));
            }
            Step::RequestReply(a) => {
                bar.set_message(format!("request-reply {}", a.placement.label()));
                out.extend(chains::request_reply_records(a, runs, machine));
            }
            Step::ChainThroughput(a) => {
                bar.set_message(format!("chain-throughput {}", a.placement.label()));
                out.extend(chains::chain_throughput_records(a, runs, machine));
            }
            Step::SpawnDeliver(a) => {
                bar.set_message("spawn-deliver");
                out.extend(async_interop::spawn_deliver_records(a, runs, machine));
            }
            Step::AsyncAsk(a) => {
                bar.set_message("async-ask");
                out.extend(async_interop::async_ask_records(a, runs, machine));
            }
            Step::IdleCpu(a) => {
                bar.set_message(format!("idle-cpu {} s", a.seconds));
                out.extend(idle_cpu::records(a, runs, machine));
            }
            Step::Locality(a) => {
                bar.set_message("locality");
                out.extend(locality::records(a, runs, machine));
            }
            Step::RemotePingPong(a) => {
                bar.set_message("remote-ping-pong");
                out.extend(remote_ping_pong::records(a, runs, machine));
            }
            Step::Latency(a) => {
                bar.set_message(format!("latency {}", a.label()));
                out.extend(latency::records(a, 1, machine));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    out
}
