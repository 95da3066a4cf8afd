//! The chain itself: a queue under a `Mutex`, the waiters to wake, the drop counters, and
//! the [`Mchain`] handle with its [`Mbox`] face.

use super::asynch::{Received, Wakers, unlock_and_wake};
use super::error::MchainError;
use super::notify::Notify;
use super::params::{MchainParams, Overflow};
use crate::mailbox::custom::{AnyMessage, CustomMbox};
use crate::mailbox::dead_letter::{DeadLetter, DeliveryFailure};
use crate::mailbox::{Mbox, MboxId};
use crate::runtime::env::EnvShared;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Poll, Waker};
use std::time::Instant;

/// What became of a message a chain accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Queued.
    Queued,
    /// The chain was full: this message was dropped ([`Overflow::DropNewest`]).
    DroppedNewest,
    /// The chain was full: the oldest message was removed and this one queued
    /// ([`Overflow::RemoveOldest`]).
    RemovedOldest,
}

/// What a chain has dropped or refused so far (every loss is counted here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MchainStats {
    /// Messages queued so far.
    pub queued: u64,
    /// New messages dropped because the chain was full ([`Overflow::DropNewest`]).
    pub dropped_newest: u64,
    /// Old messages removed to make room ([`Overflow::RemoveOldest`]).
    pub removed_oldest: u64,
    /// Sends refused because the chain was full ([`Overflow::Error`]).
    pub refused_full: u64,
    /// Sends refused because the chain was closed.
    pub refused_closed: u64,
    /// Messages dropped by [`Mchain::close_drop_content`].
    pub dropped_on_close: u64,
    /// Messages extracted by a receive that had no handler for their type.
    pub unhandled: u64,
}

#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    dropped_newest: AtomicU64,
    removed_oldest: AtomicU64,
    refused_full: AtomicU64,
    refused_closed: AtomicU64,
    dropped_on_close: AtomicU64,
    unhandled: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

struct State {
    queue: VecDeque<AnyMessage>,
    closed: bool,
    /// Receivers, selects and blocked senders to wake on any change.
    waiters: Vec<Arc<Notify>>,
    /// Futures waiting for a message ([`Mchain::recv_async`], [`Mchain::stream`]).
    recv_wakers: Wakers,
    /// Futures waiting for room ([`Mchain::send_async`]).
    send_wakers: Wakers,
}

impl State {
    fn wake(&self) {
        for w in &self.waiters {
            w.signal();
        }
    }

    /// Releases the lock after a send, waking the receiving futures if any wait.
    #[inline]
    fn unlock_waking_receivers(st: MutexGuard<'_, Self>) {
        if st.recv_wakers.any() {
            unlock_and_wake(st, |s: &mut State| &mut s.recv_wakers);
        }
    }
}

/// One extraction attempt.
pub(crate) enum Pop {
    Message(AnyMessage),
    Empty,
    /// Closed and drained: nothing will ever come.
    Closed,
}

/// One non-blocking send attempt (select's send case).
pub(crate) enum TryPush {
    Pushed,
    Full(AnyMessage),
    Closed,
}

pub(crate) struct ChainInner {
    state: Mutex<State>,
    params: MchainParams,
    counters: Counters,
    env: Weak<EnvShared>,
    /// Live [`Mchain`] handles: the chain closes when the last one is dropped (nobody could
    /// receive from it any more, save the streams it already gave out).
    handles: AtomicUsize,
    /// The id of the chain's mailbox (set once it exists), for its dead letters.
    mbox_id: OnceLock<MboxId>,
}

/// Reports a message the chain refuses, before it is dropped (a send through the chain's
/// mailbox: a dead letter).
type Refused<'a> = Option<&'a dyn Fn(&AnyMessage, DeliveryFailure)>;

impl ChainInner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_full(&self, st: &State) -> bool {
        self.params.capacity.is_some_and(|c| st.queue.len() >= c)
    }

    /// Sends `msg` as configured: queue it, or wait for room, then react to overflow.
    /// Messages are dropped after the lock is released (a dropped request wakes its
    /// requester, which may send to this very chain).
    pub(crate) fn push(&self, msg: AnyMessage) -> Result<Sent, MchainError> {
        self.push_reporting(msg, None)
    }

    /// As [`ChainInner::push`], telling `refused` of a message it refuses (closed, or full
    /// with [`Overflow::Error`]) before dropping it.
    fn push_reporting(&self, msg: AnyMessage, refused: Refused<'_>) -> Result<Sent, MchainError> {
        let mut st = self.lock();
        if !st.closed && self.is_full(&st) && self.params.wait_on_full.is_some() {
            st = self.wait_for_room(st);
        }
        self.push_locked(st, msg, refused)
    }

    /// Queues `msg` now, or applies the overflow reaction to it; releases the lock.
    #[inline]
    fn push_locked(
        &self,
        mut st: MutexGuard<'_, State>,
        msg: AnyMessage,
        refused: Refused<'_>,
    ) -> Result<Sent, MchainError> {
        if st.closed {
            drop(st);
            return Err(self.refuse_closed(msg, refused));
        }
        if !self.is_full(&st) {
            st.queue.push_back(msg);
            bump(&self.counters.queued);
            st.wake();
            State::unlock_waking_receivers(st);
            return Ok(Sent::Queued);
        }
        let capacity = self.params.capacity.unwrap_or(usize::MAX);
        match self.params.overflow {
            Overflow::DropNewest => {
                drop(st);
                bump(&self.counters.dropped_newest);
                crate::mailbox::request::drop_with_reason(msg, DeliveryFailure::ChainFull);
                Ok(Sent::DroppedNewest)
            }
            Overflow::RemoveOldest => {
                let oldest = st.queue.pop_front();
                st.queue.push_back(msg);
                bump(&self.counters.queued);
                st.wake();
                State::unlock_waking_receivers(st);
                bump(&self.counters.removed_oldest);
                crate::mailbox::request::drop_with_reason(oldest, DeliveryFailure::ChainFull);
                Ok(Sent::RemovedOldest)
            }
            Overflow::Error => {
                drop(st);
                bump(&self.counters.refused_full);
                let message_type = msg.type_name();
                if let Some(report) = refused {
                    report(&msg, DeliveryFailure::ChainFull);
                }
                crate::mailbox::request::drop_with_reason(msg, DeliveryFailure::ChainFull);
                Err(MchainError::Full {
                    message_type,
                    capacity,
                })
            }
            Overflow::Abort => {
                let name = self.params.name.as_deref().unwrap_or("<anonymous>");
                tracing::error!(
                    chain = name,
                    capacity,
                    message_type = msg.type_name(),
                    "message chain overflow with Overflow::Abort: aborting"
                );
                eprintln!(
                    "cohort: message chain `{name}` full ({capacity} messages) with Overflow::Abort: aborting the process"
                );
                std::process::abort()
            }
        }
    }

    /// Waits (at most `wait_on_full`) until the chain has room or is closed.
    fn wait_for_room<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let deadline = self.params.wait_on_full.map(|d| Instant::now() + d);
        let me = Notify::new();
        st.waiters.push(me.clone());
        while !st.closed && self.is_full(&st) {
            // Read under the chain's lock: every later change signals past it.
            let seen = me.generation();
            drop(st);
            let in_time = me.wait_past(seen, deadline);
            st = self.lock();
            if !in_time {
                break;
            }
        }
        st.waiters.retain(|w| !Arc::ptr_eq(w, &me));
        st
    }

    fn refuse_closed(&self, msg: AnyMessage, refused: Refused<'_>) -> MchainError {
        bump(&self.counters.refused_closed);
        let message_type = msg.type_name();
        if let Some(report) = refused {
            report(&msg, DeliveryFailure::ChainClosed);
        }
        crate::mailbox::request::drop_with_reason(msg, DeliveryFailure::ChainClosed);
        MchainError::Closed { message_type }
    }

    /// Queues `msg` only if there is room now (select's send case: no overflow reaction).
    pub(crate) fn try_push(&self, msg: AnyMessage) -> TryPush {
        let mut st = self.lock();
        if st.closed {
            drop(st);
            self.refuse_closed(msg, None);
            return TryPush::Closed;
        }
        if self.is_full(&st) {
            return TryPush::Full(msg);
        }
        st.queue.push_back(msg);
        bump(&self.counters.queued);
        st.wake();
        State::unlock_waking_receivers(st);
        TryPush::Pushed
    }

    pub(crate) fn pop(&self) -> Pop {
        let mut st = self.lock();
        match st.queue.pop_front() {
            Some(m) => {
                self.made_room(st);
                Pop::Message(m)
            }
            None if st.closed => Pop::Closed,
            None => Pop::Empty,
        }
    }

    /// After a message was taken out: wakes the senders waiting for room (blocked threads
    /// and futures), releasing the lock first for the futures.
    #[inline]
    fn made_room(&self, st: MutexGuard<'_, State>) {
        if self.params.capacity.is_some() {
            st.wake();
            if st.send_wakers.any() {
                unlock_and_wake(st, |s: &mut State| &mut s.send_wakers);
            }
        }
    }

    /// A receiving future's poll: the oldest message, or `Closed`, or its waker registered
    /// (under the lock the look took, so no send between the look and the registration is
    /// missed).
    pub(crate) fn poll_pop(&self, slot: &mut Option<u64>, waker: &Waker) -> Poll<Received> {
        let mut st = self.lock();
        let got = st.queue.pop_front();
        if got.is_none() && !st.closed {
            st.recv_wakers.register(slot, waker);
            return Poll::Pending;
        }
        if slot.is_some() {
            st.recv_wakers.withdraw(slot);
        }
        match got {
            Some(m) => {
                self.made_room(st);
                Poll::Ready(Received::Message(m))
            }
            None => Poll::Ready(Received::Closed),
        }
    }

    /// A sending future's poll: `msg` sent (or refused) now, or, on a full chain that waits
    /// for room, its waker registered.
    pub(crate) fn poll_push(
        &self,
        msg: &mut Option<AnyMessage>,
        slot: &mut Option<u64>,
        waker: &Waker,
    ) -> Poll<Result<Sent, MchainError>> {
        let mut st = self.lock();
        let Some(m) = msg.take() else {
            // Polled after completion: the message went already.
            return Poll::Ready(Ok(Sent::Queued));
        };
        if !st.closed && self.is_full(&st) && self.params.wait_on_full.is_some() {
            st.send_wakers.register(slot, waker);
            *msg = Some(m);
            return Poll::Pending;
        }
        if slot.is_some() {
            st.send_wakers.withdraw(slot);
        }
        Poll::Ready(self.push_locked(st, m, None))
    }

    pub(crate) fn withdraw_recv(&self, slot: &mut Option<u64>) {
        self.lock().recv_wakers.withdraw(slot);
    }

    pub(crate) fn withdraw_send(&self, slot: &mut Option<u64>) {
        self.lock().send_wakers.withdraw(slot);
    }

    /// Registers `n` to be signalled on every change; its current generation, read under
    /// the chain's lock.
    pub(crate) fn add_waiter(&self, n: &Arc<Notify>) {
        self.lock().waiters.push(n.clone());
    }

    pub(crate) fn remove_waiter(&self, n: &Arc<Notify>) {
        self.lock().waiters.retain(|w| !Arc::ptr_eq(w, n));
    }

    pub(crate) fn count_unhandled(&self) {
        bump(&self.counters.unhandled);
    }

    fn close(&self, drop_content: bool) {
        let mut st = self.lock();
        st.closed = true;
        let dropped = if drop_content {
            std::mem::take(&mut st.queue)
        } else {
            VecDeque::new()
        };
        st.wake();
        let recv = std::mem::take(&mut st.recv_wakers);
        let send = std::mem::take(&mut st.send_wakers);
        drop(st);
        recv.wake_all();
        send.wake_all();
        self.counters
            .dropped_on_close
            .fetch_add(dropped.len() as u64, Ordering::Relaxed);
        for m in dropped {
            crate::mailbox::request::drop_with_reason(m, DeliveryFailure::ChainClosed);
        }
    }
}

/// A message chain: a channel that plain threads and agents share (SObjectizer's mchain).
///
/// Create one with [`Environment::create_mchain`](crate::Environment::create_mchain); clone
/// the handle freely. Threads send with [`Mchain::send`]; agents send to
/// [`Mchain::as_mbox`] like to any mailbox; anyone receives with
/// [`receive`](crate::mchain::receive()) or [`select`](crate::mchain::select).
///
/// ```
/// use cohort::mchain::{from, receive, Handlers, MchainParams, StopReason};
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
/// let producer = {
///     let chain = chain.clone();
///     std::thread::spawn(move || {
///         for i in 0..10u32 {
///             chain.send(i).unwrap();
///         }
///         chain.close_retain_content();
///     })
/// };
/// let mut sum = 0;
/// let r = receive(from(&chain), &mut Handlers::new().on(|n: &u32| sum += n));
/// producer.join().unwrap();
/// assert_eq!((r.handled, r.stop), (10, StopReason::Closed));
/// assert_eq!(sum, 45);
/// ```
pub struct Mchain {
    pub(crate) inner: Arc<ChainInner>,
    mbox: Mbox,
}

/// The chain's face as a mailbox.
struct ChainMbox(Arc<ChainInner>);

impl CustomMbox for ChainMbox {
    fn deliver(&self, msg: AnyMessage) {
        let chain = &self.0;
        let report = |m: &AnyMessage, why: DeliveryFailure| {
            if let Some(env) = chain.env.upgrade() {
                let mbox = chain.mbox_id.get().copied();
                env.dead_letter_with(&DeadLetter::of(m.envelope(), why, mbox, None));
            }
        };
        let _ = chain.push_reporting(msg, Some(&report));
    }

    fn accepts_mutable(&self) -> bool {
        true
    }

    fn name(&self) -> Option<&str> {
        self.0.params.name.as_deref()
    }
}

impl Mchain {
    pub(crate) fn new(params: MchainParams, env: Weak<EnvShared>) -> Result<Self, MchainError> {
        let queue = match params.capacity {
            Some(0) => return Err(MchainError::ZeroCapacity),
            Some(n) if params.preallocated => VecDeque::with_capacity(n),
            None if params.preallocated => return Err(MchainError::PreallocatedUnbounded),
            _ => VecDeque::new(),
        };
        let inner = Arc::new(ChainInner {
            state: Mutex::new(State {
                queue,
                closed: false,
                waiters: Vec::new(),
                recv_wakers: Wakers::default(),
                send_wakers: Wakers::default(),
            }),
            params,
            counters: Counters::default(),
            env,
            handles: AtomicUsize::new(1),
            mbox_id: OnceLock::new(),
        });
        let mbox = Mbox::custom(ChainMbox(inner.clone()));
        let _ = inner.mbox_id.set(mbox.id());
        Ok(Self { inner, mbox })
    }

    /// Sends an immutable message (handled by `&M`). Waits and overflows as configured.
    ///
    /// Errors: [`MchainError::Closed`] once the chain is closed, [`MchainError::Full`] when
    /// full with [`Overflow::Error`]. The refused message is dropped and counted.
    pub fn send<M: Send + Sync + 'static>(&self, msg: M) -> Result<Sent, MchainError> {
        self.inner.push(AnyMessage::new(msg))
    }

    /// Sends a mutable message (handled by value, see
    /// [`Handlers::on_mut`](crate::mchain::Handlers::on_mut)).
    pub fn send_mut<M: Send + 'static>(&self, msg: M) -> Result<Sent, MchainError> {
        self.inner.push(AnyMessage::new_mut(msg))
    }

    /// The chain as a mailbox: `send`, `send_mut` and requests' reply address. A message the
    /// chain refuses there (closed, or full with [`Overflow::Error`]) is a dead letter of the
    /// environment ([`DeliveryFailure::ChainClosed`] / [`DeliveryFailure::ChainFull`]) and
    /// counted in [`Mchain::stats`] too.
    ///
    /// ```
    /// use cohort::mchain::MchainParams;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
    /// chain.as_mbox().send(1u8);
    /// chain.close_drop_content();
    /// chain.as_mbox().send(2u8);
    /// assert_eq!(env.dead_letters(), 1);
    /// assert_eq!(chain.stats().dropped_on_close, 1);
    /// ```
    pub fn as_mbox(&self) -> Mbox {
        self.mbox.clone()
    }

    /// Closes the chain; messages already in it can still be received. Receivers wait no
    /// more once it is drained; waiting senders wake and fail.
    pub fn close_retain_content(&self) {
        self.inner.close(false)
    }

    /// Closes the chain and drops the messages in it (counted in `dropped_on_close`).
    pub fn close_drop_content(&self) {
        self.inner.close(true)
    }

    /// Whether the chain was closed.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }

    /// Number of messages in the chain.
    pub fn len(&self) -> usize {
        self.inner.lock().queue.len()
    }

    /// Whether the chain holds no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of threads and futures waiting on this chain right now (receivers, selects,
    /// senders blocked on a full chain, futures of [`recv_async`](Mchain::recv_async),
    /// [`stream`](Mchain::stream) and [`send_async`](Mchain::send_async) that found nothing
    /// to do): for diagnostics and tests.
    pub fn waiters(&self) -> usize {
        let st = self.inner.lock();
        st.waiters.len() + st.recv_wakers.len() + st.send_wakers.len()
    }

    /// The bound, if any.
    pub fn capacity(&self) -> Option<usize> {
        self.inner.params.capacity
    }

    /// What the chain has queued, dropped and refused so far.
    pub fn stats(&self) -> MchainStats {
        let c = &self.inner.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        MchainStats {
            queued: l(&c.queued),
            dropped_newest: l(&c.dropped_newest),
            removed_oldest: l(&c.removed_oldest),
            refused_full: l(&c.refused_full),
            refused_closed: l(&c.refused_closed),
            dropped_on_close: l(&c.dropped_on_close),
            unhandled: l(&c.unhandled),
        }
    }
}

impl Clone for Mchain {
    fn clone(&self) -> Self {
        self.inner.handles.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: self.inner.clone(),
            mbox: self.mbox.clone(),
        }
    }
}

impl Drop for Mchain {
    /// The last handle closes the chain, keeping its content for the streams still reading
    /// it; later sends through its mailbox become counted dead letters.
    fn drop(&mut self) {
        if self.inner.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.close(false);
        }
    }
}

impl fmt::Debug for Mchain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mchain")
            .field("name", &self.inner.params.name)
            .field("capacity", &self.inner.params.capacity)
            .field("len", &self.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}
