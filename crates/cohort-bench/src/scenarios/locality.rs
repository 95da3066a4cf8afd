//! Executor cache locality (executors-cache-locality.txt): many agents, few workers; each
//! message makes its agent read and write its private state at random places. A plain thread
//! sends `messages` messages round robin over the agents (as the article's main thread submits
//! them); an agent handles them one at a time. Three assignments of agents to 2 workers:
//! `thread_pool` (individual fifo: a queue goes to whichever worker is free), `work_stealing`
//! (soft affinity: a queue stays on its worker while it has work, stolen only by an idle one)
//! and `dedicated` (a fixed thread per agent: `active_group` with one group per worker, agent
//! `i` in group `i % workers`). The article's grid: 24, 240 and 8,000 agents; 20 and 100 memory
//! accesses per message; state of 64 B to 3.2 MB. Reported: `elapsed_ms` (first send to last
//! message handled, the article's measure) and `messages_per_s`.
//!
//! Each agent's state is written in full when the agent is created, so page faults happen
//! before the clock starts.

use cohort::dispatcher::{Fifo, PoolBindParams};
use cohort::{Agent, Context, DefineError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The article's agent counts (it ran 6 and 8 workers; here 2).
pub const AGENTS: [usize; 3] = [24, 240, 8_000];
/// The article's memory accesses per message.
pub const ACCESSES: [usize; 2] = [20, 100];
/// The article's state sizes, bytes.
pub const STATE_BYTES: [usize; 7] = [64, 256, 2_000, 4_000, 32_000, 320_000, 3_200_000];
/// Messages per cell by default: fewer than the article's "several million", so the whole
/// grid fits in minutes on a small machine, yet enough for a cell to be timed steadily.
pub const MESSAGES: usize = 1_000_000;
/// Cells whose agents' states add up to more than this are skipped (8,000 x 3.2 MB would be
/// 25.6 GB).
pub const MAX_TOTAL_STATE: usize = 1 << 30;

/// How agents are assigned to worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Assignment {
    /// `thread_pool`, individual fifo.
    ThreadPool,
    /// `work_stealing`, individual fifo.
    WorkStealing,
    /// A fixed thread per agent (`active_group`, one group per worker).
    Dedicated,
}

impl Assignment {
    pub const ALL: [Assignment; 3] = [
        Assignment::WorkStealing,
        Assignment::ThreadPool,
        Assignment::Dedicated,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Assignment::ThreadPool => "thread_pool",
            Assignment::WorkStealing => "work_stealing",
            Assignment::Dedicated => "dedicated",
        }
    }
}

/// One cell of the grid.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    pub workers: usize,
    pub agents: usize,
    pub accesses: usize,
    pub state_bytes: usize,
    pub messages: usize,
    pub assignment: Assignment,
    /// `work_stealing`'s `home_queue_interval` (turns between looks at the home run queue).
    pub home_queue_interval: usize,
    /// `work_stealing`'s `home_queue_wait`.
    pub home_queue_wait: Duration,
}

impl Cell {
    /// Checks the cell's parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.workers == 0 || self.agents == 0 || self.messages == 0 {
            return Err("--workers, --agents and --messages must be at least 1".into());
        }
        if self.state_bytes < 4 {
            return Err(format!(
                "--state-bytes must be at least 4 (got {})",
                self.state_bytes
            ));
        }
        let total = self.agents.saturating_mul(self.state_bytes);
        if total > MAX_TOTAL_STATE {
            return Err(format!(
                "{} agents x {} B of state is {} MiB, over the {} MiB budget: fewer agents or \
                 less state",
                self.agents,
                self.state_bytes,
                total >> 20,
                MAX_TOTAL_STATE >> 20
            ));
        }
        Ok(())
    }

    /// Whether the cell fits the memory budget.
    pub fn fits(&self) -> bool {
        self.agents.saturating_mul(self.state_bytes) <= MAX_TOTAL_STATE
    }
}

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    pub elapsed: Duration,
    /// Messages handled (checked against the messages sent).
    pub handled: usize,
    /// A checksum of the states, so the work cannot be optimised away.
    pub checksum: u64,
}

struct Work;

#[derive(Default)]
struct Shared {
    starting: AtomicUsize,
    working: AtomicUsize,
    handled: AtomicUsize,
    checksum: AtomicUsize,
    finished: Mutex<Option<Instant>>,
}

/// An agent with private state, touched at `accesses` random places per message.
struct Actor {
    state: Vec<u32>,
    rng: u64,
    accesses: usize,
    expected: usize,
    seen: usize,
    shared: Arc<Shared>,
    started: Sender<()>,
    done: Sender<()>,
}

impl Actor {
    #[inline]
    fn next(&mut self) -> u64 {
        // xorshift64
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    fn on_work(&mut self, _: &Work, _: &mut Context<'_, Self>) {
        let n = self.state.len() as u64;
        for _ in 0..self.accesses {
            let i = (self.next() % n) as usize;
            self.state[i] = self.state[i].wrapping_add(1);
        }
        self.seen += 1;
        if self.seen == self.expected {
            self.shared.handled.fetch_add(self.seen, Ordering::Relaxed);
            let sum = self.state.iter().fold(0u32, |a, &v| a.wrapping_add(v));
            self.shared
                .checksum
                .fetch_add(sum as usize, Ordering::Relaxed);
            if self.shared.working.fetch_sub(1, Ordering::AcqRel) == 1 {
                *self.shared.finished.lock().unwrap() = Some(Instant::now());
                let _ = self.done.send(());
            }
        }
    }
}

impl Agent for Actor {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(Self::on_work)?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        if self.shared.starting.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.started.send(());
        }
    }
}

/// Runs one cell once.
pub fn run_once(cell: Cell) -> Result<Outcome, String> {
    cell.validate()?;
    let env = cohort::Environment::builder()
        .start()
        .map_err(|e| e.to_string())?;
    let e = |e: cohort::DispatcherError| e.to_string();
    let individual = PoolBindParams::new().fifo(Fifo::Individual);
    let binders: Vec<cohort::Binder> = match cell.assignment {
        Assignment::ThreadPool => vec![
            cohort::ThreadPoolBuilder::new()
                .name("loc-tp")
                .threads(cell.workers)
                .build(&env)
                .map_err(e)?
                .pool_binder(individual)
                .map_err(e)?,
        ],
        Assignment::WorkStealing => vec![
            cohort::WorkStealingBuilder::new()
                .name("loc-ws")
                .threads(cell.workers)
                .home_queue_interval(cell.home_queue_interval)
                .home_queue_wait(cell.home_queue_wait)
                .build(&env)
                .map_err(e)?
                .pool_binder(individual)
                .map_err(e)?,
        ],
        Assignment::Dedicated => {
            let groups = cohort::ActiveGroupBuilder::new()
                .name("loc-dedicated")
                .build(&env)
                .map_err(e)?;
            (0..cell.workers)
                .map(|w| groups.group_binder(&format!("w{w}")))
                .collect()
        }
    };
    let shared = Arc::new(Shared {
        starting: AtomicUsize::new(cell.agents),
        working: AtomicUsize::new(cell.agents),
        ..Shared::default()
    });
    let (started_tx, started_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let words = (cell.state_bytes / 4).max(1);
    let mut coop = env.new_coop();
    coop.reserve(cell.agents);
    let mboxes: Vec<_> = (0..cell.agents)
        .map(|i| {
            let expected =
                cell.messages / cell.agents + usize::from(i < cell.messages % cell.agents);
            coop.add_with_binder(
                Actor {
                    // Written in full: the pages are faulted in now, not while measuring.
                    state: vec![i as u32; words],
                    rng: 0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1),
                    accesses: cell.accesses,
                    expected,
                    seen: 0,
                    shared: shared.clone(),
                    started: started_tx.clone(),
                    done: done_tx.clone(),
                },
                binders[i % binders.len()].clone(),
            )
            .mbox()
        })
        .collect();
    // Agents that get no message (more agents than messages) are done at once.
    let idle = cell.agents.saturating_sub(cell.messages);
    if idle > 0 {
        shared.working.fetch_sub(idle, Ordering::AcqRel);
    }
    env.register_coop(coop).map_err(|e| e.to_string())?;
    started_rx
        .recv_timeout(Duration::from_secs(120))
        .map_err(|_| "the agents did not start within 120 s".to_string())?;
    let t0 = Instant::now();
    for k in 0..cell.messages {
        mboxes[k % cell.agents].send(Work);
    }
    done_rx
        .recv_timeout(Duration::from_secs(600))
        .map_err(|_| "the messages were not handled within 600 s".to_string())?;
    let finished = shared
        .finished
        .lock()
        .unwrap()
        .ok_or("no finish time recorded")?;
    env.stop_and_wait();
    let handled = shared.handled.load(Ordering::Relaxed);
    if handled != cell.messages {
        return Err(format!(
            "{handled} messages handled, {} sent",
            cell.messages
        ));
    }
    Ok(Outcome {
        elapsed: finished - t0,
        handled,
        checksum: shared.checksum.load(Ordering::Relaxed) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_assignment_handles_every_message() {
        for assignment in Assignment::ALL {
            let o = run_once(Cell {
                workers: 2,
                agents: 24,
                accesses: 20,
                state_bytes: 256,
                messages: 2_000,
                assignment,
                home_queue_interval: cohort::defaults::HOME_QUEUE_INTERVAL,
                home_queue_wait: cohort::defaults::HOME_QUEUE_WAIT,
            })
            .unwrap();
            assert_eq!(o.handled, 2_000, "{assignment:?}");
        }
    }

    #[test]
    fn more_agents_than_messages_and_bad_cells() {
        let mut cell = Cell {
            workers: 2,
            agents: 50,
            accesses: 1,
            state_bytes: 64,
            messages: 10,
            assignment: Assignment::WorkStealing,
            home_queue_interval: 1,
            home_queue_wait: Duration::ZERO,
        };
        assert_eq!(run_once(cell).unwrap().handled, 10);
        cell.state_bytes = 3_200_000;
        cell.agents = 8_000;
        assert!(!cell.fits());
        assert!(run_once(cell).unwrap_err().contains("budget"));
        cell.agents = 0;
        assert!(cell.validate().is_err());
    }
}
