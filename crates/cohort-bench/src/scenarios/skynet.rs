//! Skynet (sobjectizer-performance-part3.txt, "Skynet: performance of managing agents"): an
//! agent creates `branching` children in a child cooperation, each creates `branching` more,
//! down to `leaves` leaf agents; each leaf sends its ordinal up, each level sums, the root
//! receives 0 + 1 + ... + (leaves - 1) (499999500000 for one million). Measured: time to the
//! result, and time until every agent is destroyed (the environment has stopped).
//!
//! [`Teardown::AtEnd`] is the article's program: the whole tree lives until the environment
//! stops. [`Teardown::Answered`] lets each node deregister its children's cooperation once
//! they have all answered, as CAF's skynet actors quit after answering: how much of the tree
//! is alive at once then depends on the order the dispatcher runs it in.

use super::{Dispatcher, Placement};
use cohort::{Agent, Context, CoopHandle, DefineError, DeregReason, Mbox};
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

/// When the agents go (`skynet --teardown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Teardown {
    /// The whole tree until the environment stops (the article's program).
    AtEnd,
    /// Each node deregisters its children's cooperation once they have all answered.
    Answered,
}

/// What a node keeps of its children's cooperation: nothing (zero-sized, so the million
/// agents of the article's program stay small), or its handle, to deregister it.
trait ChildCoop: Default + Send + 'static {
    fn keep(&mut self, coop: CoopHandle);
    /// Every child has answered.
    fn answered(&mut self);
}

#[derive(Default)]
struct KeepTree;
impl ChildCoop for KeepTree {
    fn keep(&mut self, _: CoopHandle) {}
    fn answered(&mut self) {}
}

#[derive(Default)]
struct ReleaseAnswered(Option<CoopHandle>);
impl ChildCoop for ReleaseAnswered {
    fn keep(&mut self, coop: CoopHandle) {
        self.0 = Some(coop);
    }
    fn answered(&mut self) {
        if let Some(c) = self.0.take() {
            c.deregister(DeregReason::Normal);
        }
    }
}

struct Node<P: ChildBinding, C: ChildCoop> {
    placement: P,
    children: C,
    parent: Mbox,
    num: u64,
    size: u64,
    branching: u64,
    sum: u64,
    received: u64,
}

impl<P: ChildBinding, C: ChildCoop> Node<P, C> {
    fn on_sum(&mut self, v: &u64, _: &mut Context<'_, Self>) {
        self.sum += *v;
        self.received += 1;
        if self.received == self.branching {
            self.parent.send(self.sum);
            self.children.answered();
        }
    }

    fn root(placement: P, parent: Mbox, size: u64, branching: u64) -> Self {
        Node {
            placement,
            children: C::default(),
            parent,
            num: 0,
            size,
            branching,
            sum: 0,
            received: 0,
        }
    }
}

impl<P: ChildBinding, C: ChildCoop> Agent for Node<P, C> {
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
                children: C::default(),
                parent: me.clone(),
                num: self.num + i * sub,
                size: sub,
                branching: self.branching,
                sum: 0,
                received: 0,
            });
        }
        match ctx.register_coop(coop) {
            Ok(c) => self.children.keep(c),
            Err(e) => panic!("skynet: child cooperation refused: {e}"),
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

/// Adds the root node to `coop`: on the default dispatcher (`binding` `None`, so that the
/// million nodes carry no binder), or passing `binding` down the tree.
fn add_root<C: ChildCoop>(
    coop: &mut cohort::Coop,
    binding: Option<cohort::Binder>,
    parent: Mbox,
    size: u64,
    branching: u64,
) {
    match binding {
        None => {
            coop.add(Node::<_, C>::root(
                DefaultDispatcher,
                parent,
                size,
                branching,
            ));
        }
        Some(binder) => {
            coop.add(Node::<_, C>::root(binder, parent, size, branching));
        }
    }
}

/// Runs one skynet, its agents going as `teardown` says.
pub fn run_with(
    leaves: u64,
    branching: u64,
    placement: Placement,
    teardown: Teardown,
) -> Result<Outcome, String> {
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
        let binding = match placement.dispatcher {
            Dispatcher::OneThread => None,
            _ => {
                let binder = placement.binder(env)?;
                coop.set_binder(binder.clone());
                Some(binder)
            }
        };
        match teardown {
            Teardown::AtEnd => add_root::<KeepTree>(&mut coop, binding, parent, size, branching),
            Teardown::Answered => {
                add_root::<ReleaseAnswered>(&mut coop, binding, parent, size, branching)
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
            run_with(
                1000,
                10,
                Placement::of(Dispatcher::OneThread),
                Teardown::AtEnd,
            )
        })
        .unwrap();
        assert_eq!((o.sum, o.agents), (499_500, 1111));
        // A thread per agent: keep it small.
        let o = crate::watchdog::within(20, || {
            run_with(
                100,
                10,
                Placement::of(Dispatcher::ActiveObj),
                Teardown::AtEnd,
            )
        })
        .unwrap();
        assert_eq!((o.sum, o.agents), (4_950, 111));
    }

    #[test]
    fn a_tree_released_as_it_answers_sums_on_every_pool() {
        for d in [
            Dispatcher::OneThread,
            Dispatcher::ThreadPool,
            Dispatcher::WorkStealing,
        ] {
            let o = crate::watchdog::within(20, move || {
                run_with(1000, 10, Placement::of(d), Teardown::Answered)
            })
            .unwrap();
            assert_eq!((o.sum, o.agents), (499_500, 1111), "{d:?}");
        }
    }

    #[test]
    fn thread_pool_skynet_sums_with_either_fifo() {
        for fifo in [FifoArg::Cooperation, FifoArg::Individual] {
            let mut p = Placement::of(Dispatcher::ThreadPool).fifo(fifo);
            p.threads = 3;
            let o = crate::watchdog::within(20, move || run_with(1000, 10, p, Teardown::AtEnd))
                .unwrap();
            assert_eq!((o.sum, o.agents), (499_500, 1111));
            assert!(o.to_result <= o.with_teardown);
        }
    }
}
