//! Request/reply: send a request to any mailbox and get its typed reply, as a blocking wait
//! from a plain thread or as a `Future`.
//!
//! A request travels as an ordinary immutable message, a [`Request<Req, Reply>`], holding the
//! request and where the reply goes: a [`PendingReply`] slot (for [`Mbox::request`]) or a
//! mailbox (for [`Mbox::request_to`], e.g. a message chain's). The receiver answers with
//! [`Request::reply`]; agents subscribe with [`Context::on_request`](crate::Context::on_request),
//! chain receivers with [`Handlers::on_request`](crate::mchain::Handlers::on_request). The
//! reply's type is the request's type parameter, so a mismatch cannot compile.
//!
//! A request dropped without a reply completes its slot with an error: the runtime says
//! why when it drops it as a dead letter ([`RequestError::ReceiverGone`],
//! [`RequestError::NoHandler`]), otherwise [`RequestError::NotReplied`].

use crate::mailbox::Mbox;
use crate::mailbox::dead_letter::DeliveryFailure;
use crate::sync::HandOffCell;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

/// Why a request got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// No reply within the time given to [`PendingReply::wait`].
    #[error("no reply within {0:?}: the receiver is slow or blocked; wait longer or check it")]
    Timeout(Duration),
    /// The receiver is gone (its cooperation deregistered, its chain closed or full).
    #[error(
        "the receiver is gone (deregistered, or its chain closed or full): send requests to a live receiver"
    )]
    ReceiverGone,
    /// The receiver has no handler for this request type (or nobody subscribed to it on a
    /// multi-consumer mailbox).
    #[error(
        "the receiver has no handler for this request: subscribe it with `Context::on_request::<Req, Reply>`"
    )]
    NoHandler,
    /// The request was dropped without a reply for another reason: the handler returned
    /// (or panicked) without replying, or the message was discarded at shutdown or by a chain.
    #[error(
        "the request was dropped without a reply (the handler did not reply, or the message was discarded)"
    )]
    NotReplied,
    /// The runtime refused the request on its way to a handler: the receiver's message limit
    /// was reached, a limit's redirect looped, a delivery filter or transform panicked.
    #[error(
        "the request was refused on its way ({0}): raise the receiver's message limit or fix the redirect, filter or transform"
    )]
    Refused(DeliveryFailure),
    /// The connection to the receiver's node broke after the request was written to it
    /// (`cohort-remote`): it may have been handled there, or not; its reply cannot come.
    #[error(
        "the connection to the receiver's node broke after the request was sent: it may or may not have been handled; ask again only if that is safe"
    )]
    InDoubt,
}

thread_local! {
    /// Why the runtime is dropping a message on this thread, while it does (read by
    /// `Request::drop`).
    static DROP_REASON: Cell<Option<DeliveryFailure>> = const { Cell::new(None) };
}

/// Drops `msg` telling a request inside it why (on the cold dead-letter path only).
pub(crate) fn drop_with_reason<T>(msg: T, why: DeliveryFailure) {
    let before = DROP_REASON.with(|r| r.replace(Some(why)));
    drop(msg);
    DROP_REASON.with(|r| r.set(before));
}

fn current_drop_error() -> RequestError {
    match DROP_REASON.with(Cell::get) {
        Some(
            DeliveryFailure::ReceiverGone
            | DeliveryFailure::NotRegistered
            | DeliveryFailure::ChainClosed
            | DeliveryFailure::ChainFull
            | DeliveryFailure::NodeDown,
        ) => RequestError::ReceiverGone,
        Some(
            DeliveryFailure::NoHandler
            | DeliveryFailure::NoSubscriber
            | DeliveryFailure::TransferLoop,
        ) => RequestError::NoHandler,
        Some(
            why @ (DeliveryFailure::LimitReached
            | DeliveryFailure::RedirectLoop
            | DeliveryFailure::MutableToMultiConsumer
            | DeliveryFailure::TransformPanicked
            | DeliveryFailure::FilterPanicked
            | DeliveryFailure::OutboundFull
            | DeliveryFailure::NotRegisteredForRemote
            | DeliveryFailure::NotExported
            | DeliveryFailure::RemoteCodec
            | DeliveryFailure::AccessDenied),
        ) => RequestError::Refused(why),
        Some(DeliveryFailure::InDoubt) => RequestError::InDoubt,
        None => RequestError::NotReplied,
    }
}

struct SlotState<Reply> {
    result: Option<Result<Reply, RequestError>>,
    waker: Option<Waker>,
}

/// Where a reply lands: filled once, by the reply or by the request's drop.
struct Slot<Reply> {
    state: Mutex<SlotState<Reply>>,
    cv: Condvar,
    /// Set (release) once `result` is filled: what a spinning waiter polls without the lock.
    ready: AtomicBool,
}

impl<Reply> Slot<Reply> {
    fn complete(&self, r: Result<Reply, RequestError>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.result.is_none() {
            st.result = Some(r);
        }
        self.ready.store(true, Ordering::Release);
        let waker = st.waker.take();
        self.cv.notify_all();
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// Where the outcome of a request goes when nobody waits for it in a [`PendingReply`]: an
/// agent's non-blocking ask ([`Context::request`](crate::Context::request)), or a bridge
/// that carries the outcome elsewhere (`cohort-remote` sends it back to the asking node).
///
/// ```
/// use cohort::mchain::{from, receive, Handlers, MchainParams};
/// use cohort::{ReplyHook, Request, RequestError};
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Default)]
/// struct Keep(Mutex<Vec<Result<u8, RequestError>>>);
/// impl ReplyHook<u8> for Keep {
///     fn complete(&self, outcome: Result<u8, RequestError>) {
///         self.0.lock().unwrap().push(outcome);
///     }
/// }
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
/// let kept = Arc::new(Keep::default());
/// chain.as_mbox().send(Request::<u8, u8>::with_hook(1, kept.clone()));
/// drop(Request::<u8, u8>::with_hook(2, kept.clone())); // dropped unanswered
/// receive(
///     from(&chain).handle_n(1),
///     &mut Handlers::new().on(|r: &Request<u8, u8>| { r.reply(r.payload() + 1); }),
/// );
/// assert_eq!(*kept.0.lock().unwrap(), vec![Err(RequestError::NotReplied), Ok(2)]);
/// ```
pub trait ReplyHook<Reply>: Send + Sync {
    /// The reply, or why there is none; called at most once per request.
    fn complete(&self, outcome: Result<Reply, RequestError>);
}

/// Where an agent's ask without a timeout takes its outcome: owned by its request alone
/// (nothing else can settle it), so handing it the outcome takes no lock and no shared count.
pub(crate) trait Answer<Reply>: Send {
    /// The reply, or why there is none; taking the target by value makes it happen once.
    fn answer(self: Box<Self>, outcome: Result<Reply, RequestError>);

    /// The reply (the common outcome), passed as itself: no `Result` made on the stack
    /// for the callee to copy out.
    fn reply(self: Box<Self>, reply: Reply);
}

enum ReplyTo<Reply> {
    Slot(Arc<Slot<Reply>>),
    /// Whoever asked wants the outcome handed to it (a bridge, an ask with a timeout).
    Hook(Arc<dyn ReplyHook<Reply>>),
    /// The request owns where its outcome goes (an agent's ask without a timeout).
    Ask(Box<dyn Answer<Reply>>),
    /// A mailbox and the function that sends a `Reply` to it (instantiated where
    /// `Reply: Sync` is known).
    Mbox(Mbox, fn(&Mbox, Reply)),
}

/// A request in flight: what the receiver's handler gets. Answer it with
/// [`Request::reply`] (once; later replies are ignored), or take a [`Responder`] with
/// [`Request::defer`] to answer after the handler has returned.
///
/// ```
/// use cohort::mchain::{from, receive, Handlers, MchainParams};
/// use cohort::Request;
/// use std::time::Duration;
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
/// let pending = chain.as_mbox().request::<u32, String>(7);
/// receive(
///     from(&chain).handle_n(1),
///     &mut Handlers::new().on(|r: &Request<u32, String>| {
///         r.reply(format!("got {}", r.payload()));
///     }),
/// );
/// assert_eq!(pending.wait(Duration::from_secs(5)).unwrap(), "got 7");
/// ```
pub struct Request<Req, Reply> {
    req: Req,
    to: Target<Reply>,
}

/// Where a request's outcome goes, taken once: by whoever answers it ([`Request::reply`],
/// [`Request::defer`]) or else by its drop. One swap decides who takes it, where a lock would
/// cost two read-modify-writes on every request.
struct Target<Reply> {
    taken: crate::sync::AtomicBool,
    /// Filled when the request is made; read only by the one taker that turns `taken` on,
    /// or by the request's drop (which has it alone).
    to: HandOffCell<Option<ReplyTo<Reply>>>,
}

// SAFETY: the cell is touched by one thread only: the one that turned `taken` on, or the
// request's drop, which needs `&mut`; what it holds (`ReplyTo`) is `Send`.
unsafe impl<Reply> Sync for Target<Reply> where ReplyTo<Reply>: Send {}

impl<Reply> Target<Reply> {
    fn new(to: ReplyTo<Reply>) -> Self {
        Self {
            taken: crate::sync::AtomicBool::new(false),
            to: HandOffCell::new(Some(to)),
        }
    }

    fn take(&self) -> Option<ReplyTo<Reply>> {
        if self.taken.swap(true, crate::sync::Ordering::Acquire) {
            return None;
        }
        // SAFETY: only the one caller that turned `taken` on gets here, and the only other
        // user of the cell is the drop, which has the request alone.
        unsafe { self.to.with_mut(Option::take) }
    }

    fn take_mut(&mut self) -> Option<ReplyTo<Reply>> {
        // SAFETY: `&mut self`: no other thread holds the request.
        unsafe { self.to.with_mut(Option::take) }
    }
}

impl<Req, Reply> Request<Req, Reply> {
    fn new(req: Req, to: ReplyTo<Reply>) -> Self {
        Self {
            req,
            to: Target::new(to),
        }
    }

    /// A request whose outcome (the reply, or why there is none) goes to `hook`, once.
    pub fn with_hook(req: Req, hook: Arc<dyn ReplyHook<Reply>>) -> Self {
        Self::new(req, ReplyTo::Hook(hook))
    }

    /// A request that owns where its outcome goes: `to` gets it, once.
    pub(crate) fn with_answer(req: Req, to: Box<dyn Answer<Reply>>) -> Self {
        Self::new(req, ReplyTo::Ask(to))
    }

    fn take_target(&self) -> Option<ReplyTo<Reply>> {
        self.to.take()
    }

    /// The request itself.
    pub fn payload(&self) -> &Req {
        &self.req
    }

    /// Sends the reply; false if this request was already answered (or deferred).
    pub fn reply(&self, reply: Reply) -> bool {
        match self.take_target() {
            Some(to) => {
                to.send(reply);
                true
            }
            None => false,
        }
    }

    /// [`Request::reply`] by the request's only holder: nothing else can be taking the
    /// target at the same time, so no swap decides who takes it.
    #[inline]
    pub(crate) fn reply_owned(&mut self, reply: Reply) -> bool {
        match self.to.take_mut() {
            Some(to) => {
                to.send(reply);
                true
            }
            None => false,
        }
    }

    /// Takes the right to answer, to reply later (from another message's handler, another
    /// thread); `None` if already answered or deferred. A [`Responder`] dropped without
    /// replying completes the request with [`RequestError::NotReplied`].
    pub fn defer(&self) -> Option<Responder<Reply>> {
        self.take_target().map(|to| Responder { to: Some(to) })
    }
}

impl<Reply> ReplyTo<Reply> {
    /// Hands over the outcome; a reply mailbox gets a reply only (nothing says why there is
    /// none).
    fn settle(self, outcome: Result<Reply, RequestError>) {
        match self {
            ReplyTo::Slot(s) => s.complete(outcome),
            ReplyTo::Hook(h) => h.complete(outcome),
            ReplyTo::Ask(a) => a.answer(outcome),
            ReplyTo::Mbox(m, send) => {
                if let Ok(reply) = outcome {
                    send(&m, reply)
                }
            }
        }
    }

    fn send(self, reply: Reply) {
        match self {
            ReplyTo::Ask(a) => a.reply(reply),
            other => other.settle(Ok(reply)),
        }
    }

    fn fail(self) {
        self.settle(Err(current_drop_error()))
    }
}

impl<Req, Reply> Drop for Request<Req, Reply> {
    fn drop(&mut self) {
        if let Some(to) = self.to.take_mut() {
            to.fail();
        }
    }
}

impl<Req, Reply> fmt::Debug for Request<Req, Reply> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("request", &std::any::type_name::<Req>())
            .field("reply", &std::any::type_name::<Reply>())
            .finish()
    }
}

/// The right to answer a request later (see [`Request::defer`]).
///
/// ```
/// use cohort::mchain::{from, receive, Handlers, MchainParams};
/// use cohort::{Request, RequestError};
/// use std::time::Duration;
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
/// let first = chain.as_mbox().request::<u8, u8>(1);
/// let second = chain.as_mbox().request::<u8, u8>(2);
/// let mut later = Vec::new();
/// receive(
///     from(&chain).handle_n(2),
///     &mut Handlers::new().on(|r: &Request<u8, u8>| later.extend(r.defer())),
/// );
/// let mut later = later.into_iter();
/// later.next().unwrap().reply(10);
/// drop(later); // the second is never answered
/// assert_eq!(first.wait(Duration::from_secs(5)), Ok(10));
/// assert_eq!(second.wait(Duration::from_secs(5)), Err(RequestError::NotReplied));
/// ```
pub struct Responder<Reply> {
    to: Option<ReplyTo<Reply>>,
}

impl<Reply> Responder<Reply> {
    /// Sends the reply.
    pub fn reply(mut self, reply: Reply) {
        if let Some(to) = self.to.take() {
            to.send(reply)
        }
    }

    /// Completes the request with `why` instead of a reply: what a bridge that passed the
    /// request on (to another node) does when it learns there will be none. A request whose
    /// reply goes to a mailbox ([`Mbox::request_to`]) gets nothing, as when it is dropped.
    pub fn fail(mut self, why: RequestError) {
        if let Some(to) = self.to.take() {
            to.settle(Err(why))
        }
    }
}

impl<Reply> Drop for Responder<Reply> {
    fn drop(&mut self) {
        if let Some(to) = self.to.take() {
            to.fail();
        }
    }
}

impl<Reply> fmt::Debug for Responder<Reply> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("reply", &std::any::type_name::<Reply>())
            .finish()
    }
}

/// The reply to come: wait for it ([`PendingReply::wait`]) from a plain thread, or `.await`
/// it (it is a `Future`; no runtime needed: a waker is all it uses). The future has no
/// timeout of its own: it completes with the reply or with the reason the request was
/// dropped; bound it with your executor's timer if you need one.
///
/// ```
/// use cohort::{Agent, Context, DefineError};
/// use std::time::Duration;
///
/// struct Doubler;
/// impl Agent for Doubler {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         ctx.on_request(|_, n: &u64, _| n * 2)?;
///         Ok(())
///     }
/// }
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let mut coop = env.new_coop();
/// let doubler = coop.add(Doubler).mbox();
/// env.register_coop(coop).unwrap();
/// let reply = doubler.request::<u64, u64>(21).wait(Duration::from_secs(5));
/// assert_eq!(reply, Ok(42));
///
/// // From async code, `.await` it: the task parks, no thread blocks (bound the wait with
/// // the executor's timer).
/// let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
/// let reply = rt.block_on(async {
///     let asked = doubler.request::<u64, u64>(50);
///     tokio::time::timeout(Duration::from_secs(5), asked).await
/// });
/// assert_eq!(reply, Ok(Ok(100)));
/// ```
#[must_use = "a request's reply is only seen by waiting for it or awaiting it"]
pub struct PendingReply<Reply> {
    slot: Arc<Slot<Reply>>,
    spin: Duration,
}

impl<Reply> PendingReply<Reply> {
    /// How long [`wait`](Self::wait) polls for the reply before it sleeps. Default:
    /// [`defaults::REPLY_SPIN`](crate::defaults::REPLY_SPIN); zero sleeps at once (no CPU
    /// burnt while the receiver is slow).
    pub fn spin(mut self, spin: Duration) -> Self {
        self.spin = spin;
        self
    }

    /// Blocks until the reply arrives, the request is dropped unanswered, or `timeout`
    /// passes ([`RequestError::Timeout`]; a reply after that is dropped).
    pub fn wait(self, timeout: Duration) -> Result<Reply, RequestError> {
        if !self.slot.ready.load(Ordering::Acquire) {
            // A handler that waits here ends its turn's deferred work first: the request
            // may be waiting for it (a remote node's writer, woken at the turn's end).
            crate::dispatcher::turn_end::end_turn();
        }
        let start = Instant::now();
        let deadline = start + timeout;
        let spin_until = start + self.spin.min(timeout);
        let mut polls = 0u32;
        while !self.slot.ready.load(Ordering::Acquire) {
            // Reading the clock costs more than a poll: look at it every 64 polls.
            if polls.is_multiple_of(64) && Instant::now() >= spin_until {
                break;
            }
            polls += 1;
            std::hint::spin_loop();
        }
        let mut st = self.slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = st.result.take() {
                return r;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RequestError::Timeout(timeout));
            }
            st = self
                .slot
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The outcome, if there is one already (taken: later calls return `None`).
    pub fn try_take(&mut self) -> Option<Result<Reply, RequestError>> {
        self.slot
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .result
            .take()
    }
}

impl<Reply> Future for PendingReply<Reply> {
    type Output = Result<Reply, RequestError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let mut st = self.slot.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = st.result.take() {
            return Poll::Ready(r);
        }
        match &mut st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            w => *w = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<Reply> fmt::Debug for PendingReply<Reply> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingReply")
            .field("reply", &std::any::type_name::<Reply>())
            .finish()
    }
}

fn send_reply<Reply: Send + Sync + 'static>(to: &Mbox, reply: Reply) {
    to.send(reply)
}

impl Mbox {
    /// Sends `req` as a [`Request<Req, Reply>`] and returns the reply to come. The receiver
    /// subscribes with [`Context::on_request`](crate::Context::on_request) (or handles the
    /// `Request` message itself). An undeliverable request is a dead letter, and its
    /// [`PendingReply`] completes at once with the reason.
    pub fn request<Req, Reply>(&self, req: Req) -> PendingReply<Reply>
    where
        Req: Send + Sync + 'static,
        Reply: Send + 'static,
    {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                result: None,
                waker: None,
            }),
            cv: Condvar::new(),
            ready: AtomicBool::new(false),
        });
        self.send(Request::new(req, ReplyTo::Slot(slot.clone())));
        PendingReply {
            slot,
            spin: crate::defaults::REPLY_SPIN,
        }
    }

    /// Sends `req` as a [`Request<Req, Reply>`] whose reply is sent to `reply_to` (an
    /// immutable `Reply`), e.g. a message chain's mailbox. A request dropped unanswered
    /// sends nothing (it is counted as a dead letter where the runtime drops it).
    ///
    /// ```
    /// use cohort::mchain::{from, receive, Handlers, MchainParams};
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Echo;
    /// impl Agent for Echo {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on_request(|_, s: &String, _| s.len())?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// let echo = coop.add(Echo).mbox();
    /// env.register_coop(coop).unwrap();
    /// let replies = env.create_mchain(MchainParams::unbounded()).unwrap();
    /// echo.request_to::<String, usize>("four".to_string(), &replies.as_mbox());
    /// let mut len = 0;
    /// receive(from(&replies).handle_n(1), &mut Handlers::new().on(|n: &usize| len = *n));
    /// assert_eq!(len, 4);
    /// ```
    pub fn request_to<Req, Reply>(&self, req: Req, reply_to: &Mbox)
    where
        Req: Send + Sync + 'static,
        Reply: Send + Sync + 'static,
    {
        self.send(Request::<Req, Reply>::new(
            req,
            ReplyTo::Mbox(reply_to.clone(), send_reply::<Reply>),
        ));
    }
}

#[cfg(all(test, cohort_loom))]
mod loom_model {
    use super::*;

    /// Keeps every outcome it is handed.
    #[derive(Default)]
    struct Kept(Mutex<Vec<Result<u8, RequestError>>>);
    impl ReplyHook<u8> for Kept {
        fn complete(&self, outcome: Result<u8, RequestError>) {
            self.0.lock().unwrap().push(outcome);
        }
    }

    /// A reply on one thread races a deferral on another, and the request is dropped last:
    /// exactly one of them takes the target (the cell's accesses never race), and the
    /// outcome is handed over once.
    #[test]
    fn loom_model_a_request_is_settled_once() {
        loom::model(|| {
            let kept = Arc::new(Kept::default());
            let request = loom::sync::Arc::new(Request::<u8, u8>::with_hook(0, kept.clone()));
            let other = request.clone();
            let replier = loom::thread::spawn(move || other.reply(1));
            let deferred = request.defer();
            let replied = replier.join().unwrap();
            assert_ne!(replied, deferred.is_some(), "taken twice or never");
            if let Some(responder) = deferred {
                responder.reply(2);
            }
            drop(request);
            let outcomes = kept.0.lock().unwrap().clone();
            assert_eq!(outcomes, vec![Ok(if replied { 1 } else { 2 })]);
        });
    }
}
