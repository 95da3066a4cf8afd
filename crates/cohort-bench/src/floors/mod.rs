//! Floors: each scenario's work written by hand without any framework, as the fastest code
//! a careful engineer would write for that one job, so that every scenario's figure can be
//! read against what the machine allows (`floor` and `ratio_to_floor` in its records).
//!
//! One module per kind of floor: `one_thread` (a `VecDeque` of plain enums and a `match`),
//! `partitioned` (independent agents split over a pool's threads), `two_threads`
//! (ping-pong through single-producer single-consumer rings, busy-polled or parking),
//! `flood` (a plain thread flooding a consumer thread) and `skynet` (the tree summed by
//! hand); `spsc` is the ring they share, `start_line` where their threads wait, running, for
//! the clock to start. The floor a scenario's records are compared with is
//! the fastest one its placement allows: one thread where the agents share one, a thread
//! per agent where the dispatcher imposes it, and for a pool whichever of the two its
//! threads allow that suits the work (its agents on one thread when they hand work to each
//! other one message at a time, split over its threads when they are independent).

pub mod flood;
pub mod one_thread;
pub mod partitioned;
pub mod skynet;
pub mod spsc;
pub mod start_line;
pub mod two_threads;

use crate::machine::Machine;
use crate::report::Record;
use crate::rss;
use crate::scenarios::{self, Dispatcher, Placement};
use crate::suite::Step;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// A floor run's figures, named as the scenario's metrics.
pub type Figures = Vec<(&'static str, f64)>;

type Run = Box<dyn Fn() -> Result<Figures, String>>;

/// One floor of a suite step.
pub struct Floor {
    /// The scenario it is the floor of.
    pub scenario: &'static str,
    /// The floor in words (its records' variant, after `floor: `).
    pub label: String,
    /// The sizes it runs with.
    pub params: Value,
    /// The floor the step's records are compared with (exactly one per step).
    pub primary: bool,
    run: Run,
}

impl Floor {
    fn new(
        scenario: &'static str,
        label: impl Into<String>,
        params: Value,
        primary: bool,
        run: impl Fn() -> Result<Figures, String> + 'static,
    ) -> Self {
        Self {
            scenario,
            label: label.into(),
            params,
            primary,
            run: Box::new(run),
        }
    }

    /// Runs the floor once.
    pub fn run(&self) -> Result<Figures, String> {
        (self.run)()
    }

    /// The floor's identity: two steps with the same key share one run.
    pub fn key(&self) -> String {
        format!("{}|{}|{}", self.scenario, self.label, self.params)
    }
}

/// The scenario a step runs (the subcommand's name).
pub fn scenario_of(step: &Step) -> &'static str {
    match step {
        Step::FanOut(_) => "fan-out",
        Step::PingPong(_) => "ping-pong",
        Step::Skynet(_) => "skynet",
        Step::ThreadRing(_) => "thread-ring",
        Step::ParallelThreadRing(_) => "parallel-thread-ring",
        Step::CountingActor(_) => "counting-actor",
        Step::ProducerConsumer(_) => "producer-consumer",
        Step::SelfSend(_) => "self-send",
        Step::NamedPingPong(_) => "named-ping-pong",
        Step::StateSwitch(_) => "state-switch",
        Step::Timers(_) => "timers",
        Step::RequestReply(_) => "request-reply",
        Step::ChainThroughput(_) => "chain-throughput",
        Step::SpawnDeliver(_) => "spawn-deliver",
        Step::AsyncAsk(_) => "async-ask",
        Step::IdleCpu(_) => "idle-cpu",
        Step::Locality(_) => "locality",
        Step::Latency(_) => "latency",
        Step::RemotePingPong(_) => "remote-ping-pong",
    }
}

/// Threads a placement's agents may use: 1 where they share one, `None` for a thread per
/// agent, the pool's size for a pool.
fn threads_of(p: &Placement) -> Option<usize> {
    match p.dispatcher {
        Dispatcher::OneThread
        | Dispatcher::ActiveGroup
        | Dispatcher::PrioStrict
        | Dispatcher::PrioQuoted => Some(1),
        Dispatcher::ActiveObj => None,
        Dispatcher::ThreadPool | Dispatcher::WorkStealing | Dispatcher::AdvThreadPool => {
            Some(p.threads)
        }
    }
}

fn per_s(n: f64, d: Duration) -> f64 {
    n / d.as_secs_f64()
}

const ONE_THREAD: &str = "one thread, a VecDeque of plain enums and a match";
const BUSY: &str = "two threads, busy-polled SPSC rings";
const PARK: &str = "two threads, SPSC rings, spin then park";

/// Ping-pong's floors, with `metrics` naming the scenario's rates, each with the messages
/// per round trip it counts; the primary one is the two-thread busy-polled floor when the
/// agents have a thread each, else one thread.
fn ping_pongs(
    scenario: &'static str,
    count: u64,
    per_agent_thread: bool,
    metrics: &'static [(&'static str, f64)],
) -> Vec<Floor> {
    let figures = move |d: Duration| -> Figures {
        metrics
            .iter()
            .map(|&(m, per_trip)| (m, per_s(per_trip * count as f64, d)))
            .collect()
    };
    let p = json!({ "count": count });
    let mut out = vec![Floor::new(
        scenario,
        ONE_THREAD,
        p.clone(),
        !per_agent_thread,
        move || one_thread::ping_pong(count).map(figures),
    )];
    for (label, wait, primary) in [
        (BUSY, two_threads::Wait::Busy, per_agent_thread),
        (PARK, two_threads::Wait::SpinThenPark, false),
    ] {
        out.push(Floor::new(scenario, label, p.clone(), primary, move || {
            two_threads::ping_pong(count, wait).map(figures)
        }));
    }
    out
}

/// Every floor of `step`, or why it has none.
pub fn floors_of(step: &Step) -> Result<Vec<Floor>, &'static str> {
    let scenario = scenario_of(step);
    Ok(match step {
        Step::PingPong(a) => ping_pongs(
            scenario,
            a.count,
            threads_of(&a.placement).is_none(),
            &[("messages_per_s", 2.0), ("round_trips_per_s", 1.0)],
        ),
        Step::NamedPingPong(a) => ping_pongs(
            scenario,
            a.count,
            threads_of(&a.placement).is_none(),
            &[
                ("direct_messages_per_s", 2.0),
                ("named_messages_per_s", 2.0),
            ],
        ),
        Step::RequestReply(a) => ping_pongs(scenario, a.count, true, &[("round_trips_per_s", 1.0)])
            .into_iter()
            .skip(1)
            .collect(),
        Step::StateSwitch(a) => {
            let count = a.count;
            vec![Floor::new(
                scenario,
                "one thread, a VecDeque and a match on the state",
                json!({ "count": count }),
                true,
                move || {
                    let o = one_thread::state_switch(count)?;
                    let ns = |d: Duration| d.as_secs_f64() * 1e9 / count as f64;
                    Ok(vec![
                        ("plain_ns_per_msg", ns(o.plain)),
                        ("switch_ns_per_msg", ns(o.switch)),
                        ("nested_hooks_ns_per_msg", ns(o.nested)),
                    ])
                },
            )]
        }
        Step::Skynet(a) => {
            let (leaves, branching) = (a.leaves, a.branching);
            let agents = scenarios::skynet::validate(leaves, branching)
                .map_err(|_| "skynet: invalid sizes")? as f64;
            let p = json!({ "leaves": leaves, "branching": branching });
            let figures = move |o: skynet::Skynet, peak: Option<u64>| -> Figures {
                let mut f = vec![
                    ("elapsed_s", o.with_teardown.as_secs_f64()),
                    ("elapsed_to_result_s", o.to_result.as_secs_f64()),
                    ("agents_per_s", per_s(agents, o.with_teardown)),
                ];
                f.extend(peak.map(|b| ("peak_rss_bytes", b as f64)));
                f
            };
            // Released as answered on `work_stealing`, the tree runs depth first (its LIFO
            // slot and deque): its floor is the same shape of memory, depth first.
            let depth_first = a.teardown == scenarios::skynet::Teardown::Answered
                && a.placement.dispatcher == Dispatcher::WorkStealing;
            vec![
                Floor::new(
                    scenario,
                    "one thread, a heap tree alive in full, boxed answers",
                    p.clone(),
                    !depth_first,
                    move || {
                        let reset = rss::reset_peak();
                        let o = skynet::allocated(leaves, branching)?;
                        Ok(figures(o, rss::peak_bytes().filter(|_| reset)))
                    },
                ),
                Floor::new(
                    scenario,
                    "one thread, heap nodes released as answered, depth first",
                    p.clone(),
                    depth_first,
                    move || {
                        let reset = rss::reset_peak();
                        let o = skynet::depth_first(leaves, branching)?;
                        Ok(figures(o, rss::peak_bytes().filter(|_| reset)))
                    },
                ),
                Floor::new(
                    scenario,
                    "one thread, plain recursion",
                    p,
                    false,
                    move || skynet::plain(leaves, branching).map(|o| figures(o, None)),
                ),
            ]
        }
        Step::ThreadRing(a) => {
            let (agents, hops) = (a.agents, a.hops);
            vec![ring_floor(scenario, agents, vec![hops])]
        }
        Step::ParallelThreadRing(a) => {
            let split = scenarios::parallel_thread_ring::validate(a.agents, a.tokens, a.hops)
                .map_err(|_| "parallel-thread-ring: invalid sizes")?;
            vec![ring_floor(scenario, a.agents, split)]
        }
        Step::CountingActor(a) => {
            let count = a.count;
            let p = json!({ "count": count });
            let queues = [
                (
                    "plain thread -> consumer thread, crossbeam channel",
                    flood::Queue::Channel,
                ),
                (
                    "plain thread -> consumer thread, busy-polled SPSC ring",
                    flood::Queue::Ring(flood::RING_SLOTS),
                ),
            ];
            queues
                .into_iter()
                .map(|(label, q)| {
                    let primary = q == flood::Queue::Channel;
                    Floor::new(scenario, label, p.clone(), primary, move || {
                        let o = flood::flood(count, q)?;
                        Ok(vec![
                            ("messages_per_s", per_s(count as f64, o.elapsed)),
                            ("elapsed_s", o.elapsed.as_secs_f64()),
                            ("send_messages_per_s", per_s(count as f64, o.send)),
                        ])
                    })
                })
                .collect()
        }
        Step::ProducerConsumer(a) => {
            let shares = scenarios::producer_consumer::shares(a.count, a.producers);
            let (count, burst) = (a.count, a.burst);
            let p = json!({ "count": count, "producers": a.producers, "burst": burst });
            let rates = move |d: Duration| -> Figures {
                vec![
                    ("messages_per_s", per_s(count as f64, d)),
                    ("elapsed_s", d.as_secs_f64()),
                ]
            };
            let mut out = vec![Floor::new(
                scenario,
                ONE_THREAD,
                p.clone(),
                true,
                move || one_thread::producer_consumer(&shares, burst).map(rates),
            )];
            if threads_of(&a.placement) != Some(1) {
                out.push(Floor::new(
                    scenario,
                    "plain thread -> consumer thread, busy-polled SPSC ring",
                    p,
                    false,
                    move || {
                        flood::flood(count, flood::Queue::Ring(flood::RING_SLOTS))
                            .map(|o| rates(o.elapsed))
                    },
                ));
            }
            out
        }
        Step::SelfSend(a) => {
            let placement = scenarios::self_send::placement_of(a.placement);
            let threads = threads_of(&placement).unwrap_or(a.workers as usize);
            let (workers, count, batch) = (a.workers, a.message_count, a.start_batch);
            vec![Floor::new(
                scenario,
                format!("{threads} thread(s), a VecDeque each, the workers split among them"),
                json!({ "workers": workers, "message_count": count, "start_batch": batch, "threads": threads }),
                true,
                move || {
                    let d = partitioned::self_send(workers, count, batch, threads)?;
                    Ok(vec![
                        ("elapsed_s", d.as_secs_f64()),
                        ("messages_per_s", per_s((workers * count) as f64, d)),
                    ])
                },
            )]
        }
        Step::FanOut(a) => {
            if a.work != scenarios::fan_out::Work::Idle {
                return Err(
                    "fan-out with sleeping or computing workers: the sleep or the \
                            computation is the work, the same by hand",
                );
            }
            let threads = threads_of(&a.placement)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let (workers, messages) = (a.workers, a.messages);
            vec![Floor::new(
                scenario,
                format!("{threads} thread(s), a VecDeque per subscriber"),
                json!({ "workers": workers, "messages": messages, "threads": threads }),
                true,
                move || {
                    let elapsed = partitioned::fan_out(workers, messages, threads)?;
                    let deliveries = f64::from(workers) * f64::from(messages);
                    // No `send_elapsed_s`: filling a queue per subscriber bounds nothing of
                    // a 1:N send, which appends once for all of them.
                    Ok(vec![
                        ("deliveries_per_s", per_s(deliveries, elapsed)),
                        ("elapsed_s", elapsed.as_secs_f64()),
                    ])
                },
            )]
        }
        Step::ChainThroughput(a) => {
            let (count, capacity) = (a.count, a.capacity);
            vec![Floor::new(
                scenario,
                "three threads, two crossbeam channels",
                json!({ "count": count, "capacity": capacity }),
                true,
                move || {
                    let d = flood::pipeline(count, capacity)?;
                    Ok(vec![
                        ("messages_per_s", per_s(count as f64, d)),
                        ("elapsed_s", d.as_secs_f64()),
                    ])
                },
            )]
        }
        Step::Timers(_) => {
            return Err(
                "timers: the timer queue is the work measured; its floor would be \
                        another timer wheel",
            );
        }
        Step::IdleCpu(_) => return Err("idle-cpu: an idle process's floor is 0 % CPU"),
        Step::SpawnDeliver(_) => {
            return Err(
                "spawn-deliver: the tokio runtime and its hand-off back to the agent are \
                        the work measured; not floored yet",
            );
        }
        Step::AsyncAsk(_) => {
            return Err(
                "async-ask: an ask is a request, a timer and a reply event; not floored yet",
            );
        }
        Step::Locality(_) => {
            return Err(
                "locality: compares assignments of agents to threads with each \
                        other, the best of them being the floor of the rest",
            );
        }
        Step::Latency(_) => {
            return Err(
                "latency: a pipeline at a fixed message rate, measuring latency \
                        under load rather than the fastest way through",
            );
        }
        Step::RemotePingPong(_) => {
            return Err(
                "remote-ping-pong: its latency run carries its own floor, the \
                        `raw TCP floor` variant",
            );
        }
    })
}

fn ring_floor(scenario: &'static str, agents: u64, tokens: Vec<u64>) -> Floor {
    let hops: u64 = tokens.iter().sum();
    Floor::new(
        scenario,
        ONE_THREAD,
        json!({ "agents": agents, "tokens": tokens.len(), "hops": hops }),
        true,
        move || {
            let d = one_thread::ring(agents, &tokens)?;
            Ok(vec![
                ("hops_per_s", per_s(hops as f64, d)),
                ("elapsed_s", d.as_secs_f64()),
            ])
        },
    )
}

/// True for metrics where more is better (rates); time, bytes and time per message are
/// better smaller.
fn higher_is_better(metric: &str) -> bool {
    metric.ends_with("_per_s")
}

/// The share of the floor's performance a value reaches: 1 at the floor, 0.5 at half its
/// rate or twice its time (or memory).
pub fn ratio_to_floor(metric: &str, value: f64, floor: f64) -> f64 {
    if higher_is_better(metric) {
        value / floor
    } else {
        floor / value
    }
}

/// Runs of a floor compared with a step: noise on this kind of host (a thread sharing its
/// core for a while, a slow phase of the VM) only ever slows a floor down, so the best of a
/// few is the machine's figure, where one run can read below the framework it bounds.
pub const FLOOR_TRIES: usize = 3;

/// The best figure per metric of `tries` runs of a floor (the highest rate, the lowest time
/// or memory); the first failure ends it.
pub fn best_of(tries: usize, run: impl Fn() -> Result<Figures, String>) -> Result<Figures, String> {
    let mut best = run()?;
    for _ in 1..tries {
        for (metric, value) in run()? {
            if let Some((m, b)) = best.iter_mut().find(|(m, _)| *m == metric)
                && ratio_to_floor(m, value, *b) > 1.0
            {
                *b = value;
            }
        }
    }
    Ok(best)
}

/// Floor runs already made in one suite run, by [`Floor::key`].
pub type Cache = HashMap<String, Result<Figures, String>>;

/// Sets `floor` and `ratio_to_floor` on the records of `step` whose metric its primary
/// floor measured (running the floor unless `cache` has it); a floor that fails its check
/// comes back as a failed record.
pub fn attach(
    step: &Step,
    records: &mut [Record],
    cache: &mut Cache,
    machine: &Machine,
) -> Option<Record> {
    let floor = floors_of(step).ok()?.into_iter().find(|f| f.primary)?;
    let figures = cache
        .entry(floor.key())
        .or_insert_with(|| best_of(FLOOR_TRIES, || floor.run()));
    let figures = match figures {
        Ok(f) => f,
        Err(e) => {
            let p = crate::commands::params(floor.params.clone());
            let variant = format!("floor: {}", floor.label);
            return Some(Record::failed(
                floor.scenario,
                &variant,
                &p,
                e.clone(),
                machine,
            ));
        }
    };
    for r in records.iter_mut().filter(|r| r.ok) {
        if let Some(&(_, f)) = figures.iter().find(|(m, _)| *m == r.metric)
            && f > 0.0
            && r.value > 0.0
        {
            r.floor = Some(f);
            r.ratio_to_floor = Some(ratio_to_floor(&r.metric, r.value, f));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_a_share_of_the_floor() {
        assert_eq!(ratio_to_floor("messages_per_s", 50.0, 100.0), 0.5);
        assert_eq!(ratio_to_floor("elapsed_s", 2.0, 1.0), 0.5);
        assert_eq!(ratio_to_floor("peak_rss_bytes", 4.0, 1.0), 0.25);
    }

    #[test]
    fn the_best_of_a_floor_s_runs_is_its_figure_in_each_direction() {
        let runs = std::cell::Cell::new(0);
        let best = best_of(3, || {
            runs.set(runs.get() + 1);
            let k = [2.0, 3.0, 1.0][runs.get() - 1];
            Ok(vec![("messages_per_s", 10.0 * k), ("elapsed_s", k)])
        })
        .unwrap();
        assert_eq!(runs.get(), 3);
        assert_eq!(best, vec![("messages_per_s", 30.0), ("elapsed_s", 1.0)]);
        let failing = best_of(3, || Err::<Figures, _>("checked wrong".to_string()));
        assert_eq!(failing, Err("checked wrong".to_string()));
    }

    #[test]
    fn every_quick_step_has_one_primary_floor_or_a_reason() {
        for step in crate::plans::quick(crate::plans::QuickSize::Reduced) {
            match floors_of(&step) {
                Ok(fs) => assert_eq!(
                    fs.iter().filter(|f| f.primary).count(),
                    1,
                    "{}",
                    scenario_of(&step)
                ),
                Err(why) => assert!(why.starts_with(scenario_of(&step)), "{why}"),
            }
        }
    }
}
