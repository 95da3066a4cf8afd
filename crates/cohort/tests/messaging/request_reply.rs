//! Request/reply: blocking waits and futures, timeouts, a receiver gone, no handler, replies
//! through a chain, a request from one agent to another awaited as a future.

use crate::common;

use cohort::mchain::{Handlers, MchainParams, StopReason, from, receive};
use cohort::{
    Agent, Context, DeadLetter, DefineError, Environment, Mbox, PendingReply, Request, RequestError,
};
use common::{Idle, Probe, TIMEOUT, count, watchdog};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::Duration;

/// A tiny executor: polls `f` on this thread, parking between wake-ups.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark()
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

struct Doubler;
impl Agent for Doubler {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|_: &mut Self, n: &u64, _: &mut Context<'_, Self>| n * 2)?;
        Ok(())
    }
}

/// Keeps requests without answering them.
struct Hoarder(Vec<cohort::Responder<u64>>);
impl Agent for Hoarder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, r: &Request<u64, u64>, _: &mut Context<'_, Self>| {
                me.0.extend(r.defer())
            },
        )?;
        Ok(())
    }
}

/// Answers twice: the second reply is refused (what `reply` returned goes to `.0`).
struct Twice(Mbox);
impl Agent for Twice {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, r: &Request<u64, u64>, _: &mut Context<'_, Self>| {
                let first = r.reply(1);
                let second = r.reply(2);
                me.0.send((first, second));
            },
        )?;
        Ok(())
    }
}

fn start_one<A: Agent>(agent: A) -> (cohort::WrappedEnv, Mbox) {
    let env = Environment::builder().start().unwrap();
    let mut coop = env.new_coop();
    let mbox = coop.add(agent).mbox();
    env.register_coop(coop).unwrap();
    (env, mbox)
}

#[test]
fn plain_thread_waits_for_replies() {
    watchdog(TIMEOUT, || {
        let (_env, doubler) = start_one(Doubler);
        for i in 0..count(100) as u64 {
            assert_eq!(doubler.request::<u64, u64>(i).wait(TIMEOUT), Ok(2 * i));
            // Polling before sleeping changes nothing but the CPU spent.
            let spinning = doubler
                .request::<u64, u64>(i)
                .spin(Duration::from_micros(50));
            assert_eq!(spinning.wait(TIMEOUT), Ok(2 * i));
        }
    });
}

#[test]
fn reply_awaited_as_a_future() {
    watchdog(TIMEOUT, || {
        let (_env, doubler) = start_one(Doubler);
        let replies = block_on(async {
            let mut v = Vec::new();
            for i in 0..10u64 {
                v.push(doubler.request::<u64, u64>(i).await);
            }
            v
        });
        assert_eq!(replies, (0..10).map(|i| Ok(2 * i)).collect::<Vec<_>>());
    });
}

#[test]
fn request_times_out() {
    watchdog(TIMEOUT, || {
        let (_env, hoarder) = start_one(Hoarder(Vec::new()));
        let d = Duration::from_millis(10);
        let r = hoarder.request::<u64, u64>(1).wait(d);
        assert_eq!(r, Err(RequestError::Timeout(d)));
        assert!(r.unwrap_err().to_string().contains("wait longer"));
    });
}

#[test]
fn receiver_gone_completes_at_once() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        let mbox = coop.add(Doubler).mbox();
        env.register_coop(coop)
            .unwrap()
            .deregister(cohort::DeregReason::Normal);
        common::wait_until(|| env.coop_count() == 0);
        let r = mbox.request::<u64, u64>(1).wait(TIMEOUT * 10);
        assert_eq!(r, Err(RequestError::ReceiverGone));
        assert_eq!(env.dead_letters(), 1);
    });
}

/// Answers requests, but limits them to none waiting: every request overflows.
struct Refusing;
impl Agent for Refusing {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.set_message_limits(cohort::MessageLimits::new().drop::<Request<u64, u64>>(0))?;
        ctx.on_request(|_: &mut Self, n: &u64, _: &mut Context<'_, Self>| n * 2)?;
        Ok(())
    }
}

#[test]
fn a_request_dropped_by_a_message_limit_is_refused_with_the_reason() {
    watchdog(TIMEOUT, || {
        let (env, refusing) = start_one(Refusing);
        let r = refusing.request::<u64, u64>(1).wait(TIMEOUT * 10);
        assert_eq!(
            r,
            Err(RequestError::Refused(cohort::DeliveryFailure::LimitReached))
        );
        assert_eq!(env.dead_letters(), 1);
    });
}

#[test]
fn no_handler_and_no_subscriber() {
    watchdog(TIMEOUT, || {
        let (env, idle) = start_one(Idle);
        let r = idle.request::<u64, u64>(1).wait(TIMEOUT * 10);
        assert_eq!(r, Err(RequestError::NoHandler));
        let named = env.named_mbox("nobody");
        let r = named.request::<u64, u64>(1).wait(TIMEOUT * 10);
        assert_eq!(r, Err(RequestError::NoHandler));
        assert_eq!(env.dead_letters(), 2);
    });
}

#[test]
fn dropped_unanswered_and_answered_twice() {
    watchdog(TIMEOUT, || {
        // A chain closed with its content drops the request: the receiver is gone.
        let env = Environment::builder().start().unwrap();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let pending = chain.as_mbox().request::<u64, u64>(1);
        chain.close_drop_content();
        assert_eq!(pending.wait(TIMEOUT), Err(RequestError::ReceiverGone));
        // A receiver that drops it without replying.
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let pending = chain.as_mbox().request::<u64, u64>(1);
        receive(
            from(&chain).handle_n(1),
            &mut Handlers::new().on(|_: &Request<u64, u64>| {}),
        );
        assert_eq!(pending.wait(TIMEOUT), Err(RequestError::NotReplied));
        // A second reply is refused.
        let probe: Probe<(bool, bool)> = Probe::new();
        let (_env2, twice) = start_one(Twice(probe.mbox.clone()));
        assert_eq!(twice.request::<u64, u64>(1).wait(TIMEOUT), Ok(1));
        assert_eq!(probe.recv("what reply returned"), (true, false));
    });
}

#[test]
fn a_thread_answers_requests_from_a_chain() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let mbox = chain.as_mbox();
        let server = {
            let chain = chain.clone();
            std::thread::spawn(move || {
                receive(
                    from(&chain),
                    &mut Handlers::new().on_request(|s: &String| s.len()),
                )
            })
        };
        assert_eq!(
            mbox.request::<String, usize>("four".into()).wait(TIMEOUT),
            Ok(4)
        );
        assert_eq!(
            mbox.request::<String, usize>("".into()).wait(TIMEOUT),
            Ok(0)
        );
        chain.close_retain_content();
        let r = server.join().unwrap();
        assert_eq!((r.handled, r.stop), (2, StopReason::Closed));
        // The chain is closed: a request to it fails at once.
        let r = mbox.request::<String, usize>("late".into()).wait(TIMEOUT);
        assert_eq!(r, Err(RequestError::ReceiverGone));
    });
}

#[test]
fn reply_to_a_chain() {
    watchdog(TIMEOUT, || {
        let (env, doubler) = start_one(Doubler);
        let replies = env.create_mchain(MchainParams::unbounded()).unwrap();
        for i in 0..5u64 {
            doubler.request_to::<u64, u64>(i, &replies.as_mbox());
        }
        let mut got = Vec::new();
        let r = receive(
            from(&replies).handle_n(5),
            &mut Handlers::new().on(|n: &u64| got.push(*n)),
        );
        assert_eq!(r.stop, StopReason::HandleN);
        assert_eq!(got, [0, 2, 4, 6, 8]);
    });
}

/// Asks the doubler and awaits the reply as a future, polled on the agent's own thread: the
/// waker sends the agent a `Poll` message.
struct Asker {
    doubler: Mbox,
    pending: Option<PendingReply<u64>>,
    out: Mbox,
}
struct PollNow;

struct SendPoll(Mbox);
impl Wake for SendPoll {
    fn wake(self: Arc<Self>) {
        self.0.send(PollNow)
    }
}

impl Asker {
    fn poll(&mut self, ctx: &mut Context<'_, Self>) {
        let waker = Waker::from(Arc::new(SendPoll(ctx.self_mbox())));
        let mut cx = TaskContext::from_waker(&waker);
        if let Some(p) = self.pending.as_mut()
            && let Poll::Ready(r) = std::pin::Pin::new(p).poll(&mut cx)
        {
            self.pending = None;
            self.out.send(r);
        }
    }
}

impl Agent for Asker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &PollNow, ctx: &mut Context<'_, Self>| me.poll(ctx))?;
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.pending = Some(self.doubler.request(21u64));
        self.poll(ctx);
    }
}

#[test]
fn agent_awaits_another_agent_s_reply_as_a_future() {
    watchdog(TIMEOUT, || {
        let probe: Probe<Result<u64, RequestError>> = Probe::new();
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        let doubler = coop.add(Doubler).mbox();
        let other = env.one_thread("asker").unwrap();
        coop.add_with_binder(
            Asker {
                doubler,
                pending: None,
                out: probe.mbox.clone(),
            },
            other.binder(),
        );
        env.register_coop(coop).unwrap();
        assert_eq!(probe.recv("the awaited reply"), Ok(42));
    });
}

#[test]
fn dead_letter_hook_sees_undeliverable_requests() {
    watchdog(TIMEOUT, || {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let env = Environment::builder()
            .dead_letter_hook(move |d: &DeadLetter| s.lock().unwrap().push(d.message_type))
            .start()
            .unwrap();
        let r = env
            .named_mbox("none")
            .request::<u8, u8>(1)
            .wait(Duration::from_secs(5));
        assert_eq!(r, Err(RequestError::NoHandler));
        assert_eq!(
            *seen.lock().unwrap(),
            [std::any::type_name::<Request<u8, u8>>()]
        );
    });
}

#[test]
fn a_reply_to_a_closed_chain_is_a_dead_letter() {
    watchdog(TIMEOUT, || {
        let (builder, log) = common::DeadLetters::builder();
        let env = builder.start().unwrap();
        let mut coop = env.new_coop();
        let doubler = coop.add(Doubler).mbox();
        env.register_coop(coop).unwrap();
        let replies = env.create_mchain(MchainParams::unbounded()).unwrap();
        replies.close_retain_content();
        doubler.request_to::<u64, u64>(1, &replies.as_mbox());
        // The hook runs after the count: wait for the hook.
        common::wait_until(|| !log.all().is_empty());
        assert_eq!(log.of::<u64>(), [cohort::DeliveryFailure::ChainClosed]);
        assert_eq!(env.dead_letters(), 1);
        assert_eq!(replies.stats().refused_closed, 1);
    });
}
