//! Message limits: how many messages of one type may wait in an agent's queue, and what
//! happens to the next one (SObjectizer's `limit_then_drop`, `limit_then_abort`,
//! `limit_then_redirect`, `limit_then_transform`).
//!
//! An agent declares its limits once, in [`Agent::define`](crate::Agent::define), with
//! [`Context::set_message_limits`](crate::Context::set_message_limits). A limit counts the
//! messages of its type queued for the agent: the count goes up when a message is queued (on
//! the sender's thread) and down when the agent's worker takes it from the queue (to handle
//! it, or to find it undeliverable). A message that arrives while the count is at the limit
//! is not queued: it is dropped (a dead letter with [`DeliveryFailure::LimitReached`]), the
//! process aborts, or it goes to another mailbox, as it is or transformed.
//!
//! An agent without limits pays one predictable branch per send (a null pointer in its
//! header) and none per handled message beyond a bit test on the demand.

use crate::defaults;
use crate::error::LimitError;
use crate::mailbox::dead_letter::{DeadLetter, DeliveryFailure};
use crate::mailbox::{Mbox, MboxId, WeakMbox};
use crate::message::Envelope;
use crate::runtime::env::EnvShared;
use crate::trace::{self, TraceStep};
use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Makes the envelope to send instead of an overflowing one (a transform limit).
type Transformer = Box<dyn Fn(&Envelope) -> Envelope + Send + Sync>;

/// What happens to a message that arrives while its limit is reached.
enum Overflow {
    Drop,
    Abort,
    Redirect {
        to: WeakMbox,
    },
    Transform {
        to: WeakMbox,
        into: &'static str,
        make: Transformer,
    },
}

/// One limit: a message type, its bound, the messages of it queued now, and the action.
///
/// The messages queued now are `added - taken` (wrapping): senders, on any thread, count in
/// with a read-modify-write of `added`; the agent's worker, the only writer of `taken` while
/// the agent runs, counts out with a plain load and store.
struct Limit {
    key: TypeId,
    type_name: &'static str,
    max: usize,
    added: AtomicUsize,
    taken: AtomicUsize,
    overflow: Overflow,
}

/// The message limits of one agent, built with chained calls and set in `define` with
/// [`Context::set_message_limits`](crate::Context::set_message_limits).
///
/// A limit is per message type: `drop::<Ping>(100)` lets at most 100 `Ping`s wait in the
/// agent's queue. A mutable message is limited as [`Mutable<M>`](crate::Mutable). The
/// default limit (`default_drop`, `default_abort`) covers every type that has no limit of
/// its own, with one count shared by all of them: it bounds the agent's queue.
///
/// ```
/// use cohort::{Agent, Context, DefineError, MessageLimits};
///
/// struct Job(u64);
/// struct Heartbeat;
/// struct Worker { overflow: cohort::Mbox }
///
/// impl Agent for Worker {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         ctx.set_message_limits(
///             MessageLimits::new()
///                 .redirect::<Job>(1_000, &self.overflow) // the 1001st waiting job goes elsewhere
///                 .drop::<Heartbeat>(1)                  // one pending heartbeat is enough
///                 .default_drop(10_000),                 // everything else
///         )?;
///         ctx.on(|_, _: &Job, _| {})?;
///         ctx.on(|_, _: &Heartbeat, _| {})?;
///         Ok(())
///     }
/// }
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let mut coop = env.new_coop();
/// coop.add(Worker { overflow: env.named_mbox("jobs-overflow") });
/// env.register_coop(coop).unwrap();
///
/// let limits = MessageLimits::new().drop::<Heartbeat>(1).default_abort(100);
/// assert!(format!("{limits:?}").contains("Heartbeat\": drop above 1"));
/// ```
#[derive(Default)]
pub struct MessageLimits {
    limits: Vec<Limit>,
    default: Option<Limit>,
    /// The first mistake made while building (reported by `set_message_limits`).
    error: Option<LimitError>,
}

/// What [`MessageLimits::admit`] decided for a message.
pub(crate) enum Admit {
    /// Under its limit: queue it, marked as counted.
    Counted(Envelope),
    /// No limit applies: queue it as usual.
    Free(Envelope),
    /// Over its limit: the overflow action took it.
    Taken,
}

impl MessageLimits {
    /// No limits yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(mut self, key: TypeId, type_name: &'static str, max: usize, o: Overflow) -> Self {
        if self.limits.iter().any(|l| l.key == key) {
            self.error.get_or_insert(LimitError::DuplicateType {
                message_type: type_name,
            });
            return self;
        }
        self.limits.push(Limit {
            key,
            type_name,
            max,
            added: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            overflow: o,
        });
        self
    }

    fn push_default(mut self, max: usize, o: Overflow) -> Self {
        if self.default.is_some() {
            self.error.get_or_insert(LimitError::DuplicateDefault);
            return self;
        }
        self.default = Some(Limit {
            key: TypeId::of::<()>(),
            type_name: "<any other message type>",
            max,
            added: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            overflow: o,
        });
        self
    }

    /// At most `max` messages of type `M` wait in the queue; the next ones are dropped,
    /// each counted as a dead letter with [`DeliveryFailure::LimitReached`].
    pub fn drop<M: 'static>(self, max: usize) -> Self {
        self.push(
            TypeId::of::<M>(),
            std::any::type_name::<M>(),
            max,
            Overflow::Drop,
        )
    }

    /// At most `max` messages of type `M` wait in the queue; the next one aborts the
    /// process (after logging an error through `tracing`).
    pub fn abort<M: 'static>(self, max: usize) -> Self {
        self.push(
            TypeId::of::<M>(),
            std::any::type_name::<M>(),
            max,
            Overflow::Abort,
        )
    }

    /// At most `max` messages of type `M` wait in the queue; the next ones are sent to `to`
    /// instead, as they are (a mutable message only to a single-consumer mailbox). The
    /// limit holds `to` weakly: it does not keep an agent alive.
    pub fn redirect<M: Send + Sync + 'static>(self, max: usize, to: &Mbox) -> Self {
        self.push(
            TypeId::of::<M>(),
            std::any::type_name::<M>(),
            max,
            Overflow::Redirect { to: to.downgrade() },
        )
    }

    /// At most `max` messages of type `M` wait in the queue; for each next one, `f` makes an
    /// `N` that is sent to `to` instead (the `M` is dropped). `f` runs on the sender's
    /// thread; a panic in it is caught and counted, and the message becomes a dead letter.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, Mbox, MessageLimits};
    ///
    /// struct Order(u64);
    /// struct Rejected { order: u64 }
    ///
    /// /// Takes no orders at all (a limit of 0): each one becomes a `Rejected`.
    /// struct Closed { rejections: Mbox }
    /// impl Agent for Closed {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.set_message_limits(MessageLimits::new().transform::<Order, _, _>(
    ///             0,
    ///             &self.rejections,
    ///             |o: &Order| Rejected { order: o.0 },
    ///         ))?;
    ///         ctx.on(|_, _: &Order, _| unreachable!())?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// struct Desk;
    /// impl Agent for Desk {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on(|_, r: &Rejected, ctx| {
    ///             assert_eq!(r.order, 7);
    ///             ctx.stop_environment();
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// let desk = coop.add(Desk).mbox();
    /// let closed = coop.add(Closed { rejections: desk }).mbox();
    /// env.register_coop(coop).unwrap();
    /// closed.send(Order(7));
    /// env.wait();
    /// ```
    pub fn transform<M, N, F>(self, max: usize, to: &Mbox, f: F) -> Self
    where
        M: Send + Sync + 'static,
        N: Send + Sync + 'static,
        F: Fn(&M) -> N + Send + Sync + 'static,
    {
        self.push(
            TypeId::of::<M>(),
            std::any::type_name::<M>(),
            max,
            Overflow::Transform {
                to: to.downgrade(),
                into: std::any::type_name::<N>(),
                // SAFETY: this limit is found by the key `TypeId::of::<M>()`, carried only by
                // envelopes of `M` (or of the `M` in `Mutable<M>`, laid out alike).
                make: Box::new(move |e: &Envelope| Envelope::for_many(f(unsafe { e.get::<M>() }))),
            },
        )
    }

    /// At most `max` messages of the types without a limit of their own wait in the queue
    /// (one count for all of them); the next ones are dropped as dead letters.
    pub fn default_drop(self, max: usize) -> Self {
        self.push_default(max, Overflow::Drop)
    }

    /// At most `max` messages of the types without a limit of their own wait in the queue
    /// (one count for all of them); the next one aborts the process.
    pub fn default_abort(self, max: usize) -> Self {
        self.push_default(max, Overflow::Abort)
    }

    /// The limits, or the first mistake made building them.
    pub(crate) fn validated(mut self) -> Result<Self, LimitError> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    #[inline]
    fn find(&self, key: TypeId) -> Option<&Limit> {
        self.limits
            .iter()
            .find(|l| l.key == key)
            .or(self.default.as_ref())
    }

    /// Counts `msg`, sent through `mbox`, in if its limit allows, else applies the limit's
    /// overflow action. `mbox` and `agent` (the agent's direct mailbox) are for tracing and
    /// dead letters.
    #[inline(never)]
    pub(crate) fn admit(
        &self,
        env: &EnvShared,
        mbox: MboxId,
        agent: MboxId,
        msg: Envelope,
        depth: u8,
    ) -> Admit {
        let Some(limit) = self.find(msg.key()) else {
            return Admit::Free(msg);
        };
        let ticket = limit.added.fetch_add(1, Ordering::Relaxed);
        if ticket.wrapping_sub(limit.taken.load(Ordering::Relaxed)) < limit.max {
            return Admit::Counted(msg);
        }
        limit.added.fetch_sub(1, Ordering::Relaxed);
        overflow(limit, env, At { mbox, agent }, msg, depth);
        Admit::Taken
    }

    /// Counts out a message of type `key` taken from the queue by the agent's worker (the
    /// only thread that counts out while the agent runs).
    #[inline]
    pub(crate) fn release(&self, key: TypeId) {
        if let Some(limit) = self.find(key) {
            let taken = limit.taken.load(Ordering::Relaxed);
            limit.taken.store(taken.wrapping_add(1), Ordering::Relaxed);
        }
    }

    /// Counts out a message of type `key` that will never run (its queue is gone: no worker
    /// counts out concurrently, but several rejecting senders may).
    pub(crate) fn release_rejected(&self, key: TypeId) {
        if let Some(limit) = self.find(key) {
            limit.taken.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for MessageLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut l = f.debug_map();
        for limit in self.limits.iter().chain(&self.default) {
            let action = match limit.overflow {
                Overflow::Drop => "drop",
                Overflow::Abort => "abort",
                Overflow::Redirect { .. } => "redirect",
                Overflow::Transform { .. } => "transform",
            };
            l.entry(
                &limit.type_name,
                &format_args!("{action} above {}", limit.max),
            );
        }
        l.finish()
    }
}

/// Where an overflowing message was going: the mailbox it was sent through and the agent.
#[derive(Clone, Copy)]
struct At {
    mbox: MboxId,
    agent: MboxId,
}

impl At {
    /// Counts `msg` as a dead letter for `why`, with where it was going.
    #[cold]
    fn dead_letter(self, env: &EnvShared, msg: &Envelope, why: DeliveryFailure) {
        env.dead_letter_with(&DeadLetter::of(msg, why, Some(self.mbox), Some(self.agent)));
    }
}

#[cold]
fn overflow(limit: &Limit, env: &EnvShared, at: At, msg: Envelope, depth: u8) {
    let agent = at.agent;
    match &limit.overflow {
        Overflow::Drop => {
            at.dead_letter(env, &msg, DeliveryFailure::LimitReached);
            crate::mailbox::request::drop_with_reason(msg, DeliveryFailure::LimitReached)
        }
        Overflow::Abort => {
            tracing::error!(
                message_type = msg.type_name(),
                limit = limit.max,
                agent = agent.0,
                "message limit reached with the abort action: aborting the process"
            );
            eprintln!(
                "cohort: message limit of {} for `{}` reached (abort action): aborting",
                limit.max, limit.type_name
            );
            std::process::abort()
        }
        Overflow::Redirect { to } => {
            let Some(target) = next_hop(env, to, &msg, depth, at) else {
                return;
            };
            if trace::on() {
                env.trace_step(
                    TraceStep::Redirected { to: target.id() },
                    &msg,
                    None,
                    Some(agent),
                );
            }
            redirect(env, &target, msg, depth);
        }
        Overflow::Transform { to, into, make } => {
            let Some(target) = next_hop(env, to, &msg, depth, at) else {
                return;
            };
            let made = catch_unwind(AssertUnwindSafe(|| make(&msg)));
            let Ok(new) = made else {
                env.count_panic();
                tracing::error!(
                    message_type = msg.type_name(),
                    "a message limit's transform function panicked"
                );
                return at.dead_letter(env, &msg, DeliveryFailure::TransformPanicked);
            };
            if trace::on() {
                let step = TraceStep::Transformed {
                    to: target.id(),
                    into,
                };
                env.trace_step(step, &msg, None, Some(agent));
            }
            drop(msg);
            redirect(env, &target, new, depth);
        }
    }
}

/// Sends `msg` on to `target`, the next hop of a redirect or transform; a mutable message to
/// a mailbox that takes none is a dead letter there.
fn redirect(env: &EnvShared, target: &Mbox, msg: Envelope, depth: u8) {
    if !target.takes(&msg) {
        let why = DeliveryFailure::MutableToMultiConsumer;
        return env.dead_letter_with(&DeadLetter::of(&msg, why, Some(target.id()), None));
    }
    // Cannot fail: `takes` said it goes.
    let _ = target.deliver_envelope(msg, depth + 1);
}

/// The target of a redirect or transform, unless the chain is too deep (a loop) or the
/// target is gone; those two are dead letters.
fn next_hop(env: &EnvShared, to: &WeakMbox, msg: &Envelope, depth: u8, at: At) -> Option<Mbox> {
    if usize::from(depth) >= defaults::MAX_REDIRECT_DEPTH {
        tracing::warn!(
            message_type = msg.type_name(),
            depth,
            "message limits redirect in a loop: message dropped"
        );
        at.dead_letter(env, msg, DeliveryFailure::RedirectLoop);
        return None;
    }
    match to.upgrade() {
        Some(m) => Some(m),
        None => {
            at.dead_letter(env, msg, DeliveryFailure::ReceiverGone);
            None
        }
    }
}
