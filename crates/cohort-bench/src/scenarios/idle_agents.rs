//! Idle agents: `agents` registered agents in `coops` cooperations, started and then left
//! idle, as the memory a large system of mostly quiet agents pays: the allocator's live
//! bytes (every thread's, by block size) and the growth of the process's RSS, per agent.
//!
//! The agent is zero-sized, so what is measured is what the runtime adds to any agent: its
//! cell, its share of its cooperation and of its queue, and, when it subscribes, its
//! subscription to one message type. With a burst, each started agent is first sent that many
//! messages back to back from a plain thread, and measured once it has handled them and its
//! workers have parked: what an agent keeps of its traffic once it is quiet again.

use super::Placement;
use crate::alloc::{self, Live};
use crate::rss;
use cohort::{Agent, Context, DefineError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Agents whose `start` has run, in the current measurement.
static STARTED: AtomicU64 = AtomicU64::new(0);
/// Messages handled, in the current measurement.
static HANDLED: AtomicU64 = AtomicU64::new(0);

/// A message the subscribed agent handles (sent only in a burst).
struct Poke;

/// An idle agent subscribed to [`Poke`].
pub struct Subscribed;
/// An idle agent without any subscription.
pub struct Bare;

impl Agent for Subscribed {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_: &mut Self, _: &Poke, _: &mut Context<'_, Self>| {
            HANDLED.fetch_add(1, Ordering::Relaxed);
        })?;
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        STARTED.fetch_add(1, Ordering::Relaxed);
    }
}

impl Agent for Bare {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        STARTED.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one measurement registers.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub agents: u64,
    pub coops: u64,
    /// Each agent subscribes to one message type.
    pub subscribed: bool,
    /// Messages each (subscribed) agent is sent, back to back, before the measurement.
    pub burst: u32,
    pub placement: Placement,
}

/// What one measurement found.
pub struct Outcome {
    /// What stayed allocated from the first registration until every agent had started.
    pub live: Live,
    /// RSS growth over the same span, where the OS tells it.
    pub rss_delta: Option<i64>,
    /// From the first registration until every agent had started.
    pub elapsed: Duration,
}

/// How long the heap must stay without shrinking after the last message of a burst was
/// handled before the agents are measured: long past any worker's spin before it parks, and
/// its give-back of idle queues' memory.
const QUIET: Duration = Duration::from_millis(100);

/// How long the agents may take to start before the measurement fails.
const START_LIMIT: Duration = Duration::from_secs(300);

/// A benchmark's wait, not a test's: polls `count` until it reaches `want`, or fails once
/// `START_LIMIT` has passed since `started`.
fn wait_for(count: &AtomicU64, want: u64, started: Instant, what: &str) -> Result<(), String> {
    while count.load(Ordering::Relaxed) < want {
        if started.elapsed() > START_LIMIT {
            return Err(format!(
                "only {} of {want} {what} within {START_LIMIT:?}",
                count.load(Ordering::Relaxed)
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Checks the sizes.
pub fn validate(agents: u64, coops: u64) -> Result<(), String> {
    validate_sizes(agents, coops)
}

/// Checks a setup: its sizes, and a burst only to agents that handle it.
pub fn validate_setup(setup: &Setup) -> Result<(), String> {
    validate_sizes(setup.agents, setup.coops)?;
    if setup.burst > 0 && !setup.subscribed {
        return Err("a burst goes to subscribed agents only".into());
    }
    Ok(())
}

fn validate_sizes(agents: u64, coops: u64) -> Result<(), String> {
    if coops == 0 || agents < coops {
        return Err(format!(
            "--agents ({agents}) must be at least --coops ({coops}), which must be at least 1"
        ));
    }
    if agents > 20_000_000 {
        return Err(format!(
            "--agents {agents}: at most 20,000,000 fit in memory"
        ));
    }
    Ok(())
}

/// Registers the agents of `setup`, waits until all have started, measures, then stops.
pub fn run_once(setup: Setup) -> Result<Outcome, String> {
    validate_setup(&setup)?;
    setup.placement.validate()?;
    let env = cohort::Environment::builder()
        .start()
        .map_err(|e| e.to_string())?;
    let binder = setup.placement.binder(&env)?;
    // Reserved before the measured span, so that it counts no byte of the list.
    let mut mboxes = Vec::with_capacity(if setup.burst > 0 {
        setup.agents as usize
    } else {
        0
    });
    let rss_before = rss::current_bytes();
    let (registered, live) = alloc::process_live_of(|| -> Result<Duration, String> {
        // Reset under the measurement's lock: a test measuring alongside waits for it.
        STARTED.store(0, Ordering::Relaxed);
        HANDLED.store(0, Ordering::Relaxed);
        let started = Instant::now();
        for c in 0..setup.coops {
            let n = setup.agents / setup.coops + u64::from(c < setup.agents % setup.coops);
            let mut coop = env.new_coop();
            coop.reserve(n as usize).set_binder(binder.clone());
            for _ in 0..n {
                if setup.subscribed {
                    let agent = coop.add(Subscribed);
                    if setup.burst > 0 {
                        mboxes.push(agent.mbox());
                    }
                } else {
                    coop.add(Bare);
                }
            }
            env.register_coop(coop).map_err(|e| e.to_string())?;
        }
        wait_for(&STARTED, setup.agents, started, "agents started")?;
        let registered = started.elapsed();
        for m in &mboxes {
            for _ in 0..setup.burst {
                m.send(Poke);
            }
        }
        let sent = mboxes.len() as u64 * u64::from(setup.burst);
        wait_for(&HANDLED, sent, started, "messages handled")?;
        if sent > 0 {
            // Quiet again: the heap has stopped shrinking for `QUIET` (the pool workers give
            // back what their queues kept of the burst once they have run out of work).
            let (mut low, mut since) = (alloc::process_net_bytes_now(), Instant::now());
            while since.elapsed() < QUIET && started.elapsed() < START_LIMIT {
                std::thread::sleep(Duration::from_millis(10));
                let now = alloc::process_net_bytes_now();
                if now < low {
                    (low, since) = (now, Instant::now());
                }
            }
        }
        Ok(registered)
    });
    let rss_after = rss::current_bytes();
    env.stop_and_wait();
    Ok(Outcome {
        elapsed: registered?,
        live,
        rss_delta: rss_before.zip(rss_after).map(|(b, a)| a as i64 - b as i64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::Dispatcher;

    #[test]
    fn every_agent_starts_and_holds_memory() {
        let o = crate::watchdog::within(60, || {
            run_once(Setup {
                agents: 1_000,
                coops: 100,
                subscribed: true,
                burst: 0,
                placement: Placement::of(Dispatcher::OneThread),
            })
        })
        .unwrap();
        // The counts are the process's, and the other tests running alongside free what
        // they like, so the net bytes may even be negative here: only the number of
        // allocations, which nothing else lowers, makes a claim (each agent's cell is one).
        assert!(o.live.allocations >= 1_000, "{}", o.live.allocations);
        assert!(o.elapsed > Duration::ZERO);
        assert!(validate(10, 0).is_err() && validate(5, 10).is_err());
    }

    /// With a burst, every agent handles every message before the measurement (the run
    /// waits for the count), on a pool where each cooperation has a queue; a burst to
    /// agents that do not subscribe is refused before anything starts.
    #[test]
    fn a_burst_is_handled_before_the_measurement() {
        let setup = Setup {
            agents: 1_000,
            coops: 100,
            subscribed: true,
            burst: 3,
            placement: Placement::of(Dispatcher::ThreadPool),
        };
        // `Ok` only once all 3,000 messages were handled.
        let o = crate::watchdog::within(60, move || run_once(setup)).unwrap();
        assert!(o.live.allocations >= 1_000, "{}", o.live.allocations);
        let bare = Setup {
            subscribed: false,
            ..setup
        };
        let e = run_once(bare).err().unwrap();
        assert!(e.contains("subscribed"), "{e}");
    }
}
