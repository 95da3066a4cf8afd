//! State changes: exits innermost first and entries outermost first, shallow and deep
//! history.

use super::*;

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
