//! Async on the outside: awaiting a chain's messages ([`Mchain::recv_async`], [`MchainStream`])
//! and awaiting room in it ([`Mchain::send_async`]), on any executor (a `Waker` is all they
//! use).
//!
//! A future registers its waker only when it has to wait (the chain empty, or full), under the
//! chain's lock it takes anyway to look; a send, a receive or a close takes the waiting wakers
//! out under that lock and wakes them after releasing it. A chain nobody awaits keeps one empty
//! list per direction: its senders and receivers pay a length test.

use super::chain::{ChainInner, Mchain, Sent};
use super::error::MchainError;
use crate::mailbox::custom::AnyMessage;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The wakers of the futures waiting on one side of a chain, each under an id its future
/// keeps (to replace its waker when polled again, and to withdraw it when dropped).
#[derive(Default)]
pub(crate) struct Wakers {
    next_id: u64,
    list: Vec<(u64, Waker)>,
}

impl Wakers {
    /// Registers (or refreshes) the waker of the future whose id is in `slot`.
    pub(crate) fn register(&mut self, slot: &mut Option<u64>, waker: &Waker) {
        if let Some(id) = *slot
            && let Some(entry) = self.list.iter_mut().find(|e| e.0 == id)
        {
            if !entry.1.will_wake(waker) {
                entry.1 = waker.clone();
            }
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.list.push((id, waker.clone()));
        *slot = Some(id);
    }

    /// Withdraws the registration in `slot`, if it is still there.
    pub(crate) fn withdraw(&mut self, slot: &mut Option<u64>) {
        if let Some(id) = slot.take() {
            self.list.retain(|e| e.0 != id);
        }
    }

    /// Wakes every future in the list (taken out of the chain's lock).
    pub(crate) fn wake_all(self) {
        for (_, w) in self.list {
            w.wake();
        }
    }

    /// Whether a future waits here.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        !self.list.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

/// Releases the chain's lock `guard`, then wakes the futures of the list `which` picks.
/// Taken only when [`Wakers::any`] said some wait: the paths of chains nobody awaits test
/// one length and never come here.
#[cold]
#[inline(never)]
pub(crate) fn unlock_and_wake<G, S>(mut guard: G, which: fn(&mut S) -> &mut Wakers)
where
    G: std::ops::DerefMut<Target = S>,
{
    let list = std::mem::take(&mut which(&mut guard).list);
    drop(guard);
    for (_, w) in list {
        w.wake();
    }
}

/// What [`Mchain::recv_async`] got.
#[derive(Debug)]
pub enum Received {
    /// The chain's oldest message (look at it with [`AnyMessage::downcast_ref`], take it
    /// with [`AnyMessage::downcast`]).
    Message(AnyMessage),
    /// The chain is closed and drained: nothing will ever come.
    Closed,
}

impl Received {
    /// The message, if one came.
    ///
    /// ```
    /// use cohort::mchain::MchainParams;
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
    /// chain.send(5u8).unwrap();
    /// chain.close_retain_content();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let first = rt.block_on(chain.recv_async()).message().unwrap();
    /// assert_eq!(first.downcast_ref::<u8>(), Some(&5));
    /// assert!(rt.block_on(chain.recv_async()).message().is_none());
    /// ```
    pub fn message(self) -> Option<AnyMessage> {
        match self {
            Received::Message(m) => Some(m),
            Received::Closed => None,
        }
    }
}

/// The future of [`Mchain::recv_async`].
#[must_use = "a future does nothing unless awaited"]
pub struct RecvAsync<'a> {
    chain: &'a ChainInner,
    slot: Option<u64>,
}

impl Future for RecvAsync<'_> {
    type Output = Received;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Received> {
        let me = self.get_mut();
        me.chain.poll_pop(&mut me.slot, cx.waker())
    }
}

impl Drop for RecvAsync<'_> {
    fn drop(&mut self) {
        if self.slot.is_some() {
            self.chain.withdraw_recv(&mut self.slot);
        }
    }
}

impl fmt::Debug for RecvAsync<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvAsync")
            .field("waiting", &self.slot.is_some())
            .finish()
    }
}

/// A chain's messages as a [`Stream`](futures_core::Stream) (see [`Mchain::stream`]): it
/// yields them in FIFO order and ends once the chain is closed and drained.
///
/// The stream does not keep the chain open: when the last [`Mchain`] handle is dropped the
/// chain closes (keeping its content), and the stream ends after the messages left in it.
#[must_use = "a stream does nothing unless polled"]
pub struct MchainStream {
    chain: Arc<ChainInner>,
    slot: Option<u64>,
    done: bool,
}

impl futures_core::Stream for MchainStream {
    type Item = AnyMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AnyMessage>> {
        let me = self.get_mut();
        if me.done {
            return Poll::Ready(None);
        }
        me.chain.poll_pop(&mut me.slot, cx.waker()).map(|r| {
            let m = r.message();
            me.done = m.is_none();
            m
        })
    }
}

impl futures_core::FusedStream for MchainStream {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

impl Drop for MchainStream {
    fn drop(&mut self) {
        if self.slot.is_some() {
            self.chain.withdraw_recv(&mut self.slot);
        }
    }
}

impl fmt::Debug for MchainStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MchainStream")
            .field("waiting", &self.slot.is_some())
            .field("ended", &self.done)
            .finish()
    }
}

/// The future of [`Mchain::send_async`].
#[must_use = "a future does nothing unless awaited: the message is not sent"]
pub struct SendAsync<'a> {
    chain: &'a ChainInner,
    msg: Option<AnyMessage>,
    slot: Option<u64>,
}

impl Future for SendAsync<'_> {
    type Output = Result<Sent, MchainError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = self.get_mut();
        me.chain.poll_push(&mut me.msg, &mut me.slot, cx.waker())
    }
}

impl Drop for SendAsync<'_> {
    fn drop(&mut self) {
        if self.slot.is_some() {
            self.chain.withdraw_send(&mut self.slot);
        }
    }
}

impl fmt::Debug for SendAsync<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendAsync")
            .field("waiting", &self.slot.is_some())
            .field("sent", &self.msg.is_none())
            .finish()
    }
}

impl Mchain {
    /// Waits for the chain's next message without blocking a thread: `.await` it on any
    /// executor. Completes with [`Received::Message`] (FIFO order), or [`Received::Closed`]
    /// once the chain is closed and drained (at once if it already is: awaiting a closed
    /// chain never hangs). Dropping the future before it completes takes nothing out.
    ///
    /// ```
    /// use cohort::mchain::{MchainParams, Received};
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let total = rt.block_on(async {
    ///     let producer = {
    ///         let chain = chain.clone();
    ///         std::thread::spawn(move || {
    ///             for n in 1..=3u32 {
    ///                 chain.send(n).unwrap();
    ///             }
    ///             chain.close_retain_content();
    ///         })
    ///     };
    ///     let mut total = 0;
    ///     while let Received::Message(m) = chain.recv_async().await {
    ///         total += m.downcast_ref::<u32>().unwrap();
    ///     }
    ///     producer.join().unwrap();
    ///     total
    /// });
    /// assert_eq!(total, 6);
    /// ```
    pub fn recv_async(&self) -> RecvAsync<'_> {
        RecvAsync {
            chain: &self.inner,
            slot: None,
        }
    }

    /// The chain's messages as a [`futures_core::Stream`] of [`AnyMessage`]s, ending when the
    /// chain is closed and drained. Several streams (and receivers of any kind) on one chain
    /// share its messages: each message goes to one of them.
    ///
    /// The stream does not keep the chain open: when the last `Mchain` handle is dropped,
    /// the chain closes as by [`close_retain_content`](Mchain::close_retain_content).
    ///
    /// ```
    /// use cohort::mchain::MchainParams;
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use futures_core::Stream;
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
    /// let mut stream = chain.stream();
    /// chain.send("a").unwrap();
    /// chain.send("b").unwrap();
    /// drop(chain); // the last handle: the chain closes, keeping "a" and "b"
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let seen = rt.block_on(async {
    ///     let mut seen = Vec::new();
    ///     while let Some(m) = poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await {
    ///         seen.push(*m.downcast_ref::<&str>().unwrap());
    ///     }
    ///     seen
    /// });
    /// assert_eq!(seen, ["a", "b"]);
    /// ```
    pub fn stream(&self) -> MchainStream {
        MchainStream {
            chain: self.inner.clone(),
            slot: None,
            done: false,
        }
    }

    /// Sends an immutable message, waiting for room without blocking a thread: on a full
    /// bounded chain built with [`wait_on_full`](crate::mchain::MchainParams::wait_on_full),
    /// the future waits until a receiver makes room (or the chain closes:
    /// [`MchainError::Closed`]). Everywhere else it completes at once, as [`Mchain::send`]
    /// would (overflow reactions included).
    ///
    /// The wait has no time limit of its own (`wait_on_full`'s duration bounds blocking
    /// sends): bound it with the executor's timer, e.g. `tokio::time::timeout`. A future
    /// dropped before it completes sends nothing, and its message is dropped with it.
    ///
    /// ```
    /// use cohort::mchain::{MchainParams, Sent};
    /// use std::time::Duration;
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let chain = env
    ///     .create_mchain(MchainParams::bounded(1).wait_on_full(Duration::from_secs(1)))
    ///     .unwrap();
    /// chain.send(1u32).unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// // The send waits (the chain is full) until the receive beside it takes `1` out.
    /// let (sent, first) = rt.block_on(async { tokio::join!(chain.send_async(2u32), chain.recv_async()) });
    /// assert_eq!(first.message().unwrap().downcast_ref::<u32>(), Some(&1));
    /// assert_eq!(sent, Ok(Sent::Queued));
    /// assert_eq!(chain.len(), 1);
    /// ```
    pub fn send_async<M: Send + Sync + 'static>(&self, msg: M) -> SendAsync<'_> {
        self.send_any_async(AnyMessage::new(msg))
    }

    /// Like [`send_async`](Mchain::send_async), with a mutable message (handled by value,
    /// see [`Handlers::on_mut`](crate::mchain::Handlers::on_mut)).
    pub fn send_mut_async<M: Send + 'static>(&self, msg: M) -> SendAsync<'_> {
        self.send_any_async(AnyMessage::new_mut(msg))
    }

    fn send_any_async(&self, msg: AnyMessage) -> SendAsync<'_> {
        SendAsync {
            chain: &self.inner,
            msg: Some(msg),
            slot: None,
        }
    }
}
