//! [`Mbox`]: the handle through which messages are sent.
//!
//! An [`Mbox`] is a cheap handle (two words) usable from any thread. It is either an agent's
//! direct mailbox (multi-producer, single-consumer) or an [`IndirectMbox`]: a multi-consumer
//! mailbox (named or anonymous) or a unique-subscribers one (both in `multi_consumer/`), or a
//! custom one written outside the core ([`CustomMbox`]: message chains, remote proxies).
//! `send` is a `match` over these, never a dynamic call, except into a custom mailbox.
//!
//! The path of one message: [`Mbox::send`] builds an [`Envelope`] and calls
//! [`deliver`], which checks the agent's status, applies its message limits
//! (`limits.rs`, if it has any) and pushes a demand to the agent's
//! [`EventQueue`](crate::queue::EventQueue): its local half when the sender runs on that
//! queue, else its remote half. The worker running the queue pops it and calls
//! [`AgentRef::handle`](crate::agent::cell::AgentRef::handle), which finds the handler in the
//! agent's subscriptions for its current state (`agent/subscription.rs`,
//! `agent/state/dispatch.rs`) and calls it. A multi-consumer mailbox (`NamedMbox::route`)
//! calls the same `deliver` once per receiving agent, or queues one broadcast demand per
//! receiving queue.

use crate::agent::cell::DynCell;
use crate::error::{SendError, SubscribeError};
use crate::mailbox::custom::{AnyMessage, CustomMbox};
use crate::mailbox::deliver::deliver;
use crate::mailbox::multi_consumer::NamedMbox;
use crate::message::Envelope;
use crate::trace::{self, TraceStep};
use std::fmt;
use std::sync::{Arc, Weak};

/// The identity of a mailbox, unique among live mailboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MboxId(pub(crate) usize);

#[derive(Clone)]
enum MboxKind {
    Direct(Arc<DynCell>),
    /// Two variants, not three: a fat and a thin pointer share 16 bytes with no tag, which
    /// keeps `Mbox` (held by millions of agents in skynet) at two words.
    Indirect(Arc<IndirectMbox>),
}

/// A mailbox that is not an agent's direct one.
pub(crate) enum IndirectMbox {
    /// Multi-consumer: named or anonymous.
    Named(NamedMbox),
    /// Written outside the core (see [`CustomMbox`]).
    Custom(Box<dyn CustomMbox>),
}

impl IndirectMbox {
    /// Adds `cell` as a subscriber of `key` (a named mailbox; a custom one has none). On a
    /// unique-subscribers mailbox a second subscriber of one type is an error.
    pub(crate) fn subscribe(
        &self,
        key: std::any::TypeId,
        message_type: &'static str,
        cell: Arc<DynCell>,
    ) -> Result<(), SubscribeError> {
        match self {
            IndirectMbox::Named(m) => m.subscribe(key, message_type, cell),
            IndirectMbox::Custom(_) => Err(SubscribeError::NotSubscribable { message_type }),
        }
    }

    /// Removes `cell` from the subscribers of `key`.
    pub(crate) fn unsubscribe(&self, key: std::any::TypeId, cell: *const DynCell) {
        if let IndirectMbox::Named(m) = self {
            m.unsubscribe(key, cell)
        }
    }

    /// Removes each `(key, cell)` pair's subscription, in one edit.
    pub(crate) fn unsubscribe_all(
        &self,
        pairs: impl Iterator<Item = (std::any::TypeId, *const DynCell)>,
    ) {
        if let IndirectMbox::Named(m) = self {
            m.unsubscribe_all(pairs)
        }
    }

    /// The mailbox id: the address of the named mailbox (which knows it without its
    /// wrapper), or of the custom one's wrapper.
    pub(crate) fn id(&self) -> MboxId {
        match self {
            IndirectMbox::Named(m) => m.id(),
            IndirectMbox::Custom(_) => MboxId(self as *const Self as usize),
        }
    }

    /// The multi-consumer mailbox, if this is one.
    pub(crate) fn named(&self) -> Option<&NamedMbox> {
        match self {
            IndirectMbox::Named(m) => Some(m),
            IndirectMbox::Custom(_) => None,
        }
    }

    /// Whether it allows one subscriber per message type (and so mutable messages).
    pub(crate) fn is_single_consumer(&self) -> bool {
        self.named().is_some_and(NamedMbox::is_single_consumer)
    }

    /// The name for errors: the name, or `<anonymous>`.
    pub(crate) fn display_name(&self) -> String {
        self.name().unwrap_or("<anonymous>").to_string()
    }

    /// Sets or removes `cell`'s delivery filter for `key` (see [`NamedMbox::set_filter`]);
    /// false on a custom mailbox.
    pub(crate) fn set_filter(
        &self,
        key: std::any::TypeId,
        cell: *const DynCell,
        f: Option<crate::mailbox::multi_consumer::Filter>,
    ) -> bool {
        self.named().is_some_and(|n| n.set_filter(key, cell, f))
    }

    /// Serves `cell` one by one from now on (it declared message limits).
    pub(crate) fn serve_one_by_one(&self, cell: *const DynCell) {
        if let Some(n) = self.named() {
            n.serve_one_by_one(cell)
        }
    }

    /// The environment of a named mailbox (for tracing).
    fn env(&self) -> Option<Arc<crate::runtime::env::EnvShared>> {
        self.named().and_then(NamedMbox::env)
    }

    pub(crate) fn name(&self) -> Option<&str> {
        match self {
            IndirectMbox::Named(m) => m.name(),
            IndirectMbox::Custom(t) => t.name(),
        }
    }
}

/// A mailbox held without keeping an agent alive (the target of a message limit's redirect
/// or transform, kept in the agent's own cell).
pub(crate) enum WeakMbox {
    Direct(Weak<DynCell>),
    Indirect(Arc<IndirectMbox>),
}

impl WeakMbox {
    /// The mailbox, unless its agent is gone.
    pub(crate) fn upgrade(&self) -> Option<Mbox> {
        match self {
            WeakMbox::Direct(w) => w.upgrade().map(Mbox::direct),
            WeakMbox::Indirect(m) => Some(Mbox::indirect(m.clone())),
        }
    }
}

/// A mailbox handle: clone it freely, send to it from any thread.
///
/// ```
/// use cohort::{Agent, Context, DefineError, Mbox};
///
/// struct Counter { seen: u64 }
/// impl Agent for Counter {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         ctx.on(|me, n: &u64, ctx| {
///             me.seen += n;
///             if me.seen == 6 { ctx.stop_environment() }
///         })?;
///         Ok(())
///     }
/// }
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let mut coop = env.new_coop();
/// let counter: Mbox = coop.add(Counter { seen: 0 }).mbox();
/// env.register_coop(coop).unwrap();
/// for n in 1..=3u64 {
///     counter.send(n); // from a plain thread
/// }
/// env.wait();
/// ```
#[derive(Clone)]
pub struct Mbox {
    kind: MboxKind,
}

impl Mbox {
    pub(crate) fn direct(cell: Arc<DynCell>) -> Self {
        Self {
            kind: MboxKind::Direct(cell),
        }
    }

    pub(crate) fn indirect(m: Arc<IndirectMbox>) -> Self {
        Self {
            kind: MboxKind::Indirect(m),
        }
    }

    /// A mailbox whose deliveries go to `target` (see [`CustomMbox`]).
    ///
    /// ```
    /// use cohort::{AnyMessage, CustomMbox, Mbox};
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// struct Counting(AtomicUsize);
    /// impl CustomMbox for Counting {
    ///     fn deliver(&self, _msg: AnyMessage) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    /// let target = Arc::new(Counting(AtomicUsize::new(0)));
    /// let mbox = Mbox::custom(target.clone());
    /// mbox.send(1u8);
    /// assert_eq!(target.0.load(Ordering::Relaxed), 1);
    /// ```
    pub fn custom(target: impl CustomMbox) -> Self {
        Self::indirect(Arc::new(IndirectMbox::Custom(Box::new(target))))
    }

    #[cold]
    fn trace_sent(&self, message_type: &'static str) {
        let env = match &self.kind {
            MboxKind::Direct(cell) => Some(cell.header.env.arc()),
            MboxKind::Indirect(m) => m.env(),
        };
        if let Some(env) = env {
            env.trace(&trace::TraceEvent {
                step: TraceStep::Sent,
                message_type,
                mbox: Some(self.id()),
                agent: None,
                agent_name: None,
            });
        }
    }

    /// A weak handle for a message limit's target.
    pub(crate) fn downgrade(&self) -> WeakMbox {
        match &self.kind {
            MboxKind::Direct(cell) => WeakMbox::Direct(Arc::downgrade(cell)),
            MboxKind::Indirect(m) => WeakMbox::Indirect(m.clone()),
        }
    }

    /// The agent behind a direct mailbox.
    pub(crate) fn as_direct(&self) -> Option<&Arc<DynCell>> {
        match &self.kind {
            MboxKind::Direct(cell) => Some(cell),
            _ => None,
        }
    }

    /// The named (or anonymous) multi-consumer mailbox behind this handle, if it is one.
    pub(crate) fn as_named(&self) -> Option<&Arc<IndirectMbox>> {
        match &self.kind {
            MboxKind::Indirect(m) if matches!(**m, IndirectMbox::Named(_)) => Some(m),
            _ => None,
        }
    }

    /// Whether a [`send`](Mbox::send) of an `M` here would reach an agent: for a
    /// multi-consumer mailbox, whether any agent is subscribed to `M` on it; `true` for a
    /// direct or custom mailbox (they have no subscriber list). For publishers of optional
    /// notifications, which skip the send (and its `NoSubscriber` dead letter) when nobody
    /// listens.
    ///
    /// ```
    /// use cohort::Environment;
    ///
    /// let env = Environment::builder().start().unwrap();
    /// let news = env.environment().named_mbox("news");
    /// assert!(!news.has_subscribers::<String>());
    /// env.stop_and_wait();
    /// ```
    pub fn has_subscribers<M: 'static>(&self) -> bool {
        match &self.kind {
            MboxKind::Indirect(m) => match &**m {
                IndirectMbox::Named(n) => n.has_subscribers(&std::any::TypeId::of::<M>()),
                IndirectMbox::Custom(_) => true,
            },
            _ => true,
        }
    }

    /// Whether this is a custom mailbox (agents cannot subscribe to it).
    /// The agent this mailbox is the direct mailbox of (its id), if it is one.
    pub(crate) fn agent_id(&self) -> Option<MboxId> {
        match &self.kind {
            MboxKind::Direct(cell) => Some(cell.mbox_id()),
            MboxKind::Indirect(_) => None,
        }
    }

    pub(crate) fn is_custom(&self) -> bool {
        matches!(&self.kind, MboxKind::Indirect(m) if matches!(**m, IndirectMbox::Custom(_)))
    }

    /// Delivers an already built envelope (immutable or mutable) as `send`/`send_mut` would:
    /// a forwarded message, or one redirected or transformed by a message limit, `depth`
    /// hops away from its first mailbox. A mutable message for a multi-consumer mailbox is
    /// refused (and dropped).
    /// Whether [`Mbox::deliver_envelope`] takes `msg` (a mutable message needs a mailbox
    /// with one consumer).
    pub(crate) fn takes(&self, msg: &Envelope) -> bool {
        match &self.kind {
            MboxKind::Direct(_) => true,
            MboxKind::Indirect(m) => match &**m {
                IndirectMbox::Named(n) => !msg.is_mutable() || n.is_single_consumer(),
                IndirectMbox::Custom(t) => !msg.is_mutable() || t.accepts_mutable(),
            },
        }
    }

    pub(crate) fn deliver_envelope(&self, msg: Envelope, depth: u8) -> Result<(), SendError> {
        match &self.kind {
            MboxKind::Direct(cell) => {
                deliver(cell, cell.mbox_id(), msg, depth);
                Ok(())
            }
            MboxKind::Indirect(m) => match &**m {
                IndirectMbox::Named(n) if !msg.is_mutable() || n.is_single_consumer() => {
                    n.route(msg, depth);
                    Ok(())
                }
                IndirectMbox::Custom(t) if !msg.is_mutable() || t.accepts_mutable() => {
                    t.deliver(AnyMessage::from_envelope(msg));
                    Ok(())
                }
                _ => Err(SendError::MutableToMultiConsumer {
                    message_type: msg.type_name(),
                    mailbox: m.name().unwrap_or("<anonymous>").to_string(),
                }),
            },
        }
    }

    /// Sends an immutable message: its handlers receive `&M`. On a multi-consumer mailbox,
    /// every subscriber of `M` receives it (sharing one allocation), hence `M: Sync`.
    ///
    /// Never fails for the sender: a message that cannot be delivered (the receiver is gone,
    /// nobody subscribed) is counted as a dead letter (see
    /// [`Environment::dead_letters`](crate::Environment::dead_letters)).
    // Always inlined: out of line, each send from a handler paid a call frame that cost about
    // as much as the push itself does when the receiver runs on the same thread.
    #[inline(always)]
    pub fn send<M: Send + Sync + 'static>(&self, msg: M) {
        if trace::on() {
            self.trace_sent(std::any::type_name::<M>());
        }
        match &self.kind {
            MboxKind::Direct(cell) => deliver(cell, cell.mbox_id(), Envelope::immutable(msg), 0),
            MboxKind::Indirect(m) => match &**m {
                IndirectMbox::Named(n) => n.publish(msg),
                IndirectMbox::Custom(t) => {
                    t.deliver(AnyMessage::from_envelope(Envelope::immutable(msg)))
                }
            },
        }
    }

    /// [`Mbox::send`] for a message already in its box: to a direct mailbox the box becomes
    /// the envelope's; any other path (tracing, 1:N, custom) is `send`'s, with the message
    /// taken out of its box.
    #[inline]
    pub(crate) fn send_boxed<M: Send + Sync + 'static>(&self, msg: Box<M>) {
        match &self.kind {
            MboxKind::Direct(cell) if !trace::on() => {
                deliver(cell, cell.mbox_id(), Envelope::immutable_boxed(msg), 0)
            }
            _ => self.send(*msg),
        }
    }

    /// Sends a mutable message: its one receiver's handler (subscribed with
    /// [`Context::on_mut`](crate::Context::on_mut) or
    /// [`Context::subscribe_mut`](crate::Context::subscribe_mut)) takes it by value. Only a
    /// single-consumer mailbox (an agent's direct mailbox, or a unique-subscribers mailbox
    /// from [`Environment::unique_subscribers_mbox`](crate::Environment::unique_subscribers_mbox))
    /// can carry one: a multi-consumer mailbox refuses it with
    /// [`SendError::MutableToMultiConsumer`] (and the message is dropped).
    #[inline]
    pub fn send_mut<M: Send + 'static>(&self, msg: M) -> Result<(), SendError> {
        if trace::on() {
            self.trace_sent(std::any::type_name::<crate::Mutable<M>>());
        }
        match &self.kind {
            MboxKind::Direct(cell) => {
                deliver(cell, cell.mbox_id(), Envelope::mutable(msg), 0);
                Ok(())
            }
            MboxKind::Indirect(_) => self.deliver_envelope(Envelope::mutable(msg), 0),
        }
    }

    /// This mailbox's identity.
    pub fn id(&self) -> MboxId {
        match &self.kind {
            MboxKind::Direct(cell) => cell.mbox_id(),
            MboxKind::Indirect(m) => m.id(),
        }
    }

    /// The name of a named mailbox.
    pub fn name(&self) -> Option<&str> {
        match &self.kind {
            MboxKind::Direct(_) => None,
            MboxKind::Indirect(m) => m.name(),
        }
    }
}

impl fmt::Debug for Mbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            MboxKind::Direct(_) => write!(f, "Mbox::Direct({:#x})", self.id().0),
            MboxKind::Indirect(m) => match (&**m, m.name()) {
                (IndirectMbox::Named(_), Some(n)) => write!(f, "Mbox::Named({n:?})"),
                (IndirectMbox::Named(_), None) => write!(f, "Mbox::Anonymous({:#x})", self.id().0),
                (IndirectMbox::Custom(_), Some(n)) => write!(f, "Mbox::Custom({n:?})"),
                (IndirectMbox::Custom(_), None) => write!(f, "Mbox::Custom({:#x})", self.id().0),
            },
        }
    }
}

impl PartialEq for Mbox {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}
impl Eq for Mbox {}
