//! Skynet (sobjectizer-performance-part3.txt, "Skynet: performance of managing agents"): an
//! agent creates `branching` children in a child cooperation, each creates `branching` more,
//! down to `leaves` leaf agents; each leaf sends its ordinal up, each level sums, the root
//! receives 0 + 1 + ... + (leaves - 1) (499999500000 for one million). Measured: time to the
//! result, and time until every agent is destroyed (the environment has stopped).

use super::{Dispatcher, Placement};
use cohort::{Agent, Context, DefineError, Mbox};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one run measured.
pub struct Outcome {
    pub to_result: Duration,
    pub with_teardown: Duration,
    pub sum: u64,
    pub agents: u64,
}

/// Where a node's children are bound: the default dispatcher (zero-sized, so the agent stays
/// small for the million-agent run), or an explicit binder passed down the tree, as the article's
/// thread-pool variant passes its dispatcher.
trait ChildBinding: Clone + Send + 'static {
    fn apply(&self, coop: &mut cohort::Coop);
}

#[derive(Clone)]
struct DefaultDispatcher;
impl ChildBinding for DefaultDispatcher {
    fn apply(&self, _: &mut cohort::Coop) {}
}

impl ChildBinding for cohort::Binder {
    fn apply(&self, coop: &mut cohort::Coop) {
        coop.set_binder(self.clone());
    }
}

struct Node<P: ChildBinding> {
    placement: P,
    parent: Mbox,
    num: u64,
    size: u64,
    branching: u64,
    sum: u64,
    received: u64,
}

impl<P: ChildBinding> Node<P> {
    fn on_sum(&mut self, v: &u64, _: &mut Context<'_, Self>) {
        self.sum += *v;
        self.received += 1;
        if self.received == self.branching {
            self.parent.send(self.sum);
        }
    }
}

impl<P: ChildBinding> Agent for Node<P> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if self.size > 1 {
            ctx.on(Self::on_sum)?;
        }
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        if self.size == 1 {
            self.parent.send(self.num);
            return;
        }
        let me = ctx.self_mbox();
        let sub = self.size / self.branching;
        let mut coop = ctx.new_child_coop();
        coop.reserve(self.branching as usize);
        self.placement.apply(&mut coop);
        for i in 0..self.branching {
            coop.add(Node {
                placement: self.placement.clone(),
                parent: me.clone(),
                num: self.num + i * sub,
                size: sub,
                branching: self.branching,
                sum: 0,
                received: 0,
            });
        }
        if let Err(e) = ctx.register_coop(coop) {
            panic!("skynet: child cooperation refused: {e}");
        }
    }
}

struct Collector {
    started: Instant,
    out: Arc<Mutex<Option<(Duration, u64)>>>,
}

impl Agent for Collector {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, sum: &u64, ctx: &mut Context<'_, Self>| {
            *me.out.lock().unwrap() = Some((me.started.elapsed(), *sum));
            ctx.stop_environment();
        })?;
        Ok(())
    }
}

/// The most threads a skynet on `active_obj` may start.
pub const MAX_THREADS: u64 = 20_000;

/// Checks the parameters: `leaves` must be a power of `branching`.
pub fn validate(leaves: u64, branching: u64) -> Result<u64, String> {
    if branching < 2 {
        return Err(format!("--branching must be at least 2 (got {branching})"));
    }
    if leaves == 0 {
        return Err("--leaves must be at least 1".into());
    }
    let (mut n, mut agents) = (1u64, 1u64);
    while n < leaves {
        n = n.checked_mul(branching).ok_or("--leaves is too large")?;
        agents += n;
    }
    if n != leaves {
        return Err(format!(
            "--leaves ({leaves}) must be a power of --branching ({branching})"
        ));
    }
    if agents > 100_000_000 {
        return Err(format!(
            "{agents} agents would not fit in memory: use --leaves of at most 10^7"
        ));
    }
    Ok(agents)
}

/// The expected sum: 0 + 1 + ... + (leaves - 1).
pub fn expected_sum(leaves: u64) -> u64 {
    leaves * (leaves - 1) / 2
}

/// Runs one skynet.
pub fn run_once(leaves: u64, branching: u64, placement: Placement) -> Result<Outcome, String> {
    placement.validate()?;
    let agents = validate(leaves, branching)?;
    if placement.dispatcher == Dispatcher::ActiveObj && agents > MAX_THREADS {
        return Err(format!(
            "{agents} agents on active_obj would start {agents} threads: use --dispatcher one-thread or at most {MAX_THREADS} agents"
        ));
    }
    let out = Arc::new(Mutex::new(None));
    let out2 = out.clone();
    let started = Instant::now();
    cohort::launch(move |env| {
        let mut coop = env.new_coop();
        let collector = coop.add(Collector { started, out: out2 });
        let (parent, size) = (collector.mbox(), leaves);
        match placement.dispatcher {
            Dispatcher::OneThread => {
                let placement = DefaultDispatcher;
                coop.add(Node {
                    placement,
                    parent,
                    num: 0,
                    size,
                    branching,
                    sum: 0,
                    received: 0,
                });
            }
            _ => {
                let binder = placement.binder(env)?;
                coop.set_binder(binder.clone());
                coop.add(Node {
                    placement: binder,
                    parent,
                    num: 0,
                    size,
                    branching,
                    sum: 0,
                    received: 0,
                });
            }
        }
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let with_teardown = started.elapsed();
    let (to_result, sum) = out
        .lock()
        .unwrap()
        .take()
        .ok_or("the root never received the sum")?;
    if sum != expected_sum(leaves) {
        return Err(format!(
            "wrong sum: {sum}, expected {}",
            expected_sum(leaves)
        ));
    }
    Ok(Outcome {
        to_result,
        with_teardown,
        sum,
        agents,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::FifoArg;

    #[test]
    fn validation() {
        assert_eq!(validate(1_000_000, 10), Ok(1_111_111));
        assert!(validate(999, 10).is_err());
        assert!(validate(0, 10).is_err());
        assert!(validate(10, 1).is_err());
        assert_eq!(expected_sum(1_000_000), 499_999_500_000);
    }

    #[test]
    fn small_skynet_sums() {
        let o = crate::watchdog::within(20, || {
            run_once(1000, 10, Placement::of(Dispatcher::OneThread))
        })
        .unwrap();
        assert_eq!((o.sum, o.agents), (499_500, 1111));
        // A thread per agent: keep it small.
        let o = crate::watchdog::within(20, || {
            run_once(100, 10, Placement::of(Dispatcher::ActiveObj))
        })
        .unwrap();
        assert_eq!((o.sum, o.agents), (4_950, 111));
    }

    #[test]
    fn thread_pool_skynet_sums_with_either_fifo() {
        for fifo in [FifoArg::Cooperation, FifoArg::Individual] {
            let mut p = Placement::of(Dispatcher::ThreadPool).fifo(fifo);
            p.threads = 3;
            let o = crate::watchdog::within(20, move || run_once(1000, 10, p)).unwrap();
            assert_eq!((o.sum, o.agents), (499_500, 1111));
            assert!(o.to_result <= o.with_teardown);
        }
    }
}
