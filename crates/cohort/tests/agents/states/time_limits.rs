//! Time limits: a state left when its limit expires, the limit cancelled when the state is
//! left, and restarted when it is entered again.

use super::*;

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
