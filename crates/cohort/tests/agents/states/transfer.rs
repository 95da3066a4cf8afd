//! Transfer to another state and suppression, on direct and named mailboxes, their loops,
//! and the dead-letter handler.

use super::*;

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
