//! ThreadRing (theron-performance.txt, ThreadRing): 503 agents in a ring, each holding its
//! successor's mailbox; one token (a `u64` countdown) goes round the ring, each agent
//! forwarding it with one less, until it has made `hops` hops. The last hop stops the
//! environment. Measures raw 1:1 message throughput with short queues (one message in flight):
//! hops / s. Theron's run: 50,000,000 hops.
//!
//! The ring itself ([`run_ring`]) takes any number of tokens; ParallelThreadRing
//! ([`super::parallel_thread_ring`]) uses it with 503.

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use cohort::{Agent, Context, DefineError, Mbox};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Theron's ring size.
pub const RING_SIZE: u64 = 503;

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    /// From the first token sent to the last hop.
    pub elapsed: Duration,
    /// Hops counted by the agents (every token received).
    pub hops: u64,
}

#[derive(Default)]
struct Shared {
    started: OnceLock<Instant>,
    finished: Mutex<Option<Instant>>,
    /// Tokens still travelling; the agent that ends the last one stops the environment.
    tokens_left: AtomicU64,
    /// Tokens received, summed over the agents when they finish.
    hops_counted: AtomicU64,
}

struct Link {
    next: Option<Mbox>,
    /// Hop counts of the tokens that start at this agent.
    initial: Vec<u64>,
    received: u64,
    shared: Arc<Shared>,
}

impl Link {
    /// A token carrying `left` further hops after this one.
    fn on_token(&mut self, left: &u64, ctx: &mut Context<'_, Self>) {
        self.received += 1;
        if *left > 0 {
            if let Some(next) = &self.next {
                next.send(*left - 1);
            }
        } else if self.shared.tokens_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.shared.finished.lock().unwrap() = Some(Instant::now());
            ctx.stop_environment();
        }
    }
}

impl Agent for Link {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(Self::on_token)?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        if self.initial.is_empty() {
            return;
        }
        self.shared.started.get_or_init(Instant::now);
        if let Some(next) = &self.next {
            for hops in self.initial.drain(..) {
                // The first hop is this send.
                next.send(hops - 1);
            }
        }
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.shared
            .hops_counted
            .fetch_add(self.received, Ordering::Relaxed);
    }
}

/// Checks a ring's size and hop count.
pub fn validate(agents: u64, hops: u64) -> Result<(), String> {
    if agents < 2 {
        return Err(format!(
            "--agents must be at least 2 (a ring of {agents} has nothing to pass the token to)"
        ));
    }
    if agents > 10_000_000 {
        return Err(format!(
            "--agents ({agents}) is too large: at most 10,000,000"
        ));
    }
    if hops == 0 {
        return Err("--hops must be at least 1".into());
    }
    Ok(())
}

/// Runs one ThreadRing: one token making `hops` hops round a ring of `agents` agents.
pub fn run_once(agents: u64, hops: u64, placement: Placement) -> Result<Outcome, String> {
    validate(agents, hops)?;
    run_ring(agents, &[hops], placement)
}

/// Runs a ring of `agents` agents with one token per entry of `tokens`, token `k` starting at
/// agent `k % agents` and making `tokens[k]` hops. Every agent is in one cooperation bound
/// to `placement`. Checks that the agents received exactly the sum of `tokens`.
pub fn run_ring(agents: u64, tokens: &[u64], placement: Placement) -> Result<Outcome, String> {
    placement.validate()?;
    if agents < 2 {
        return Err(format!("a ring needs at least 2 agents (got {agents})"));
    }
    if tokens.is_empty() || tokens.contains(&0) {
        return Err("every token must make at least one hop".into());
    }
    let expected: u64 = tokens
        .iter()
        .try_fold(0u64, |a, &t| a.checked_add(t))
        .ok_or("the total hop count overflows")?;
    let shared = Arc::new(Shared {
        tokens_left: AtomicU64::new(tokens.len() as u64),
        ..Shared::default()
    });
    let mut initial: Vec<Vec<u64>> = vec![Vec::new(); agents as usize];
    for (k, &t) in tokens.iter().enumerate() {
        initial[k % agents as usize].push(t);
    }
    let shared2 = shared.clone();
    cohort::launch(move |env| {
        let mut coop = env.new_coop();
        coop.set_binder(placement.binder(env)?);
        coop.reserve(initial.len());
        let handles: Vec<_> = initial
            .into_iter()
            .map(|initial| {
                coop.add(Link {
                    next: None,
                    initial,
                    received: 0,
                    shared: shared2.clone(),
                })
            })
            .collect();
        for (i, h) in handles.iter().enumerate() {
            let next = handles[(i + 1) % handles.len()].mbox();
            coop.agent_mut(h).next = Some(next);
        }
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let started = *shared.started.get().ok_or("no token was ever sent")?;
    let finished = shared
        .finished
        .lock()
        .unwrap()
        .ok_or("the last token never arrived")?;
    let hops = shared.hops_counted.load(Ordering::Relaxed);
    if hops != expected {
        return Err(format!("expected {expected} hops, counted {hops}"));
    }
    Ok(Outcome {
        elapsed: finished.saturating_duration_since(started),
        hops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_hop() {
        for p in [
            Placement::of(Dispatcher::OneThread),
            Placement::of(Dispatcher::ThreadPool),
            Placement::of(Dispatcher::ThreadPool).fifo(super::super::FifoArg::Individual),
            Placement::of(Dispatcher::WorkStealing),
        ] {
            let o = crate::watchdog::within(20, move || run_once(RING_SIZE, 5_000, p)).unwrap();
            assert_eq!(o.hops, 5_000);
        }
        // Fewer hops than agents, and a ring of two.
        let p = Placement::of(Dispatcher::OneThread);
        assert_eq!(
            crate::watchdog::within(20, move || run_once(10, 3, p))
                .unwrap()
                .hops,
            3
        );
        assert_eq!(
            crate::watchdog::within(20, move || run_once(2, 1, p))
                .unwrap()
                .hops,
            1
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        let p = Placement::of(Dispatcher::OneThread);
        assert!(run_once(0, 10, p).unwrap_err().contains("--agents"));
        assert!(run_once(1, 10, p).unwrap_err().contains("--agents"));
        assert!(run_once(503, 0, p).unwrap_err().contains("--hops"));
        let mut bad = Placement::of(Dispatcher::ThreadPool);
        bad.threads = 0;
        assert!(run_once(503, 10, bad).unwrap_err().contains("--threads"));
    }
}
