//! `Context::spawn`: the output is handled once, on the agent's thread; futures are
//! cancelled when their agent finishes; a panic is the agent's; a spawn while finishing is
//! refused; a spawn from `define` is handled after `start`.

use crate::common::{TIMEOUT, recv, watchdog};
use crate::one_runtime_at_a_time;
use cohort::{Agent, AsyncError, Context, DefineError, DeregReason, Environment, PanicReaction};
use std::collections::HashSet;
use std::sync::mpsc::{self, Sender};
use std::thread::ThreadId;

/// Sends on drop: shows that a cancelled future's drop ran.
struct OnDrop(Sender<&'static str>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send("dropped");
    }
}

struct Many {
    n: u64,
    out: Sender<(u64, ThreadId, ThreadId)>,
    home: Option<ThreadId>,
}
impl Agent for Many {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.home = Some(std::thread::current().id());
        for i in 0..self.n {
            ctx.spawn(async move { (i, std::thread::current().id()) })
                .then(|me: &mut Self, (i, ran_on), _: &mut Context<'_, Self>| {
                    let here = std::thread::current().id();
                    assert_eq!(Some(here), me.home, "handled off the agent's thread");
                    me.out.send((i, here, ran_on)).unwrap();
                })
                .unwrap();
        }
    }
}

#[test]
fn output_is_handled_once_on_the_agents_thread() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Many {
            n: 100,
            out: tx,
            home: None,
        });
        env.register_coop(coop).unwrap();
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let (i, handled_on, ran_on) = recv(&rx, "a future's output");
            assert!(seen.insert(i), "output {i} handled twice");
            assert_ne!(handled_on, ran_on, "the future ran on the agent's thread");
        }
        assert_eq!(env.stats().futures, 0);
        env.stop();
        env.wait();
        assert!(rx.try_recv().is_err(), "an output was handled twice");
        assert_eq!(env.stats().futures_cancelled, 0);
    });
}

struct Stuck {
    events: Sender<&'static str>,
}
impl Agent for Stuck {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let events = self.events.clone();
        ctx.spawn(async move {
            let _guard = OnDrop(events.clone());
            events.send("running").unwrap();
            std::future::pending::<()>().await
        })
        .then(|me: &mut Self, (), _: &mut Context<'_, Self>| {
            me.events.send("output").unwrap();
        })
        .unwrap();
    }
    fn finish(&mut self, ctx: &mut Context<'_, Self>) {
        let refused = ctx
            .spawn(async {})
            .then(|_: &mut Self, (), _: &mut Context<'_, Self>| {});
        assert_eq!(refused, Err(AsyncError::AgentFinishing));
        self.events.send("finished").unwrap();
    }
}

#[test]
fn futures_are_cancelled_when_their_agent_finishes() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Stuck { events: tx });
        let handle = env.register_coop(coop).unwrap();
        assert_eq!(recv(&rx, "the future runs"), "running");
        assert_eq!(env.stats().futures, 1);
        handle.deregister(DeregReason::Normal);
        // `finish` (which found spawning refused) and the future's drop on the runtime, in
        // either order: the abort comes first, the drop runs on another thread.
        let mut both = [recv(&rx, "finish or drop"), recv(&rx, "drop or finish")];
        both.sort();
        assert_eq!(both, ["dropped", "finished"]);
        let stats = env.stats();
        assert_eq!((stats.futures, stats.futures_cancelled), (0, 1));
        env.stop();
        env.wait();
        assert!(rx.try_recv().is_err(), "an output was handled after finish");
    });
}

#[test]
fn dropping_the_environment_while_futures_run_does_not_hang() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Stuck { events: tx });
        env.register_coop(coop).unwrap();
        assert_eq!(recv(&rx, "the future runs"), "running");
        drop(env);
        let mut rest: Vec<_> = rx.iter().collect();
        rest.sort();
        assert_eq!(rest, ["dropped", "finished"]);
    });
}

struct Panicky {
    events: Sender<&'static str>,
}
impl Agent for Panicky {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.spawn(async { panic!("inside a future") })
            .then(|me: &mut Self, (), _: &mut Context<'_, Self>| {
                me.events.send("output").unwrap();
            })
            .unwrap();
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.events.send("finished").unwrap();
    }
}

#[test]
fn a_panic_in_a_future_follows_the_agents_panic_reaction() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        let env = Environment::builder()
            .panic_reaction(PanicReaction::DeregisterCoop)
            .start()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Panicky { events: tx });
        env.register_coop(coop).unwrap();
        // The cooperation is deregistered by the panic: the agent finishes.
        assert_eq!(recv(&rx, "finish after the panic"), "finished");
        let stats = env.stats();
        assert_eq!(stats.panics, 1);
        assert_eq!(stats.futures, 0);
        env.stop();
        env.wait();
        assert!(rx.try_recv().is_err());
    });
}

struct Early {
    started: bool,
    events: Sender<bool>,
}
impl Agent for Early {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.spawn(async {})
            .then(|me: &mut Self, (), _: &mut Context<'_, Self>| {
                me.events.send(me.started).unwrap();
            })
            .unwrap();
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.started = true;
    }
}

#[test]
fn a_future_spawned_in_define_is_handled_after_start() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Early {
            started: false,
            events: tx,
        });
        env.register_coop(coop).unwrap();
        assert!(recv(&rx, "the output"), "handled before start");
        env.stop();
        env.wait();
    });
}
