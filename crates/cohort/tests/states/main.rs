//! Agent states: subscriptions per state, inheritance and override, enter/exit order, shallow
//! and deep history, transfer and suppress, the dead-letter handler, time limits, and the
//! typed errors of bad input.

#[path = "../common/mod.rs"]
mod common;

use cohort::{
    Agent, Context, DefineError, DeliveryFailure, History, Mbox, State, StateError, SubscribeError,
    Unhandled,
};
use common::{DeadLetters, TIMEOUT, watchdog};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What happened inside the agent, in order.
type Log = Arc<Mutex<Vec<String>>>;

type Script = Box<dyn for<'a> FnOnce(&mut Context<'a, Scripted>) -> Result<(), DefineError> + Send>;

/// An agent whose `define` is the test's closure.
struct Scripted {
    log: Log,
    script: Option<Script>,
}

impl Scripted {
    fn note(&self, what: impl Into<String>) {
        self.log.lock().unwrap().push(what.into());
    }
}

impl Agent for Scripted {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let script = self.script.take().expect("define runs once");
        script(ctx)
    }
}

/// Switch to this state (handled in every state by [`switcher`]).
#[derive(Clone, Copy)]
struct SwitchTo(State);
#[derive(Clone, Copy)]
struct Ping;
#[derive(Clone, Copy)]
struct Pong;
/// Reports the current state's name to the log.
#[derive(Clone, Copy)]
struct Where;

/// Subscribes `SwitchTo` and `Where` in `st` (a root every test state descends from).
fn switcher(ctx: &mut Context<'_, Scripted>, st: &State) -> Result<(), SubscribeError> {
    ctx.in_state(st)
        .on(
            |_: &mut Scripted, m: &SwitchTo, ctx: &mut Context<'_, Scripted>| {
                ctx.change_state(&m.0).unwrap()
            },
        )?
        .on(
            |me: &mut Scripted, _: &Where, ctx: &mut Context<'_, Scripted>| {
                let st = ctx.current_state();
                me.note(format!("in {}", ctx.state_name(&st).unwrap()));
            },
        )?;
    Ok(())
}

/// Registers a scripted agent, lets `drive` send it messages from the test thread, then
/// stops the environment (messages already sent are handled first) and returns the log and
/// the dead letters.
fn run(
    script: impl for<'a> FnOnce(&mut Context<'a, Scripted>) -> Result<(), DefineError> + Send + 'static,
    drive: impl FnOnce(&Mbox) + Send + 'static,
) -> (Vec<String>, DeadLetters) {
    watchdog(TIMEOUT, move || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let log = Log::default();
        let mut coop = env.new_coop();
        let mbox = coop
            .add(Scripted {
                log: log.clone(),
                script: Some(Box::new(script)),
            })
            .mbox();
        env.register_coop(coop).unwrap();
        drive(&mbox);
        env.stop_and_wait();
        let log = log.lock().unwrap().clone();
        (log, dead)
    })
}

/// Creates the states the tests share through `SwitchTo`: sends them out of `define`.
fn states_to_test(
    tx: std::sync::mpsc::Sender<Vec<State>>,
    names: &'static [(&'static str, Option<usize>)],
) -> impl for<'a> FnOnce(&mut Context<'a, Scripted>) -> Result<Vec<State>, DefineError> {
    move |ctx| {
        let mut made: Vec<State> = Vec::new();
        for (name, parent) in names {
            let st = match parent {
                None => ctx.new_state(*name)?,
                Some(p) => ctx.new_substate(&made[*p], *name)?,
            };
            made.push(st);
        }
        let _ = tx.send(made.clone());
        Ok(made)
    }
}

#[test]
fn a_subscription_applies_in_its_state_only() {
    let (log, dead) = run(
        |ctx| {
            let on = ctx.new_state("on")?;
            ctx.in_state(&on).on(
                |me: &mut Scripted, _: &Ping, _: &mut Context<'_, Scripted>| me.note("ping in on"),
            )?;
            ctx.on(
                move |_: &mut Scripted, _: &Pong, ctx: &mut Context<'_, Scripted>| {
                    ctx.change_state(&on).unwrap()
                },
            )?;
            Ok(())
        },
        |mbox| {
            mbox.send(Ping); // default state: no handler
            mbox.send(Pong); // switch to `on`
            mbox.send(Ping); // handled
            mbox.send(Pong); // `on` has no Pong handler and does not inherit the default's
        },
    );
    assert_eq!(log, ["ping in on"]);
    assert_eq!(dead.of::<Ping>(), [DeliveryFailure::NoHandler]);
    assert_eq!(dead.of::<Pong>(), [DeliveryFailure::NoHandler]);
}

#[test]
fn substates_inherit_and_override() {
    let (tx, rx) = std::sync::mpsc::channel();
    let make = states_to_test(
        tx,
        &[
            ("root", None),
            ("parent", Some(0)),
            ("child", Some(1)),
            ("other", Some(0)),
        ],
    );
    let (log, dead) = run(
        move |ctx| {
            let s = make(ctx)?;
            let (root, parent, child) = (s[0], s[1], s[2]);
            switcher(ctx, &root)?;
            ctx.in_state(&parent)
                .on(
                    |me: &mut Scripted, _: &Ping, _: &mut Context<'_, Scripted>| {
                        me.note("parent ping")
                    },
                )?
                .on(
                    |me: &mut Scripted, _: &Pong, _: &mut Context<'_, Scripted>| {
                        me.note("parent pong")
                    },
                )?;
            ctx.in_state(&child).on(
                |me: &mut Scripted, _: &Pong, _: &mut Context<'_, Scripted>| me.note("child pong"),
            )?;
            ctx.change_state(&parent)?; // lands in `child`, the initial substate
            Ok(())
        },
        move |mbox| {
            let s = rx.recv().unwrap();
            mbox.send(Where);
            mbox.send(Ping);
            mbox.send(Pong);
            mbox.send(SwitchTo(s[3])); // a sibling of `parent`: neither handler
            mbox.send(Where);
            mbox.send(Ping);
        },
    );
    assert_eq!(
        log,
        ["in child", "parent ping", "child pong", "in other"],
        "the child inherits Ping and overrides Pong; its parent's sibling has neither"
    );
    assert_eq!(dead.of::<Ping>(), [DeliveryFailure::NoHandler]);
}

#[test]
fn exits_run_innermost_first_and_entries_outermost_first() {
    let (tx, rx) = std::sync::mpsc::channel();
    let make = states_to_test(
        tx,
        &[
            ("root", None),
            ("a", Some(0)),
            ("a1", Some(1)),
            ("a11", Some(2)),
            ("b", Some(0)),
            ("b1", Some(4)),
        ],
    );
    let (log, _) = run(
        move |ctx| {
            let s = make(ctx)?;
            switcher(ctx, &s[0])?;
            for (i, st) in s.iter().enumerate().skip(1) {
                let name = ["root", "a", "a1", "a11", "b", "b1"][i];
                ctx.in_state(st)
                    .on_enter(move |me: &mut Scripted, _: &mut Context<'_, Scripted>| {
                        me.note(format!("enter {name}"))
                    })?
                    .on_exit(move |me: &mut Scripted, _: &mut Context<'_, Scripted>| {
                        me.note(format!("exit {name}"))
                    })?;
            }
            ctx.change_state(&s[1])?; // hooks run before `start`
            Ok(())
        },
        move |mbox| {
            let s = rx.recv().unwrap();
            mbox.send(SwitchTo(s[4]));
            mbox.send(SwitchTo(s[5])); // already there: nothing
            mbox.send(SwitchTo(s[3]));
        },
    );
    assert_eq!(
        log,
        [
            "enter a",
            "enter a1",
            "enter a11", // define: a -> a1 -> a11
            "exit a11",
            "exit a1",
            "exit a",
            "enter b",
            "enter b1", // to b
            "exit b1",
            "exit b",
            "enter a",
            "enter a1",
            "enter a11", // to a11
            "exit a11",
            "exit a1",
            "exit a", // the agent finishes
        ]
    );
}

#[test]
fn shallow_history_remembers_the_direct_substate_deep_the_innermost() {
    for (history, expected) in [
        (History::None, "in x1"),
        (History::Shallow, "in y1"),
        (History::Deep, "in y2"),
    ] {
        let (tx, rx) = std::sync::mpsc::channel();
        let make = states_to_test(
            tx,
            &[
                ("root", None),
                ("top", Some(0)),
                ("x", Some(1)),
                ("x1", Some(2)),
                ("y", Some(1)),
                ("y1", Some(4)),
                ("y2", Some(4)),
                ("away", Some(0)),
            ],
        );
        let (log, _) = run(
            move |ctx| {
                let s = make(ctx)?;
                switcher(ctx, &s[0])?;
                ctx.in_state(&s[1]).history(history)?;
                ctx.change_state(&s[1])?;
                Ok(())
            },
            move |mbox| {
                let s = rx.recv().unwrap();
                mbox.send(Where); // top lands in x1
                mbox.send(SwitchTo(s[6])); // y2
                mbox.send(SwitchTo(s[7])); // leave top
                mbox.send(SwitchTo(s[1])); // re-enter top
                mbox.send(Where);
            },
        );
        assert_eq!(log, ["in x1", expected], "{history:?}");
    }
}

#[test]
fn transfer_switches_then_handles_and_suppress_ignores() {
    let (tx, rx) = std::sync::mpsc::channel();
    let make = states_to_test(
        tx,
        &[
            ("root", None),
            ("idle", Some(0)),
            ("busy", Some(0)),
            ("quiet", Some(2)),
        ],
    );
    let (log, dead) = run(
        move |ctx| {
            let s = make(ctx)?;
            let (root, idle, busy, quiet) = (s[0], s[1], s[2], s[3]);
            switcher(ctx, &root)?;
            // A Ping in `idle` switches to `busy` (landing in `quiet`) and is handled there.
            ctx.in_state(&idle).transfer_to_state::<Ping>(&busy)?;
            ctx.in_state(&busy)
                .on(
                    |me: &mut Scripted, _: &Ping, ctx: &mut Context<'_, Scripted>| {
                        let st = ctx.current_state();
                        me.note(format!("ping in {}", ctx.state_name(&st).unwrap()))
                    },
                )?
                .on(|me: &mut Scripted, _: &Pong, _: &mut Context<'_, Scripted>| me.note("pong"))?;
            // `quiet` ignores Pong although its parent handles it.
            ctx.in_state(&quiet).suppress::<Pong>()?;
            ctx.change_state(&idle)?;
            Ok(())
        },
        move |mbox| {
            let _ = rx.recv().unwrap();
            mbox.send(Pong); // idle: no handler -> dead letter
            mbox.send(Ping); // transferred to busy/quiet and handled there
            mbox.send(Pong); // suppressed in quiet: no dead letter
            mbox.send(Where);
        },
    );
    assert_eq!(log, ["ping in quiet", "in quiet"]);
    assert_eq!(dead.of::<Pong>(), [DeliveryFailure::NoHandler]);
    assert!(dead.of::<Ping>().is_empty());
}

#[test]
fn a_transfer_loop_is_a_counted_dead_letter() {
    let (log, dead) = run(
        |ctx| {
            let a = ctx.new_state("a")?;
            let b = ctx.new_state("b")?;
            ctx.in_state(&a).transfer_to_state::<Ping>(&b)?;
            ctx.in_state(&b).transfer_to_state::<Ping>(&a)?;
            ctx.in_state(&b).on(
                |me: &mut Scripted, _: &Pong, _: &mut Context<'_, Scripted>| me.note("still alive"),
            )?;
            ctx.change_state(&a)?;
            Ok(())
        },
        |mbox| {
            mbox.send(Ping);
            mbox.send(Pong);
        },
    );
    assert_eq!(dead.of::<Ping>(), [DeliveryFailure::TransferLoop]);
    assert_eq!(log, ["still alive"]);
}

#[test]
fn the_dead_letter_handler_takes_what_no_state_handles() {
    let (log, dead) = run(
        |ctx| {
            let busy = ctx.new_state("busy")?;
            ctx.in_state(&busy)
                .on(|me: &mut Scripted, _: &Ping, _: &mut Context<'_, Scripted>| me.note("ping"))?
                .suppress::<Pong>()?;
            ctx.on_dead_letter_of(
                |me: &mut Scripted, n: &u32, _: &mut Context<'_, Scripted>| {
                    me.note(format!("dead u32 {n} (its own handler)"))
                },
            )?;
            let again = ctx
                .on_dead_letter_of(|_: &mut Scripted, _: &u32, _: &mut Context<'_, Scripted>| {});
            assert!(matches!(
                again,
                Err(SubscribeError::AlreadySubscribedInState { .. })
            ));
            ctx.on_dead_letter(
                |me: &mut Scripted, letter: Unhandled, _: &mut Context<'_, Scripted>| {
                    if let Some(n) = letter.downcast_ref::<u64>() {
                        me.note(format!("dead u64 {n}"));
                    } else {
                        match letter.take_mut::<String>() {
                            Ok(s) => me.note(format!("dead mutable {s}")),
                            Err(l) => me.note(format!("dead {}", l.type_name())),
                        }
                    }
                },
            );
            ctx.change_state(&busy)?;
            Ok(())
        },
        |mbox| {
            mbox.send(Ping);
            mbox.send(7u64);
            mbox.send(5u32);
            mbox.send(Pong); // suppressed: not a dead letter
            mbox.send_mut(String::from("hi")).unwrap();
            mbox.send(Where);
        },
    );
    assert_eq!(
        log,
        [
            "ping".to_string(),
            "dead u64 7".into(),
            "dead u32 5 (its own handler)".into(),
            "dead mutable hi".into(),
            format!("dead {}", std::any::type_name::<Where>()),
        ]
    );
    assert!(dead.all().is_empty(), "{:?}", dead.all());
}

#[test]
fn subscribing_twice_in_one_state_is_an_error_other_states_are_not() {
    let (log, _) = run(
        |ctx| {
            let a = ctx.new_state("a")?;
            let b = ctx.new_state("b")?;
            let h = |_: &mut Scripted, _: &Ping, _: &mut Context<'_, Scripted>| {};
            ctx.in_state(&a).on(h)?;
            ctx.in_state(&b).on(h)?;
            ctx.on(h)?;
            let again = ctx.in_state(&a).on(h).map(|_| ());
            assert_eq!(
                again,
                Err(SubscribeError::AlreadySubscribedInState {
                    message_type: std::any::type_name::<Ping>(),
                    state: "a".into(),
                })
            );
            let suppress = ctx.in_state(&b).suppress::<Ping>().map(|_| ());
            assert!(matches!(
                suppress,
                Err(SubscribeError::AlreadySubscribedInState { .. })
            ));
            assert_eq!(
                ctx.on(h),
                Err(SubscribeError::AlreadySubscribed {
                    message_type: std::any::type_name::<Ping>()
                })
            );
            ctx.in_state(&a).unsubscribe::<Ping>();
            ctx.in_state(&a).on(h)?; // free again
            ctx.in_state(&a)
                .on_enter(|me: &mut Scripted, _: &mut Context<'_, Scripted>| me.note("ok"))?;
            ctx.change_state(&a)?;
            Ok(())
        },
        |_| {},
    );
    assert_eq!(log, ["ok"]);
}

/// Sends this agent's states out of `define`.
struct Owner {
    tx: std::sync::mpsc::Sender<State>,
}
impl Agent for Owner {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let st = ctx.new_state("owned")?;
        let _ = self.tx.send(st);
        Ok(())
    }
}

#[test]
fn another_agents_state_is_refused() {
    let (log, _) = run(
        |ctx| {
            // A state of another agent of another environment.
            let (tx, rx) = std::sync::mpsc::channel();
            let other_env = cohort::Environment::builder().start().unwrap();
            let mut coop = other_env.new_coop();
            coop.add(Owner { tx });
            other_env.register_coop(coop).unwrap();
            let foreign = rx.recv().unwrap();
            other_env.stop_and_wait();

            assert!(matches!(
                ctx.change_state(&foreign),
                Err(StateError::ForeignState { .. })
            ));
            assert!(matches!(
                ctx.new_substate(&foreign, "x"),
                Err(StateError::ForeignState { .. })
            ));
            assert!(!ctx.is_in(&foreign));
            assert_eq!(ctx.state_name(&foreign), None);
            let h = |_: &mut Scripted, _: &Ping, _: &mut Context<'_, Scripted>| {};
            assert!(matches!(
                ctx.in_state(&foreign).on(h).map(|_| ()),
                Err(SubscribeError::ForeignState { .. })
            ));
            let mine = ctx.new_state("mine")?;
            assert!(matches!(
                ctx.in_state(&mine)
                    .transfer_to_state::<Ping>(&foreign)
                    .map(|_| ()),
                Err(SubscribeError::ForeignState { .. })
            ));
            assert!(matches!(
                ctx.in_state(&foreign)
                    .on_enter(|_: &mut Scripted, _: &mut Context<'_, Scripted>| {})
                    .map(|_| ()),
                Err(StateError::ForeignState { .. })
            ));
            let sub = ctx.new_substate(&mine, "sub")?;
            assert!(matches!(
                ctx.in_state(&sub).initial_substate(&mine).map(|_| ()),
                Err(StateError::NotASubstate { .. })
            ));
            ctx.in_state(&mine)
                .on_enter(|me: &mut Scripted, _: &mut Context<'_, Scripted>| {
                    me.note("refused, and still working")
                })?;
            ctx.change_state(&mine)?;
            Ok(())
        },
        |_| {},
    );
    assert_eq!(log, ["refused, and still working"]);
}

#[test]
fn nesting_is_bounded_and_hooks_cannot_switch() {
    let (log, _) = run(
        |ctx| {
            let mut st = ctx.new_state("level 0")?;
            for i in 1..cohort::defaults::MAX_STATE_DEPTH {
                st = ctx.new_substate(&st, format!("level {i}"))?;
            }
            assert!(matches!(
                ctx.new_substate(&st, "too deep"),
                Err(StateError::TooDeep { .. })
            ));
            let other = ctx.new_state("other")?;
            ctx.in_state(&other).on_enter(
                move |me: &mut Scripted, ctx: &mut Context<'_, Scripted>| {
                    let r = ctx.change_state(&st);
                    assert!(matches!(r, Err(StateError::ChangeInHook { .. })), "{r:?}");
                    me.note("switch refused in on_enter");
                },
            )?;
            ctx.change_state(&other)?;
            Ok(())
        },
        |_| {},
    );
    assert_eq!(log, ["switch refused in on_enter"]);
}

#[test]
fn a_state_subscribed_twice_to_a_named_mailbox_gets_each_message_once() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (log, _) = run(
        move |ctx| {
            let news = ctx.environment().named_mbox("news");
            let a = ctx.new_state("a")?;
            let a1 = ctx.new_substate(&a, "a1")?;
            ctx.in_state(&a).subscribe(
                &news,
                |me: &mut Scripted, n: &u32, _: &mut Context<'_, Scripted>| {
                    me.note(format!("a {n}"))
                },
            )?;
            ctx.in_state(&a1).subscribe(
                &news,
                |me: &mut Scripted, n: &u32, _: &mut Context<'_, Scripted>| {
                    me.note(format!("a1 {n}"))
                },
            )?;
            ctx.in_state(&a1).on(
                move |_: &mut Scripted, _: &Ping, ctx: &mut Context<'_, Scripted>| {
                    ctx.change_state(&a).unwrap() // lands in a1 again: nothing changes
                },
            )?;
            ctx.change_state(&a)?;
            let _ = tx.send(news);
            Ok(())
        },
        move |mbox| {
            let news = rx.recv().unwrap();
            news.send(1u32);
            mbox.send(Ping);
            news.send(2u32);
        },
    );
    assert_eq!(log, ["a1 1", "a1 2"]);
}

/// A time limit: `waiting` switches to `timed out` after `limit`, unless `Ping` switched to
/// `served` first; `served` itself switches to `done` after twice that.
fn time_limited(ctx: &mut Context<'_, Scripted>, limit: Duration) -> Result<(), DefineError> {
    let waiting = ctx.new_state("waiting")?;
    let timed_out = ctx.new_state("timed out")?;
    let served = ctx.new_state("served")?;
    let done = ctx.new_state("done")?;
    ctx.in_state(&waiting).time_limit(limit, &timed_out)?.on(
        move |_: &mut Scripted, _: &Ping, ctx: &mut Context<'_, Scripted>| {
            ctx.change_state(&served).unwrap()
        },
    )?;
    ctx.in_state(&served)
        .time_limit(limit * 2, &done)?
        .on_enter(|me: &mut Scripted, _: &mut Context<'_, Scripted>| me.note("served"))?;
    for (st, name) in [(timed_out, "timed out"), (done, "done")] {
        ctx.in_state(&st)
            .on_enter(move |me: &mut Scripted, ctx: &mut Context<'_, Scripted>| {
                me.note(name);
                ctx.stop_environment();
            })?;
    }
    ctx.change_state(&waiting)?;
    Ok(())
}

/// Runs [`time_limited`], sending `Ping` right after registration if `ping`; returns the log
/// once a time limit has stopped the environment.
fn run_time_limited(ping: bool) -> Vec<String> {
    watchdog(TIMEOUT, move || {
        let env = cohort::Environment::builder().start().unwrap();
        let log = Log::default();
        let mut coop = env.new_coop();
        let limit = Duration::from_millis(20) * common::scale();
        let mbox = coop
            .add(Scripted {
                log: log.clone(),
                script: Some(Box::new(move |ctx| time_limited(ctx, limit))),
            })
            .mbox();
        env.register_coop(coop).unwrap();
        if ping {
            mbox.send(Ping);
        }
        env.wait();
        log.lock().map(|l| l.clone()).unwrap()
    })
}

#[test]
fn a_time_limit_switches_state_when_it_expires() {
    assert_eq!(run_time_limited(false), ["timed out"]);
}

#[test]
fn leaving_a_state_cancels_its_time_limit() {
    // `waiting`'s timer would fire before `served`'s (its deadline is earlier and the timer
    // service fires in deadline order): only a cancelled timer lets `done` come first... or
    // the Ping arrived after the time-out, which the log would show.
    let log = run_time_limited(true);
    assert!(
        log == ["served", "done"] || log == ["timed out"],
        "a cancelled time limit switched state: {log:?}"
    );
}

#[test]
fn leaving_a_state_drops_its_timer_and_reentering_starts_one() {
    let log = watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let log = Log::default();
        let mut coop = env.new_coop();
        let script = |ctx: &mut Context<'_, Scripted>| -> Result<(), DefineError> {
            let waiting = ctx.new_state("waiting")?;
            let never = ctx.new_state("never")?;
            let served = ctx.new_state("served")?;
            let count = |ctx: &Context<'_, Scripted>| ctx.environment().timer_count();
            ctx.in_state(&waiting)
                .time_limit(Duration::from_secs(3600), &never)?
                .on(
                    move |me: &mut Scripted, _: &Ping, ctx: &mut Context<'_, Scripted>| {
                        me.note(format!("waiting: {} timer", count(ctx)));
                        ctx.change_state(&served).unwrap();
                        me.note(format!("left: {} timers", count(ctx)));
                    },
                )?
                .on(
                    move |me: &mut Scripted, _: &Where, ctx: &mut Context<'_, Scripted>| {
                        me.note(format!("after the hooks: {} timer", count(ctx)));
                        ctx.stop_environment();
                    },
                )?;
            ctx.in_state(&served).on(
                move |me: &mut Scripted, _: &Pong, ctx: &mut Context<'_, Scripted>| {
                    ctx.change_state(&waiting).unwrap();
                    me.note(format!("switched back: {} timers", count(ctx)));
                },
            )?;
            ctx.change_state(&waiting)?;
            Ok(())
        };
        let mbox = coop
            .add(Scripted {
                log: log.clone(),
                script: Some(Box::new(script)),
            })
            .mbox();
        env.register_coop(coop).unwrap();
        mbox.send(Ping); // waiting -> served: the timer goes at once
        mbox.send(Pong); // served -> waiting: a new timer once the handler returns
        mbox.send(Where); // stops the environment
        env.wait();
        log.lock().map(|l| l.clone()).unwrap()
    });
    assert_eq!(
        log,
        [
            "waiting: 1 timer",
            "left: 0 timers",
            "switched back: 0 timers",
            "after the hooks: 1 timer"
        ]
    );
}

#[test]
fn transfer_and_suppress_apply_to_named_mailboxes_too() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (log, dead) = run(
        move |ctx| {
            let news = ctx.environment().named_mbox("states-news");
            let a = ctx.new_state("a")?;
            let b = ctx.new_state("b")?;
            let c = ctx.new_state("c")?;
            ctx.in_state(&a).transfer_to_state_from::<u32>(&news, &b)?;
            ctx.in_state(&b).subscribe(
                &news,
                move |me: &mut Scripted, n: &u32, ctx: &mut Context<'_, Scripted>| {
                    me.note(format!("b got {n}"));
                    ctx.change_state(&c).unwrap();
                },
            )?;
            ctx.in_state(&c).suppress_from::<u32>(&news)?;
            ctx.change_state(&a)?;
            let _ = tx.send(news);
            Ok(())
        },
        move |_| {
            let news = rx.recv().unwrap();
            news.send(1u32); // a: transferred to b, handled there; b switches to c
            news.send(2u32); // c: suppressed
        },
    );
    assert_eq!(log, ["b got 1"]);
    assert!(dead.all().is_empty(), "{:?}", dead.all());
}
