//! [`Demand`]: one unit of work in an [`EventQueue`].

use crate::agent::cell::{ABANDONED, ACTIVE, AgentRef, DeliveryFailure, DynCell, FINISHING, NEW};
use crate::mailbox::MboxId;
use crate::mailbox::dead_letter::DeadLetter;
use crate::mailbox::multi_consumer::{Marker, QueueGroup};
use crate::message::Envelope;
#[cfg(not(cohort_loom))]
use crate::queue::BlockPool;
use crate::queue::EventQueue;
use crate::queue::QueueItem;
use crate::runtime::coop::{CoopInner, Step};
use std::sync::Arc;
#[cfg(not(cohort_loom))]
use std::sync::LazyLock;

/// One unit of work for a worker thread.
pub(crate) enum Demand {
    /// A message for one agent (through the mailbox recorded in `agent`).
    Message { agent: AgentRef, msg: Envelope },
    /// Everything else (kept in one variant so that a demand stays 40 bytes).
    Control(Control),
}

/// The demands that are not a message for one agent.
pub(crate) enum Control {
    /// One message for every agent of `targets` (the subscribers of a multi-consumer mailbox
    /// bound to this queue): one demand per queue per send, not one per subscriber.
    /// `sent_at`: the finish epoch when it was sent (see [`BroadcastTargets::run`]).
    Broadcast {
        targets: Arc<BroadcastTargets>,
        msg: Envelope,
        sent_at: u32,
    },
    /// The subscribers bound to this queue have entries to handle in a broadcast log (one
    /// send to subscribers on many queues): see `mailbox/multi_consumer/log.rs`.
    Log(Marker<QueueGroup>),
    /// A lifecycle step (start, finish) for the agents of one cooperation bound to one queue.
    Lifecycle {
        coop: Arc<CoopInner>,
        group: u32,
        step: Step,
    },
}

impl Control {
    /// [`Demand::run`] for a control demand.
    #[inline(never)]
    fn run(self, queue: &EventQueue, budget: usize) -> usize {
        match self {
            Control::Lifecycle { coop, group, step } => coop.run_step(group, step, queue),
            Control::Broadcast {
                targets,
                msg,
                sent_at,
            } => targets.run(msg, sent_at),
            Control::Log(marker) => return run_marker(marker, queue, budget),
        }
        1
    }
}

/// The subscribers of one message type on one multi-consumer mailbox that share one queue.
#[derive(Clone)]
pub(crate) struct BroadcastTargets {
    pub(crate) mbox: MboxId,
    pub(crate) cells: Vec<Arc<DynCell>>,
}

impl BroadcastTargets {
    /// Counts `n` messages of type `message_type` as undeliverable to every target (their
    /// queue is gone).
    #[cold]
    pub(crate) fn reject(&self, message_type: &'static str, n: u64) {
        for cell in self.cells.iter() {
            let letter = DeadLetter {
                mbox: Some(self.mbox),
                agent: Some(cell.mbox_id()),
                ..DeadLetter::bare(message_type, DeliveryFailure::ReceiverGone)
            };
            for _ in 0..n {
                cell.header.env.dead_letter_with(&letter);
            }
        }
    }

    /// Hands `msg`, sent at finish epoch `sent_at`, to every target, in subscription order.
    /// A target whose cooperation was already finishing when it was sent gets it as a dead
    /// letter, as a direct send would have made it then.
    pub(crate) fn run(&self, msg: Envelope, sent_at: u32) {
        let mut msg = Some(msg);
        let n = self.cells.len();
        for (i, cell) in self.cells.iter().enumerate() {
            let m = if i + 1 == n {
                msg.take()
            } else {
                msg.as_ref().and_then(Envelope::duplicate)
            };
            let Some(m) = m else { return };
            let status = cell.header.status();
            if status != ACTIVE
                && let Some(why) = undeliverable(cell, status, sent_at)
            {
                cell.header
                    .dead_letter_at(m, why, self.mbox, cell.mbox_id());
                continue;
            }
            // SAFETY: `cells` holds a strong count on each cell for as long as this demand
            // runs, and demands run on the thread that runs the agents' queue.
            unsafe { AgentRef::borrowed(cell, self.mbox) }.handle(m);
        }
    }
}

/// Why a 1:N message sent at finish epoch `sent_at` does not reach `cell`, whose status is
/// `status` (not `ACTIVE`), on the thread that runs its queue; `None` if it does.
#[cold]
fn undeliverable(cell: &DynCell, status: u8, sent_at: u32) -> Option<DeliveryFailure> {
    match status {
        // Subscribed in `define` of a cooperation still registering: kept on the queue until
        // its `start` (`AgentRef::handle` does not touch its body, which belongs to the
        // registering thread).
        NEW => None,
        // That registration failed.
        ABANDONED => Some(DeliveryFailure::NotRegistered),
        FINISHING => {
            // SAFETY: this thread runs the cell's queue (callers), and no handler of it runs.
            let coop = unsafe { cell.body_shared() }.coop();
            // SAFETY: an agent's cooperation outlives its agents' demands (`AgentBody::coop`).
            unsafe { &*coop }
                .gone_for(sent_at)
                .then_some(DeliveryFailure::ReceiverGone)
        }
        // `FINISHED`: the handler path counts it.
        _ => None,
    }
}

impl QueueItem for Demand {
    /// A message that reached an agent before its `start`: the mailbox it came by and itself.
    type Early = (MboxId, Envelope);

    fn reject(self) {
        Demand::reject(self)
    }

    fn idle_memory() -> crate::queue::IdleMemory {
        crate::queue::IdleMemory::List
    }

    fn list_for_sweep(q: crate::queue::QueueArc<Self>) {
        crate::queue::sweep_list::list(q);
    }

    #[cfg(not(cohort_loom))]
    fn block_pool() -> Option<&'static BlockPool<Self>> {
        static BLOCKS: LazyLock<BlockPool<Demand>> = LazyLock::new(BlockPool::new);
        Some(&BLOCKS)
    }
}

impl Demand {
    /// A lifecycle step for group `group` of `coop`.
    pub(crate) fn lifecycle(coop: Arc<CoopInner>, group: u32, step: Step) -> Self {
        Demand::Control(Control::Lifecycle { coop, group, step })
    }

    /// A message for the subscribers `targets`, sent at finish epoch `sent_at`.
    pub(crate) fn broadcast(targets: Arc<BroadcastTargets>, msg: Envelope, sent_at: u32) -> Self {
        Demand::Control(Control::Broadcast {
            targets,
            msg,
            sent_at,
        })
    }

    /// A broadcast log's marker for the group bound to the queue it is pushed to.
    pub(crate) fn log(marker: Marker<QueueGroup>) -> Self {
        Demand::Control(Control::Log(marker))
    }

    /// Executes the demand on the thread that runs `queue`, counting as up to `budget`
    /// demands: a broadcast log's marker handles up to that many of its entries (each one
    /// demand for `max_demands_at_once`), anything else counts as one. Returns how many it
    /// counted (at least one).
    ///
    /// Always inlined into the worker loops, with the rarer control demands behind a call:
    /// a message then goes from the queue to its agent's handler without a frame of its own
    /// (the registers it saves, the demand copied to the stack for it).
    #[inline(always)]
    pub(crate) fn run(self, queue: &EventQueue, budget: usize) -> usize {
        match self {
            Demand::Message { agent, msg } => {
                agent.handle(msg);
                1
            }
            Demand::Control(control) => control.run(queue, budget),
        }
    }

    /// Whether this is a message for a thread-safe handler (`adv_thread_pool`). Called by the
    /// thread that runs the demand's queue.
    #[inline]
    pub(crate) fn is_thread_safe(&self) -> bool {
        match self {
            Demand::Message { agent, msg } => agent.is_thread_safe(msg),
            Demand::Control(_) => false,
        }
    }

    /// Runs a demand for which [`Demand::is_thread_safe`] was true, on any thread.
    pub(crate) fn run_shared(self) {
        match self {
            Demand::Message { agent, msg } => agent.handle_shared(msg),
            // Never thread-safe: not reached, but never lost either.
            control @ Demand::Control(_) => control.reject(),
        }
    }

    /// Counts a demand that will never run (its queue is gone) as undelivered.
    pub(crate) fn reject(self) {
        match self {
            Demand::Message { agent, msg, .. } => agent.reject(msg, DeliveryFailure::ReceiverGone),
            Demand::Control(Control::Broadcast { targets, msg, .. }) => {
                targets.reject(msg.type_name(), 1)
            }
            Demand::Control(Control::Log(marker)) => marker.reject(),
            // Nothing to undo: what it would have counted goes with the queue.
            Demand::Control(Control::Lifecycle {
                step: Step::Abandon,
                ..
            }) => {}
            Demand::Control(Control::Lifecycle { coop, .. }) => {
                tracing::error!(
                    coop = coop.id().0,
                    "lifecycle step of a cooperation dropped with its queue"
                )
            }
        }
    }
}

/// Runs a broadcast log's marker for up to `budget` entries on the thread that runs `queue`
/// (the marker's own queue), putting it back at the front if it has more; returns how many
/// demands that counts as (at least one).
#[inline(never)]
fn run_marker(mut marker: Marker<QueueGroup>, queue: &EventQueue, budget: usize) -> usize {
    debug_assert!(std::ptr::eq(&*marker.group().queue, queue));
    // SAFETY: the marker came out of `queue`, which this thread runs (callers).
    let (handled, more) = unsafe { marker.run(budget) };
    if more {
        // Back at the front: the group's next entry comes before anything queued behind the
        // marker.
        let local = queue.local().expect("a marker runs on its queue's worker");
        local.unpop(Demand::log(marker))
    }
    handled.max(1)
}
