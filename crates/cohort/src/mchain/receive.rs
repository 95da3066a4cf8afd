//! `receive` from one chain and `select` over several: the limits that end them and the
//! loop that waits.

use super::chain::{Mchain, Pop, TryPush};
use super::handlers::Handlers;
use super::notify::Notify;
use crate::mailbox::custom::AnyMessage;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// Why a [`receive`] or [`select`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `handle_n` messages were handled (a select counts completed send cases too).
    HandleN,
    /// `extract_n` messages were extracted.
    ExtractN,
    /// Nothing arrived for `empty_timeout` (or at once, with `no_wait`).
    EmptyTimeout,
    /// `total_time` passed.
    TotalTime,
    /// The `stop_on` predicate said stop.
    StopOn,
    /// Every chain is closed and drained (and every send case is done).
    Closed,
}

/// What a [`receive`] or [`select`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiveResult {
    /// Messages taken out of chains.
    pub extracted: usize,
    /// Of those, messages a handler took (the rest had no handler: dropped, counted in the
    /// chain's [`MchainStats::unhandled`](crate::mchain::MchainStats)).
    pub handled: usize,
    /// Messages sent by send cases.
    pub sent: usize,
    /// Why it returned.
    pub stop: StopReason,
}

/// Marks the parameters of a [`select`] (from all of its cases' chains).
#[derive(Debug, Clone, Copy)]
pub struct AllChains;

/// When a [`receive`] or [`select`] returns. Without any limit it runs until its chains are
/// closed and drained. Built by [`from`] (for `receive`) or [`from_all`] (for `select`).
pub struct ReceiveParams<'a, S> {
    source: S,
    handle_n: Option<usize>,
    extract_n: Option<usize>,
    empty_timeout: Option<Duration>,
    total_time: Option<Duration>,
    stop_on: Option<Box<dyn FnMut() -> bool + 'a>>,
    _p: PhantomData<&'a ()>,
}

/// Receive from `chain` (see [`receive`]).
pub fn from(chain: &Mchain) -> ReceiveParams<'_, &Mchain> {
    ReceiveParams::new(chain)
}

/// Receive from every chain of a [`select`]'s cases.
pub fn from_all<'a>() -> ReceiveParams<'a, AllChains> {
    ReceiveParams::new(AllChains)
}

impl<'a, S> ReceiveParams<'a, S> {
    fn new(source: S) -> Self {
        Self {
            source,
            handle_n: None,
            extract_n: None,
            empty_timeout: None,
            total_time: None,
            stop_on: None,
            _p: PhantomData,
        }
    }

    /// Return once `n` messages were handled.
    pub fn handle_n(mut self, n: usize) -> Self {
        self.handle_n = Some(n);
        self
    }

    /// Return once `n` messages were extracted (handled or not).
    pub fn extract_n(mut self, n: usize) -> Self {
        self.extract_n = Some(n);
        self
    }

    /// Return when nothing has arrived for `d` (counted from when the chains were found empty).
    pub fn empty_timeout(mut self, d: Duration) -> Self {
        self.empty_timeout = Some(d);
        self
    }

    /// Return after `d` in all.
    pub fn total_time(mut self, d: Duration) -> Self {
        self.total_time = Some(d);
        self
    }

    /// Return after a handled message when `pred` says so.
    pub fn stop_on(mut self, pred: impl FnMut() -> bool + 'a) -> Self {
        self.stop_on = Some(Box::new(pred));
        self
    }

    /// Never wait: handle what is there and return ([`StopReason::EmptyTimeout`] when the
    /// chains are empty).
    pub fn no_wait(self) -> Self {
        self.empty_timeout(Duration::ZERO)
    }
}

/// One case of a [`select`]: receive from a chain, or send one message to it.
pub struct Case<'a> {
    chain: Mchain,
    kind: CaseKind<'a>,
}

enum CaseKind<'a> {
    Receive {
        handlers: Handlers<'a>,
        closed: bool,
    },
    Send {
        msg: Option<AnyMessage>,
        on_sent: Option<Box<dyn FnOnce() + 'a>>,
    },
}

/// A select case that receives from `chain` with `handlers`.
pub fn receive_case<'a>(chain: &Mchain, handlers: Handlers<'a>) -> Case<'a> {
    Case {
        chain: chain.clone(),
        kind: CaseKind::Receive {
            handlers,
            closed: false,
        },
    }
}

/// A select case that sends `msg` (immutable) to `chain` once it has room, then calls
/// `on_sent`. A closed chain finishes the case without sending (the message is counted in
/// the chain's `refused_closed`).
pub fn send_case<'a, M: Send + Sync + 'static>(
    chain: &Mchain,
    msg: M,
    on_sent: impl FnOnce() + 'a,
) -> Case<'a> {
    send_any(chain, AnyMessage::new(msg), Box::new(on_sent))
}

/// Like [`send_case`], with a mutable message (handled by value by
/// [`Handlers::on_mut`](crate::mchain::Handlers::on_mut)).
pub fn send_case_mut<'a, M: Send + 'static>(
    chain: &Mchain,
    msg: M,
    on_sent: impl FnOnce() + 'a,
) -> Case<'a> {
    send_any(chain, AnyMessage::new_mut(msg), Box::new(on_sent))
}

fn send_any<'a>(chain: &Mchain, msg: AnyMessage, on_sent: Box<dyn FnOnce() + 'a>) -> Case<'a> {
    Case {
        chain: chain.clone(),
        kind: CaseKind::Send {
            msg: Some(msg),
            on_sent: Some(on_sent),
        },
    }
}

impl Case<'_> {
    fn finished(&self) -> bool {
        match &self.kind {
            CaseKind::Receive { closed, .. } => *closed,
            CaseKind::Send { msg, .. } => msg.is_none(),
        }
    }
}

/// Receives from one chain until a limit of `params` is reached.
///
/// ```
/// use cohort::mchain::{from, receive, Handlers, MchainParams, StopReason};
/// use std::time::Duration;
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
/// for i in 0..5u32 { chain.send(i).unwrap(); }
/// let mut seen = Vec::new();
/// let r = receive(
///     from(&chain).extract_n(3).empty_timeout(Duration::from_millis(10)),
///     &mut Handlers::new().on(|n: &u32| seen.push(*n)),
/// );
/// assert_eq!((r.extracted, r.stop), (3, StopReason::ExtractN));
/// let r = receive(from(&chain).no_wait(), &mut Handlers::new().on(|n: &u32| seen.push(*n)));
/// assert_eq!((r.extracted, r.stop), (2, StopReason::EmptyTimeout));
/// assert_eq!(seen, [0, 1, 2, 3, 4]);
/// ```
pub fn receive<'a>(
    params: ReceiveParams<'a, &Mchain>,
    handlers: &mut Handlers<'a>,
) -> ReceiveResult {
    let mut cases = [receive_case(params.source, std::mem::take(handlers))];
    let ReceiveParams {
        handle_n,
        extract_n,
        empty_timeout,
        total_time,
        stop_on,
        ..
    } = params;
    let params = ReceiveParams {
        source: AllChains,
        handle_n,
        extract_n,
        empty_timeout,
        total_time,
        stop_on,
        _p: PhantomData,
    };
    let r = select(params, &mut cases);
    let [case] = cases;
    if let CaseKind::Receive { handlers: h, .. } = case.kind {
        *handlers = h;
    }
    r
}

/// Waits on several chains at once: receive cases handle messages from their chain, send
/// cases send their message once their chain has room. Cases are served in turn (round
/// robin), so a busy chain does not starve the others.
///
/// ```
/// use cohort::mchain::{from_all, receive_case, select, send_case, Handlers, MchainParams};
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let a = env.create_mchain(MchainParams::unbounded()).unwrap();
/// let b = env.create_mchain(MchainParams::bounded(1)).unwrap();
/// a.send(1u32).unwrap();
/// let (mut got, mut sent) = (0, false);
/// let r = select(
///     from_all().handle_n(2),
///     &mut [
///         receive_case(&a, Handlers::new().on(|n: &u32| got = *n)),
///         send_case(&b, "hello", || sent = true),
///     ],
/// );
/// assert_eq!((r.handled, r.sent), (1, 1));
/// assert!(sent);
/// assert_eq!(got, 1);
/// assert_eq!(b.len(), 1);
/// ```
pub fn select<'a>(
    mut params: ReceiveParams<'a, AllChains>,
    cases: &mut [Case<'a>],
) -> ReceiveResult {
    let start = Instant::now();
    let total_deadline = params.total_time.map(|d| start + d);
    let notify = Notify::new();
    for c in cases.iter() {
        c.chain.inner.add_waiter(&notify);
    }
    let mut r = ReceiveResult {
        extracted: 0,
        handled: 0,
        sent: 0,
        stop: StopReason::Closed,
    };
    let mut next = 0;
    let mut empty_since: Option<Instant> = None;
    r.stop = 'run: loop {
        if params.handle_n.is_some_and(|n| r.handled + r.sent >= n) {
            break StopReason::HandleN;
        }
        if params.extract_n.is_some_and(|n| r.extracted >= n) {
            break StopReason::ExtractN;
        }
        let seen = notify.generation();
        // One round over the cases, starting after the one served last.
        let n = cases.len();
        let mut progressed = false;
        for k in 0..n {
            let i = (next + k) % n;
            let case = &mut cases[i];
            match &mut case.kind {
                CaseKind::Receive { handlers, closed } if !*closed => {
                    match case.chain.inner.pop() {
                        Pop::Message(m) => {
                            r.extracted += 1;
                            if handlers.handle_message(m, &case.chain) {
                                r.handled += 1;
                            }
                            next = i + 1;
                            progressed = true;
                        }
                        Pop::Empty => {}
                        Pop::Closed => *closed = true,
                    }
                }
                CaseKind::Send { msg, on_sent } => {
                    if let Some(m) = msg.take() {
                        match case.chain.inner.try_push(m) {
                            TryPush::Pushed => {
                                r.sent += 1;
                                if let Some(f) = on_sent.take() {
                                    f();
                                }
                                next = i + 1;
                                progressed = true;
                            }
                            TryPush::Full(m) => *msg = Some(m),
                            TryPush::Closed => {}
                        }
                    }
                }
                CaseKind::Receive { .. } => {}
            }
            if progressed {
                empty_since = None;
                if let Some(pred) = params.stop_on.as_mut()
                    && pred()
                {
                    break 'run StopReason::StopOn;
                }
                continue 'run;
            }
        }
        if cases.iter().all(Case::finished) {
            break StopReason::Closed;
        }
        let now = Instant::now();
        let since = *empty_since.get_or_insert(now);
        let empty_deadline = params.empty_timeout.map(|d| since + d);
        if total_deadline.is_some_and(|d| now >= d) {
            break StopReason::TotalTime;
        }
        if empty_deadline.is_some_and(|d| now >= d) {
            break StopReason::EmptyTimeout;
        }
        let deadline = match (total_deadline, empty_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        notify.wait_past(seen, deadline);
    };
    for c in cases.iter() {
        c.chain.inner.remove_waiter(&notify);
    }
    r
}

impl Handlers<'_> {
    /// Handles `m` from `chain`; counts it in the chain's `unhandled` if no handler takes it.
    fn handle_message(&mut self, m: AnyMessage, chain: &Mchain) -> bool {
        let handled = self.handle(m);
        if !handled {
            chain.inner.count_unhandled();
        }
        handled
    }
}
