//! Message chains from async code: `recv_async`, the `Stream`, `send_async`, closing and
//! dropping a chain while a task awaits it. Each test runs a tokio runtime under the
//! watchdog; no test waits on a clock: they wait for a registered waiter or a message.

use crate::common;

use cohort::mchain::{
    Handlers, MchainError, MchainParams, MchainStream, Overflow, Received, Sent, from, receive,
};
use cohort::{
    Agent, AnyMessage, Context, DefineError, DeliveryFailure, Environment, Mbox, WrappedEnv,
};
use common::{DeadLetters, TIMEOUT, count, wait_until, watchdog};
use futures_core::Stream;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

fn env() -> WrappedEnv {
    Environment::builder().start().unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

async fn next(stream: &mut MchainStream) -> Option<AnyMessage> {
    poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut TaskContext::from_waker(Waker::noop()))
}

fn u32_of(m: AnyMessage) -> u32 {
    *m.downcast_ref::<u32>().unwrap()
}

/// A bounded chain of one message whose sends wait for room.
fn waiting_chain_of_one(env: &WrappedEnv) -> cohort::mchain::Mchain {
    env.create_mchain(MchainParams::bounded(1).wait_on_full(Duration::from_secs(60)))
        .unwrap()
}

/// Sends every `u32` it gets to the mailbox it was given.
struct Relay {
    out: Mbox,
}

impl Agent for Relay {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, n: &u32, _: &mut Context<'_, Self>| me.out.send(*n))?;
        Ok(())
    }
}

#[test]
fn recv_async_gets_messages_in_order() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let mut coop = env.new_coop();
        let relay = coop
            .add(Relay {
                out: chain.as_mbox(),
            })
            .mbox();
        env.register_coop(coop).unwrap();
        let n = count(10_000) as u32;
        let got = runtime().block_on(async {
            let task = tokio::spawn({
                let chain = chain.clone();
                async move {
                    let mut got = Vec::new();
                    while let Received::Message(m) = chain.recv_async().await {
                        got.push(u32_of(m));
                    }
                    got
                }
            });
            for i in 0..n {
                relay.send(i);
            }
            // Close once the agent has put the last message in: the consumer ends after it.
            while chain.stats().queued < u64::from(n) {
                tokio::task::yield_now().await;
            }
            chain.close_retain_content();
            task.await.unwrap()
        });
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        assert_eq!(chain.waiters(), 0);
    });
}

#[test]
fn stream_ends_when_the_chain_closes() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let rt = runtime();
        // Closed keeping its content: the stream yields the rest, then ends.
        let mut stream = chain.stream();
        let task = rt.spawn(async move {
            let mut got = Vec::new();
            while let Some(m) = next(&mut stream).await {
                got.push(u32_of(m));
            }
            // Ended streams stay ended.
            assert!(next(&mut stream).await.is_none());
            got
        });
        for i in 0..5u32 {
            chain.send(i).unwrap();
        }
        chain.close_retain_content();
        assert_eq!(rt.block_on(task).unwrap(), [0, 1, 2, 3, 4]);

        // Closed dropping its content while the stream waits: it ends at once.
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let mut stream = chain.stream();
        let task = rt.spawn(async move { next(&mut stream).await.is_none() });
        wait_until(|| chain.waiters() == 1);
        chain.close_drop_content();
        assert!(rt.block_on(task).unwrap());
        assert_eq!(chain.waiters(), 0);
    });
}

#[test]
fn two_streams_share_the_messages_each_taken_once() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let rt = runtime();
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let mut stream = chain.stream();
                rt.spawn(async move {
                    let mut got = Vec::new();
                    while let Some(m) = next(&mut stream).await {
                        got.push(u32_of(m));
                    }
                    got
                })
            })
            .collect();
        let n = count(20_000) as u32;
        for i in 0..n {
            chain.send(i).unwrap();
        }
        chain.close_retain_content();
        let mut all: Vec<u32> = consumers
            .into_iter()
            .flat_map(|t| {
                let got = rt.block_on(t).unwrap();
                // Each stream sees its share in the order it was sent.
                assert!(got.windows(2).all(|w| w[0] < w[1]));
                got
            })
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
    });
}

#[test]
fn send_async_waits_for_room_and_completes_when_a_consumer_takes_one() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = waiting_chain_of_one(&env);
        chain.send(1u32).unwrap();
        let rt = runtime();
        let sender = rt.spawn({
            let chain = chain.clone();
            async move { chain.send_async(2u32).await }
        });
        // The send has found the chain full and registered to wait.
        wait_until(|| chain.waiters() == 1);
        assert!(!sender.is_finished());
        assert_eq!(chain.len(), 1);
        // A plain thread takes one message out: the send goes on.
        let mut first = Vec::new();
        receive(
            from(&chain).handle_n(1),
            &mut Handlers::new().on(|n: &u32| first.push(*n)),
        );
        assert_eq!(first, [1]);
        assert_eq!(rt.block_on(sender).unwrap(), Ok(Sent::Queued));
        let r = rt.block_on(chain.recv_async());
        assert_eq!(r.message().map(u32_of), Some(2));
        assert_eq!(chain.waiters(), 0);

        // An async consumer makes room the same way.
        chain.send(3u32).unwrap();
        let (sent, got) =
            rt.block_on(async { tokio::join!(chain.send_async(4u32), chain.recv_async()) });
        assert_eq!(sent, Ok(Sent::Queued));
        assert_eq!(got.message().map(u32_of), Some(3));
        assert_eq!(chain.len(), 1);
    });
}

#[test]
fn send_async_to_a_chain_that_does_not_wait_reacts_at_once() {
    watchdog(TIMEOUT, || {
        let env = env();
        let rt = runtime();
        let drop_newest = env
            .create_mchain(MchainParams::bounded(1).on_overflow(Overflow::DropNewest))
            .unwrap();
        assert_eq!(rt.block_on(drop_newest.send_async(1u32)), Ok(Sent::Queued));
        assert_eq!(
            rt.block_on(drop_newest.send_async(2u32)),
            Ok(Sent::DroppedNewest)
        );
        assert_eq!(drop_newest.stats().dropped_newest, 1);
        let error = env.create_mchain(MchainParams::bounded(1)).unwrap();
        rt.block_on(error.send_mut_async(vec![1u8])).unwrap();
        assert!(matches!(
            rt.block_on(error.send_mut_async(vec![2u8])),
            Err(MchainError::Full { capacity: 1, .. })
        ));
        assert_eq!(error.stats().refused_full, 1);
        let got = rt.block_on(error.recv_async()).message().unwrap();
        assert_eq!(got.downcast::<Vec<u8>>().ok(), Some(vec![1u8]));
    });
}

#[test]
fn awaiting_a_closed_chain_is_a_typed_outcome_not_a_hang() {
    watchdog(TIMEOUT, || {
        let env = env();
        let rt = runtime();
        // Already closed: everything completes at once.
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        chain.close_retain_content();
        assert!(matches!(rt.block_on(chain.recv_async()), Received::Closed));
        assert!(
            rt.block_on(async { next(&mut chain.stream()).await })
                .is_none()
        );
        assert!(matches!(
            rt.block_on(chain.send_async(1u32)),
            Err(MchainError::Closed {
                message_type: "u32"
            })
        ));
        assert_eq!(chain.stats().refused_closed, 1);

        // Closed while a receive and a send wait: both wake with the outcome.
        let empty = env.create_mchain(MchainParams::unbounded()).unwrap();
        let full = waiting_chain_of_one(&env);
        full.send(0u32).unwrap();
        let receiver = rt.spawn({
            let empty = empty.clone();
            async move { matches!(empty.recv_async().await, Received::Closed) }
        });
        let sender = rt.spawn({
            let full = full.clone();
            async move { full.send_async(1u32).await }
        });
        wait_until(|| empty.waiters() == 1 && full.waiters() == 1);
        empty.close_retain_content();
        full.close_retain_content();
        assert!(rt.block_on(receiver).unwrap());
        assert!(matches!(
            rt.block_on(sender).unwrap(),
            Err(MchainError::Closed { .. })
        ));
        assert_eq!(full.stats().refused_closed, 1);
        // The message queued before the close is still there to receive.
        assert_eq!(
            rt.block_on(full.recv_async()).message().map(u32_of),
            Some(0)
        );
        assert!(matches!(rt.block_on(full.recv_async()), Received::Closed));
    });
}

#[test]
fn dropping_the_chain_while_a_task_awaits_ends_its_stream() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let rt = runtime();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let mbox = chain.as_mbox();
        let mut stream = chain.stream();
        let task = rt.spawn(async move {
            let mut got = Vec::new();
            while let Some(m) = next(&mut stream).await {
                got.push(u32_of(m));
            }
            got
        });
        chain.send(7u32).unwrap();
        mbox.send(8u32);
        // The last handle: the chain closes keeping its content, the task drains and ends.
        drop(chain);
        assert_eq!(rt.block_on(task).unwrap(), [7, 8]);
        // A later send through the mailbox is a counted dead letter, not a silent loss.
        mbox.send(9u32);
        assert_eq!(env.dead_letters(), 1);
        assert_eq!(dead.of::<u32>(), [DeliveryFailure::ChainClosed]);
    });
}

#[test]
fn a_dropped_future_withdraws_its_waker() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = waiting_chain_of_one(&env);
        let mut recv = chain.recv_async();
        assert!(poll_once(&mut recv).is_pending());
        // Polled again: the same registration, not a second one.
        assert!(poll_once(&mut recv).is_pending());
        assert_eq!(chain.waiters(), 1);
        drop(recv);
        assert_eq!(chain.waiters(), 0);

        chain.send(1u32).unwrap();
        let mut send = chain.send_async(2u32);
        assert!(poll_once(&mut send).is_pending());
        assert_eq!(chain.waiters(), 1);
        drop(send);
        assert_eq!(chain.waiters(), 0);
        // The abandoned message was never sent.
        assert_eq!((chain.len(), chain.stats().queued), (1, 1));
    });
}
