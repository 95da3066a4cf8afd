//! The suites: `quick` (every scenario at a reduced size, in a few minutes) and `full` (every
//! scenario at the sizes of its source), as lists of steps.

pub mod sobjectizer_grids;

use crate::commands::async_interop::{AsyncAskArgs, SpawnDeliverArgs};
use crate::commands::chains::{ChainThroughputArgs, RequestReplyArgs};
use crate::commands::counting_actor::CountingActorArgs;
use crate::commands::fan_out::FanOutArgs;
use crate::commands::parallel_thread_ring::ParallelThreadRingArgs;
use crate::commands::ping_pong::{NamedPingPongArgs, PingPongArgs};
use crate::commands::producer_consumer::ProducerConsumerArgs;
use crate::commands::self_send::SelfSendArgs;
use crate::commands::skynet::SkynetArgs;
use crate::commands::state_switch::StateSwitchArgs;
use crate::commands::thread_ring::ThreadRingArgs;
use crate::commands::timers::TimersArgs;
use crate::commands::{idle_cpu, latency, locality, remote_ping_pong};
use crate::scenarios::async_interop::AskLayout;
use crate::scenarios::skynet::Teardown;
use crate::scenarios::{
    Dispatcher, FifoArg, Placement, fan_out, ping_pong, producer_consumer, self_send, thread_ring,
    timers,
};
use crate::suite::Step;

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

/// Ping-pong on the 2-thread pools: thread_pool with either fifo, and work_stealing.
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

/// The sizes `quick` runs its scenarios at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuickSize {
    /// A few minutes in a release build: the figures of the README and the A/B runs.
    Reduced,
    /// A few seconds even in a debug build: checks that every scenario runs and gives its
    /// records (CI's smoke test; never figures).
    Tiny,
}

impl QuickSize {
    /// `n` at the reduced size, or a hundredth of it (at least 100) at the tiny one.
    fn of(self, n: u64) -> u64 {
        match self {
            Self::Reduced => n,
            Self::Tiny => (n / 100).max(100),
        }
    }
}

/// `quick`: every scenario at a reduced (or tiny) size.
pub fn quick(size: QuickSize) -> Vec<Step> {
    let n = |count: u64| size.of(count);
    let tiny = size == QuickSize::Tiny;
    let mut plan = vec![
        Step::IdleCpu(idle_cpu::IdleCpuArgs {
            seconds: if tiny { 0.1 } else { 1.0 },
            trickle_us: 0,
            fixed_spin_us: None,
        }),
        // Sparse traffic: what the adaptive spin saves against the spin it replaced.
        Step::IdleCpu(idle_cpu::IdleCpuArgs {
            seconds: if tiny { 0.1 } else { 1.0 },
            trickle_us: 200,
            fixed_spin_us: None,
        }),
        Step::IdleCpu(idle_cpu::IdleCpuArgs {
            seconds: if tiny { 0.1 } else { 1.0 },
            trickle_us: 200,
            fixed_spin_us: Some(50),
        }),
        Step::Locality(locality::locality_plan(true)),
        Step::PingPong(PingPongArgs {
            count: n(1_000_000),
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement: Placement::of(Dispatcher::OneThread),
        }),
        Step::PingPong(PingPongArgs {
            count: n(200_000),
            mbox: ping_pong::Mailbox::Direct,
            limits: false,
            placement: Placement::of(Dispatcher::ActiveObj),
        }),
    ];
    plan.extend(pool_ping_pongs(n(200_000)));
    plan.push(Step::NamedPingPong(NamedPingPongArgs {
        count: n(300_000),
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan.push(Step::StateSwitch(StateSwitchArgs { count: n(300_000) }));
    plan.push(Step::Skynet(SkynetArgs {
        leaves: n(1_000_000),
        branching: 10,
        placement: Placement::of(Dispatcher::OneThread),
        teardown: Teardown::AtEnd,
    }));
    // The tree released as it answers, on the pool that can run it depth first.
    plan.push(Step::Skynet(SkynetArgs {
        leaves: n(1_000_000),
        branching: 10,
        placement: Placement::of(Dispatcher::WorkStealing),
        teardown: Teardown::Answered,
    }));
    plan.extend(thread_rings(n(1_000_000)));
    plan.extend(parallel_thread_rings(n(1_000_000)));
    plan.extend(floods(n(1_000_000), n(1_000_000)));
    let fan_out_messages = n(20_000) as u32;
    plan.extend(fan_outs(
        &[(100, fan_out_messages)],
        &[Dispatcher::ActiveGroup, Dispatcher::ThreadPool],
    ));
    for placement in sobjectizer_grids::pool_grid(2, &[4, 100]) {
        plan.push(Step::SelfSend(SelfSendArgs {
            workers: self_send::WORKERS,
            message_count: n(20_000),
            start_batch: self_send::START_BATCH,
            placement,
        }));
    }
    plan.extend(latency::quick_runs(tiny).into_iter().map(Step::Latency));
    // Skynet on thread_pool(2) with either fifo, at a tenth of the size.
    plan.extend(
        sobjectizer_grids::skynets(n(100_000), &[2])
            .into_iter()
            .skip(1),
    );
    plan.push(if tiny {
        timers_step(1_000, 20, 100)
    } else {
        timers_step(100_000, 200, 1000)
    });
    plan.extend(chain_steps(n(20_000), n(200_000)));
    plan.extend(async_steps(n(100_000), n(20_000)));
    plan.push(Step::RemotePingPong(remote_ping_pong::quick_args(tiny)));
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

/// Agents' futures and asks: `futures` spawned and delivered, `asks` on one and two threads
/// and on a pool of two.
fn async_steps(futures: u64, asks: u64) -> Vec<Step> {
    vec![
        Step::SpawnDeliver(SpawnDeliverArgs {
            count: futures,
            agents: 4,
            in_flight: 256,
            async_threads: 1,
        }),
        Step::AsyncAsk(AsyncAskArgs {
            count: asks,
            threads: vec![1, 2],
            layout: AskLayout::Dedicated,
            timeout_ms: 1000,
            allocs: false,
            untimed: false,
        }),
        Step::AsyncAsk(AsyncAskArgs {
            count: asks,
            threads: vec![2],
            layout: AskLayout::Pool,
            timeout_ms: 1000,
            allocs: false,
            untimed: false,
        }),
    ]
}

/// 1:N massive sends with idle workers, for each (workers, messages) on each dispatcher
/// (thread_pool with individual fifo and max_demands_at_once 4: the case where sobjectizer-performance-part3
/// saw it collapse).
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

/// `full`: every scenario at the sizes of its source.
pub fn full() -> Vec<Step> {
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
    plan.extend(sobjectizer_grids::self_send_grid(1.0, 2, None));
    // sobjectizer-performance-part3's dispatchers come with the grids below; work_stealing is
    // cohort's own.
    plan.extend(fan_outs(
        &[(100, 100_000), (10_000, 1_000)],
        &[Dispatcher::WorkStealing],
    ));
    plan.push(timers_step(1_000_000, 1000, 3000));
    plan.extend(chain_steps(200_000, 2_000_000));
    plan.extend(async_steps(1_000_000, 200_000));
    plan.push(Step::Locality(locality::locality_plan(false)));
    plan.extend(latency::full_runs().into_iter().map(Step::Latency));
    plan.extend(sobjectizer_grids::skynets(
        1_000_000,
        &sobjectizer_grids::SKYNET_POOL_SIZES,
    ));
    plan.extend(sobjectizer_grids::fan_out_grid(None, 1.0, 5));
    plan.push(Step::RemotePingPong(remote_ping_pong::full_args()));
    plan
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
