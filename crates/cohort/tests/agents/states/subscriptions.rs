//! Subscriptions per state: a handler applies in its state only, substates inherit and
//! override, and the typed errors of bad subscriptions (twice in one state, another agent's
//! state, nesting too deep, a switch from a hook).

use super::*;

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
