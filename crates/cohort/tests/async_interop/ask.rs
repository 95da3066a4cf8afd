//! `Context::request`: the reply, the timeout or the reason there is none comes back once,
//! as an event of the asking agent.

use crate::common::{TIMEOUT, recv, watchdog};
use cohort::{
    Agent, AsyncError, Context, DefineError, DeregReason, Environment, Mbox, Request, RequestError,
    Responder,
};
use std::sync::mpsc::{self, Sender};
use std::thread::ThreadId;
use std::time::Duration;

struct Doubler;
impl Agent for Doubler {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|_: &mut Self, n: &u64, _: &mut Context<'_, Self>| n * 2)?;
        Ok(())
    }
}

/// Holds every request without answering until told to.
struct Sitter {
    held: Vec<Responder<u64>>,
}
struct Answer;
impl Agent for Sitter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, r: &Request<u64, u64>, _: &mut Context<'_, Self>| {
                me.held.extend(r.defer());
            },
        )?;
        ctx.on(|me: &mut Self, _: &Answer, _: &mut Context<'_, Self>| {
            for r in me.held.drain(..) {
                r.reply(1);
            }
        })?;
        Ok(())
    }
}

struct Mute;
impl Agent for Mute {}

type Outcome = (Result<u64, RequestError>, ThreadId, ThreadId);

/// Asks `to` once at start; reports each outcome and, on `Report`, how many it got.
struct Asker {
    to: Mbox,
    timeout: Option<Duration>,
    out: Sender<Outcome>,
    outcomes: usize,
    counts: Sender<usize>,
}
struct Report;
impl Agent for Asker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let refused = ctx
            .request::<u64, u64>(&self.to, 1)
            .then(|_: &mut Self, _, _: &mut Context<'_, Self>| {});
        assert_eq!(refused, Err(AsyncError::AskInDefine));
        ctx.on(|me: &mut Self, _: &Report, _: &mut Context<'_, Self>| {
            me.counts.send(me.outcomes).unwrap();
        })?;
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        let home = std::thread::current().id();
        let mut ask = ctx.request::<u64, u64>(&to, 21);
        if let Some(t) = self.timeout {
            ask = ask.timeout(t);
        }
        ask.then(move |me: &mut Self, outcome, _: &mut Context<'_, Self>| {
            me.outcomes += 1;
            me.out
                .send((outcome, home, std::thread::current().id()))
                .unwrap();
        })
        .unwrap();
    }
}

/// Registers `target` and an asker of it (each in its own cooperation, so on the default
/// dispatcher's one thread); returns the asker's outcome and what to tell it afterwards.
fn ask<T: Agent>(
    env: &Environment,
    target: T,
    timeout: Option<Duration>,
    deregister_target_first: bool,
) -> (Outcome, Mbox, Mbox, mpsc::Receiver<usize>) {
    let mut coop = env.new_coop();
    let to = coop.add(target).mbox();
    let handle = env.register_coop(coop).unwrap();
    if deregister_target_first {
        handle.deregister(DeregReason::Normal);
        handle.wait_gone(Duration::from_secs(10)).unwrap();
    }
    let (tx, rx) = mpsc::channel();
    let (counts_tx, counts) = mpsc::channel();
    let mut coop = env.new_coop();
    let asker = coop
        .add(Asker {
            to: to.clone(),
            timeout,
            out: tx,
            outcomes: 0,
            counts: counts_tx,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    (recv(&rx, "the ask's outcome"), asker, to, counts)
}

#[test]
fn the_reply_comes_back_as_an_event_of_the_asker() {
    watchdog(TIMEOUT, || {
        // With a timeout the ask's state is shared with a timer; without, its request owns it.
        for timeout in [Some(Duration::from_secs(60)), None] {
            let env = Environment::builder().start().unwrap();
            let ((outcome, home, here), asker, _, counts) = ask(&env, Doubler, timeout, false);
            assert_eq!(outcome, Ok(42), "timeout {timeout:?}");
            assert_eq!(home, here, "handled off the asker's thread");
            asker.send(Report);
            assert_eq!(recv(&counts, "the count"), 1);
            // The reply cancelled the timeout's timer.
            assert_eq!(env.stats().timers, 0);
            env.stop();
            env.wait();
        }
    });
}

#[test]
fn an_ask_times_out_once_and_a_late_reply_is_dropped() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let ((outcome, _, _), asker, sitter, counts) = ask(
            &env,
            Sitter { held: Vec::new() },
            Some(Duration::from_millis(10)),
            false,
        );
        assert_eq!(
            outcome,
            Err(RequestError::Timeout(Duration::from_millis(10)))
        );
        // The late reply, then a report: the asker got one outcome only.
        sitter.send(Answer);
        asker.send(Report);
        assert_eq!(recv(&counts, "the count"), 1);
        env.stop();
        env.wait();
    });
}

#[test]
fn an_ask_to_a_deregistered_agent_gets_receiver_gone() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let ((outcome, _, _), ..) = ask(&env, Doubler, None, true);
        assert_eq!(outcome, Err(RequestError::ReceiverGone));
        env.stop();
        env.wait();
    });
}

#[test]
fn an_ask_without_a_handler_gets_no_handler() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let ((outcome, _, _), ..) = ask(&env, Mute, None, false);
        assert_eq!(outcome, Err(RequestError::NoHandler));
        env.stop();
        env.wait();
    });
}

/// Tells its channel when it is dropped.
struct DropSignal(Sender<()>);
impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// Asks `to` once at start, its handler owning a [`DropSignal`]; says when it has asked.
struct LateAsker {
    to: Mbox,
    signal: Option<DropSignal>,
    handled: Sender<()>,
    asked: Sender<()>,
}
impl Agent for LateAsker {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        let (signal, handled) = (self.signal.take(), self.handled.clone());
        ctx.request::<u64, u64>(&to, 1)
            .then(move |_: &mut Self, _, _: &mut Context<'_, Self>| {
                drop(signal);
                let _ = handled.send(());
            })
            .unwrap();
        self.asked.send(()).unwrap();
    }
}

#[test]
fn an_outcome_after_the_asker_finished_is_a_dead_letter_and_its_handler_is_dropped() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        let sitter = coop.add(Sitter { held: Vec::new() }).mbox();
        env.register_coop(coop).unwrap();
        let (dropped_tx, dropped) = mpsc::channel();
        let (handled_tx, handled) = mpsc::channel();
        let (asked_tx, asked) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(LateAsker {
            to: sitter.clone(),
            signal: Some(DropSignal(dropped_tx)),
            handled: handled_tx,
            asked: asked_tx,
        });
        let asker = env.register_coop(coop).unwrap();
        recv(&asked, "the ask");
        asker.deregister(DeregReason::Normal);
        asker.wait_gone(Duration::from_secs(10)).unwrap();
        let before = env.dead_letters();
        // Both on the default dispatcher's one queue: the request is held before this.
        sitter.send(Answer);
        recv(&dropped, "the handler's drop");
        assert!(env.dead_letters() > before);
        assert!(handled.try_recv().is_err(), "handled after finish");
        env.stop();
        env.wait();
    });
}

struct ZeroAsker {
    to: Mbox,
    out: Sender<Result<(), AsyncError>>,
}
impl Agent for ZeroAsker {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let to = self.to.clone();
        let r = ctx
            .request::<u64, u64>(&to, 1)
            .timeout(Duration::ZERO)
            .then(|_: &mut Self, _, _: &mut Context<'_, Self>| {});
        self.out.send(r).unwrap();
    }
}

#[test]
fn a_zero_timeout_is_a_typed_error() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let to = coop.add(Doubler).mbox();
        coop.add(ZeroAsker { to, out: tx });
        env.register_coop(coop).unwrap();
        assert_eq!(recv(&rx, "the ask"), Err(AsyncError::ZeroTimeout));
        env.stop();
        env.wait();
    });
}

/// Asks again from each reply's handler, the handlers alternating between two closure types
/// of different sizes (the block an outcome frees is lent to the next ask, if it fits);
/// reports every reply.
struct ChainAsker {
    to: Mbox,
    left: u64,
    replies: Vec<u64>,
    out: Sender<Vec<u64>>,
}

impl ChainAsker {
    fn ask(&mut self, ctx: &mut Context<'_, Self>) {
        let n = self.left;
        let asked = if n.is_multiple_of(2) {
            ctx.request::<u64, u64>(&self.to, n).then(
                move |me: &mut Self, r, ctx: &mut Context<'_, Self>| me.got(r.map(|r| r - n), ctx),
            )
        } else {
            let pad = [n; 6];
            ctx.request::<u64, u64>(&self.to, n).then(
                move |me: &mut Self, r, ctx: &mut Context<'_, Self>| {
                    me.got(r.map(|r| r - pad.iter().sum::<u64>() / 6), ctx)
                },
            )
        };
        asked.unwrap();
    }

    fn got(&mut self, reply: Result<u64, RequestError>, ctx: &mut Context<'_, Self>) {
        self.replies.push(reply.unwrap());
        self.left -= 1;
        if self.left == 0 {
            self.out.send(std::mem::take(&mut self.replies)).unwrap();
        } else {
            self.ask(ctx);
        }
    }
}

impl Agent for ChainAsker {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.ask(ctx);
    }
}

#[test]
fn asks_made_from_each_reply_s_handler_all_get_their_own_reply() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        let to = coop.add(Doubler).mbox();
        let (tx, rx) = mpsc::channel();
        coop.add(ChainAsker {
            to,
            left: 1000,
            replies: Vec::new(),
            out: tx,
        });
        env.register_coop(coop).unwrap();
        // Each reply is 2n, less the n its own handler captured: n again.
        let replies = recv(&rx, "a thousand replies");
        assert_eq!(replies, (1..=1000).rev().collect::<Vec<u64>>());
        env.stop();
        env.wait();
    });
}
