//! Message delivery tracing: every step of a message's way (sent, queued, handled, dropped and
//! why, redirected or transformed by a message limit, filtered out) reported to a tracer.
//!
//! Off by default and free when off: each step costs one relaxed load of a process-wide
//! counter of environments that trace (and a branch). Turn it on with
//! [`EnvironmentBuilder::message_tracing`](crate::EnvironmentBuilder::message_tracing) or at
//! run time with [`Environment::set_message_tracing`](crate::Environment::set_message_tracing).
//! A [`MessageTracing`] says where events go (stderr, the `tracing` crate, a function) and
//! which ones (filters by message type, mailbox, agent).

use crate::mailbox::dead_letter::DeliveryFailure;
use crate::mailbox::{Mbox, MboxId};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Environments of this process that trace right now.
static TRACING: AtomicUsize = AtomicUsize::new(0);

/// Whether any environment traces: the one check on the message path.
#[inline(always)]
pub(crate) fn on() -> bool {
    TRACING.load(Ordering::Relaxed) != 0
}

/// One environment more (`true`) or less traces.
pub(crate) fn count(on: bool) {
    if on {
        TRACING.fetch_add(1, Ordering::Relaxed);
    } else {
        TRACING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A step of a message's delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceStep {
    /// `send` or `send_mut` was called on a mailbox.
    Sent,
    /// The message was queued for an agent.
    Queued,
    /// An agent's handler is about to run with it.
    Handled,
    /// It was not delivered (a dead letter), for this reason.
    Dropped(DeliveryFailure),
    /// A message limit sent it to another mailbox.
    Redirected {
        /// The mailbox it went to.
        to: MboxId,
    },
    /// A message limit replaced it by another message, sent to another mailbox.
    Transformed {
        /// The mailbox the new message went to.
        to: MboxId,
        /// The new message's type.
        into: &'static str,
    },
    /// A subscriber's delivery filter rejected it: not queued for that subscriber.
    FilteredOut,
}

/// One traced event.
#[derive(Debug, Clone, Copy)]
pub struct TraceEvent<'a> {
    /// What happened.
    pub step: TraceStep,
    /// The message's type name (`cohort::Mutable<T>` for a mutable message).
    pub message_type: &'static str,
    /// The mailbox it went through, when known.
    pub mbox: Option<MboxId>,
    /// The receiving agent, by its direct mailbox's id, when known.
    pub agent: Option<MboxId>,
    /// The receiving agent's name ([`Agent::name`](crate::Agent::name)), at
    /// [`TraceStep::Handled`].
    pub agent_name: Option<&'a str>,
}

impl fmt::Display for TraceEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            TraceStep::Sent => write!(f, "sent")?,
            TraceStep::Queued => write!(f, "queued")?,
            TraceStep::Handled => write!(f, "handled")?,
            TraceStep::Dropped(why) => write!(f, "dropped ({why})")?,
            TraceStep::Redirected { to } => write!(f, "redirected to mbox {:#x}", to.0)?,
            TraceStep::Transformed { to, into } => {
                write!(f, "transformed into `{into}` to mbox {:#x}", to.0)?
            }
            TraceStep::FilteredOut => write!(f, "filtered out")?,
        }
        write!(f, " msg=`{}`", self.message_type)?;
        if let Some(m) = self.mbox {
            write!(f, " mbox={:#x}", m.0)?;
        }
        if let Some(a) = self.agent {
            write!(f, " agent={:#x}", a.0)?;
        }
        if let Some(n) = self.agent_name {
            write!(f, " name={n}")?;
        }
        Ok(())
    }
}

type Sink = Box<dyn Fn(&TraceEvent<'_>) + Send + Sync + 'static>;

/// Where traced events go and which ones: an environment's message tracer.
///
/// Filters of one kind are alternatives, filters of different kinds must all match: with
/// `.message_type::<A>().message_type::<B>().agent(&x)`, events of `A` or `B` concerning
/// agent `x` pass. An event that does not know the filtered field (a drop found by the
/// sender does not know the agent) does not pass that filter.
///
/// ```
/// use cohort::{Agent, Context, DefineError, Environment, MessageTracing, TraceStep};
/// use std::sync::{Arc, Mutex};
///
/// struct Ping;
/// struct Echo;
/// impl Agent for Echo {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         ctx.on(|_, _: &Ping, ctx| ctx.stop_environment())?;
///         Ok(())
///     }
/// }
///
/// let steps = Arc::new(Mutex::new(Vec::new()));
/// let log = steps.clone();
/// let env = Environment::builder()
///     .message_tracing(
///         MessageTracing::to_fn(move |e| log.lock().unwrap().push(e.step)).message_type::<Ping>(),
///     )
///     .start()
///     .unwrap();
/// let mut coop = env.new_coop();
/// let echo = coop.add(Echo).mbox();
/// env.register_coop(coop).unwrap();
/// echo.send(Ping);
/// env.wait();
/// assert_eq!(*steps.lock().unwrap(), [TraceStep::Sent, TraceStep::Queued, TraceStep::Handled]);
/// ```
pub struct MessageTracing {
    sink: Sink,
    types: Vec<&'static str>,
    mboxes: Vec<MboxId>,
    agents: Vec<MboxId>,
}

impl MessageTracing {
    fn new(sink: Sink) -> Self {
        Self {
            sink,
            types: Vec::new(),
            mboxes: Vec::new(),
            agents: Vec::new(),
        }
    }

    /// Prints each event as one line on stderr (`cohort trace: queued msg=... mbox=...`).
    pub fn to_stderr() -> Self {
        Self::new(Box::new(|e| eprintln!("cohort trace: {e}")))
    }

    /// Emits each event as a `tracing` event at `TRACE` level, target `cohort::trace`.
    pub fn to_tracing() -> Self {
        Self::new(Box::new(
            |e| tracing::trace!(target: "cohort::trace", step = ?e.step, message_type = e.message_type, mbox = ?e.mbox, agent = ?e.agent, "{e}"),
        ))
    }

    /// Calls `f` with each event, on the thread where the step happens (a sender or a
    /// worker): keep it quick. A panic in it is caught and counted.
    pub fn to_fn(f: impl Fn(&TraceEvent<'_>) + Send + Sync + 'static) -> Self {
        Self::new(Box::new(f))
    }

    /// Only events of messages of type `M` (`Mutable<T>` for mutable messages), or of the
    /// other types given.
    pub fn message_type<M: ?Sized + 'static>(mut self) -> Self {
        self.types.push(std::any::type_name::<M>());
        self
    }

    /// Only events on mailbox `mbox`, or on the other mailboxes given.
    pub fn mbox(mut self, mbox: &Mbox) -> Self {
        self.mboxes.push(mbox.id());
        self
    }

    /// Only events concerning the agent whose direct mailbox is `agent`, or the other agents
    /// given.
    pub fn agent(mut self, agent: &Mbox) -> Self {
        self.agents.push(agent.id());
        self
    }

    fn passes(&self, e: &TraceEvent<'_>) -> bool {
        fn one_of<T: PartialEq>(set: &[T], v: Option<T>) -> bool {
            set.is_empty() || v.is_some_and(|v| set.contains(&v))
        }
        one_of(&self.types, Some(e.message_type))
            && one_of(&self.mboxes, e.mbox)
            && one_of(&self.agents, e.agent)
    }

    /// Hands `e` to the sink if it passes the filters.
    pub(crate) fn emit(&self, e: &TraceEvent<'_>) -> std::thread::Result<()> {
        if self.passes(e) {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.sink)(e)))
        } else {
            Ok(())
        }
    }
}

impl fmt::Debug for MessageTracing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageTracing")
            .field("types", &self.types)
            .field("mboxes", &self.mboxes)
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}
