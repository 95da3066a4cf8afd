//! What happens to a message sent to an agent in each phase of its life, for a direct send
//! and for a 1:N send (the table in docs/runtime-semantics.md, "Delivery by phase"), on every
//! dispatcher kind of `common::dispatchers::ALL`.
//!
//! - **Around deregistration, on every delivery path** (`around_deregistration`). Agents
//!   whose queues are held by a handler waiting for the test; some messages sent, the
//!   cooperation deregistered, more sent, the handler released: the messages sent before are
//!   handled. Of those sent after `deregister()` returned, a direct send is a `ReceiverGone`
//!   dead letter per agent, and a 1:N send no longer reaches the agents at all (their
//!   subscriptions were dropped by the deregistration: a `NoSubscriber` dead letter per send,
//!   since nobody else subscribes), whichever path it would have taken (a named mailbox's one
//!   subscriber; one subscriber per queue; several subscribers sharing a queue, one broadcast
//!   demand; four or more queues, the broadcast log; a subscriber with a delivery filter or
//!   message limits, served one by one).
//! - **One test per cell of the phase table** (`phase`: defining, registered but not
//!   started, running, finishing, gone), each 1:N cell over three layouts (one subscriber, two
//!   sharing a queue, four queues).
//! - **Publishers racing with deregistration** (`racing`): nothing published after
//!   `deregister()` returned is handled, and nothing published while a cooperation registers
//!   is lost.

use crate::common::dispatchers::{self, Kind};
use crate::common::{self, DeadLetters, Latch};
use cohort::{
    ActiveGroupBuilder, Agent, Binder, Context, Coop, DefineError, DeliveryFailure, DeregReason,
    Environment, Mbox, MessageLimits, WrappedEnv,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

fn start() -> (WrappedEnv, DeadLetters) {
    let (builder, dead) = DeadLetters::builder();
    (builder.start().unwrap(), dead)
}

/// Waits until `dead` holds `n` dead letters of `M` (some are counted by a worker, after the
/// send returned).
fn wait_dead<M>(dead: &DeadLetters, n: usize) -> Vec<DeliveryFailure> {
    let until = Instant::now() + common::TIMEOUT * common::scale();
    loop {
        let got = dead.of::<M>();
        if got.len() >= n || Instant::now() > until {
            return got;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How the agents are laid out on queues, which decides how a 1:N send reaches them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Path {
    /// Each agent's own mailbox (two agents sharing a queue).
    Direct,
    /// A named mailbox with one subscriber: one message demand, checked at send time.
    Sole,
    /// A named mailbox, one subscriber on each of two queues.
    OnePerQueue,
    /// A named mailbox, two subscribers sharing one queue: one broadcast demand.
    SharedQueue,
    /// A named mailbox, one subscriber on each of four queues: the broadcast log.
    Log,
    /// The broadcast log, two subscribers on each of its four queues.
    LogShared,
    /// Two subscribers sharing a queue, each with a delivery filter: one by one.
    Filtered,
    /// Two subscribers sharing a queue, each with message limits: one by one.
    Limited,
}

impl Path {
    /// Queues, and agents per queue. (On `active_obj` and on a pool with individual fifo
    /// every agent has a queue of its own whatever the layout: "sharing a queue" is then one
    /// queue each.)
    fn layout(self) -> (usize, usize) {
        match self {
            Path::Sole => (1, 1),
            Path::OnePerQueue => (2, 1),
            Path::Direct | Path::SharedQueue | Path::Filtered | Path::Limited => (1, 2),
            Path::Log => (4, 1),
            Path::LogShared => (4, 2),
        }
    }
}

/// The 1:N layouts each cell of the phase table runs over.
const ONE_TO_MANY: [Path; 3] = [Path::Sole, Path::SharedQueue, Path::Log];

/// One dispatcher of `kind` per queue of `path`'s layout (pools of `threads` workers): the
/// binder of each, for that many agents of one cooperation.
fn queue_binders(kind: Kind, env: &Environment, queues: usize, threads: usize) -> Vec<Binder> {
    if kind == Kind::ActiveGroup {
        // Group names are the environment's: one dispatcher, a group per queue.
        let d = ActiveGroupBuilder::new().name("groups").build(env).unwrap();
        return (0..queues)
            .map(|q| d.group_binder(&format!("g{q}")))
            .collect();
    }
    (0..queues)
        .map(|q| kind.binder_with_threads(env, &format!("q{q}"), threads))
        .collect()
}

/// `per_queue` copies of each binder: one per agent.
fn agent_binders(queues: &[Binder], per_queue: usize) -> Vec<Binder> {
    queues
        .iter()
        .flat_map(|b| std::iter::repeat_n(b.clone(), per_queue))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Around deregistration, on every path.

/// Sent before deregistration.
#[derive(Debug, Clone, Copy)]
struct Before;
/// Sent after `deregister()` returned.
#[derive(Debug, Clone, Copy)]
struct After;
/// Holds the agent's queue until the latch opens.
#[derive(Debug, Clone, Copy)]
struct Hold;

/// Counts what it handles; holds its queue on [`Hold`]; tells the test when it finished.
struct Subscriber {
    topic: Option<Mbox>,
    path: Path,
    latch: Arc<Latch>,
    before: Arc<AtomicUsize>,
    after: Arc<AtomicUsize>,
    finished: Sender<()>,
}

impl Agent for Subscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if self.path == Path::Limited {
            ctx.set_message_limits(MessageLimits::new().default_drop(1_000))?;
        }
        ctx.on(|me: &mut Self, _: &Hold, _| me.latch.wait())?;
        ctx.on(|me: &mut Self, _: &Before, _| count(&me.before))?;
        ctx.on(|me: &mut Self, _: &After, _| count(&me.after))?;
        if let Some(topic) = &self.topic {
            ctx.subscribe(topic, |me: &mut Self, _: &Before, _| count(&me.before))?;
            ctx.subscribe(topic, |me: &mut Self, _: &After, _| count(&me.after))?;
            if self.path == Path::Filtered {
                ctx.set_delivery_filter(topic, |_: &Before| true)?;
                ctx.set_delivery_filter(topic, |_: &After| true)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(());
    }
}

fn count(c: &AtomicUsize) {
    c.fetch_add(1, Ordering::SeqCst);
}

const SENDS: usize = 10;

/// Agents laid out for `path` on `kind`, their queues held; `SENDS` messages sent before
/// deregistration and `SENDS` after: the first are handled; of the others, a direct send is
/// a `ReceiverGone` dead letter per agent, and a 1:N send reaches no agent of the
/// deregistered cooperation (a `NoSubscriber` dead letter per send: nobody else subscribes).
mod around_deregistration;
mod phase;
mod racing;
