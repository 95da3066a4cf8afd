//! `cohort::testing`: agents stepped on the test thread, virtual time, probes, and the typed
//! outcomes of bad scenarios (a loop that never gets quiet, a cooperation already gone, the
//! clock used from another thread).

mod common;

use cohort::testing::{TestEnv, TestError};
use cohort::{Agent, Context, DefineError, DeregReason, Mbox};
use common::echo::Echo;
use common::{TIMEOUT, watchdog};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
struct Ping(u32);
#[derive(Clone, Debug, PartialEq)]
struct Pong(u32);
#[derive(Clone, Debug)]
struct Tick;
struct Quit;

/// Answers each `Ping(n)` with a `Pong(n)` to `reply_to`; deregisters its cooperation on
/// `Quit`.
fn echo_to(reply_to: Mbox) -> Echo<Ping> {
    Echo::to_mbox(reply_to, |p: &Ping| Pong(p.0))
        .also(|ctx| ctx.on(|_, _: &Quit, ctx| ctx.deregister_coop(DeregReason::Normal)))
}

#[test]
fn steps_run_one_demand_each_and_probes_collect_replies() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let replies = t.probe::<Pong>().unwrap();
        let mut coop = t.new_coop();
        let echo = coop.add(echo_to(replies.mbox()));
        t.register(coop).unwrap();
        t.run_until_quiet().unwrap();
        assert!(!t.step(), "quiet: nothing to step");

        t.send(&echo.mbox(), Ping(1));
        t.send(&echo.mbox(), Ping(2));
        assert!(replies.is_empty(), "nothing runs before the test steps");
        assert!(t.step()); // Ping(1) handled, Pong(1) queued for the probe
        assert!(replies.is_empty());
        assert_eq!(t.run_until_quiet().unwrap(), 3);
        assert_eq!(replies.try_take(), Some(Pong(1)));
        assert_eq!(replies.try_take(), Some(Pong(2)));
        t.expect_handled::<Ping>(&echo.mbox()).unwrap();
        t.expect_handled::<Ping>(&echo.mbox()).unwrap();
        assert!(matches!(
            t.expect_handled::<Ping>(&echo.mbox()),
            Err(TestError::NotHandled { .. })
        ));
        assert!(matches!(
            t.expect_handled::<Quit>(&echo.mbox()),
            Err(TestError::NotHandled { .. })
        ));
        // The probe handled its two Pongs too; the log lists them in order.
        let log = t.take_handled();
        assert_eq!(log.len(), 2);
        assert!(
            log.iter()
                .all(|&(a, ty)| a == replies.mbox().id() && ty.ends_with("Pong"))
        );
    });
}

/// Sends itself a `Tick` for every `Tick`: never quiet.
struct Looper;
impl Agent for Looper {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_, _: &Tick, ctx| ctx.self_mbox().send(Tick))?;
        Ok(())
    }
}

#[test]
fn a_self_sending_agent_is_a_typed_error_after_the_step_limit() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        t.set_step_limit(50);
        let mut coop = t.new_coop();
        let looper = coop.add(Looper).mbox();
        t.register(coop).unwrap();
        t.run_until_quiet().unwrap();
        t.send(&looper, Tick);
        match t.run_until_quiet() {
            Err(TestError::NotQuiet { steps }) => assert_eq!(steps, 50),
            other => panic!("expected NotQuiet, got {other:?}"),
        }
        // Advancing the clock runs the agents first: the same error, not a hang.
        assert!(matches!(
            t.advance(Duration::from_secs(1)),
            Err(TestError::NotQuiet { .. })
        ));
        // Dropping the environment stops the loop (its cooperation deregisters).
    });
}

/// Counts `Tick`s from a periodic timer it starts, and reports each count.
struct Counter {
    report: Mbox,
    n: u32,
    timer: Option<cohort::TimerHandle>,
}
impl Agent for Counter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Tick, _| {
            me.n += 1;
            me.report.send(Ping(me.n));
        })?;
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.self_mbox();
        self.timer = Some(ctx.send_periodic(
            &me,
            Duration::from_millis(100),
            Duration::from_millis(100),
            Tick,
        ));
    }
}

#[test]
fn timers_follow_the_virtual_clock_only() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let counts = t.probe::<Ping>().unwrap();
        let mut coop = t.new_coop();
        coop.add(Counter {
            report: counts.mbox(),
            n: 0,
            timer: None,
        });
        t.register(coop).unwrap();
        t.run_until_quiet().unwrap();
        assert_eq!(t.now(), Duration::ZERO);
        counts.expect_no_message(Duration::from_millis(99)).unwrap();
        assert_eq!(t.now(), Duration::from_millis(99));
        assert_eq!(
            counts.expect_message(Duration::from_secs(5)).unwrap(),
            Ping(1)
        );
        assert_eq!(
            t.now(),
            Duration::from_millis(100),
            "the clock stops at the arrival"
        );
        t.advance(Duration::from_millis(950)).unwrap();
        assert_eq!(t.now(), Duration::from_millis(1050));
        assert_eq!(counts.len(), 9, "ticks at 200 ms .. 1000 ms");
        assert!(matches!(
            counts.expect_no_message(Duration::ZERO),
            Err(TestError::UnexpectedMessage { .. })
        ));
    });
}

#[test]
fn no_message_within_the_timeout_is_a_typed_error() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let p = t.probe::<Pong>().unwrap();
        match p.expect_message(Duration::from_secs(3)) {
            Err(TestError::NoMessage { within, .. }) => assert_eq!(within, Duration::from_secs(3)),
            other => panic!("expected NoMessage, got {other:?}"),
        }
        assert_eq!(t.now(), Duration::from_secs(3));
    });
}

/// A door: `closed` until a `Ping`, then `open`, which closes by itself after 300 ms.
struct Door;
impl Agent for Door {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let closed = ctx.new_state("closed")?;
        let open = ctx.new_state("open")?;
        let ajar = ctx.new_substate(&open, "ajar")?;
        ctx.in_state(&closed)
            .on(move |_, _: &Ping, ctx| ctx.change_state(&open).expect("own state"))?;
        ctx.in_state(&open)
            .time_limit(Duration::from_millis(300), &closed)?;
        let _ = ajar;
        ctx.change_state(&closed)?;
        Ok(())
    }
}

#[test]
fn state_time_limits_follow_the_virtual_clock() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let mut coop = t.new_coop();
        let door = coop.add(Door).mbox();
        t.register(coop).unwrap();
        t.run_until_quiet().unwrap();
        t.expect_state(&door, "closed").unwrap();
        t.send(&door, Ping(0));
        t.run_until_quiet().unwrap();
        t.expect_handled::<Ping>(&door).unwrap();
        assert_eq!(
            t.agent_state(&door).unwrap(),
            vec!["ajar".to_string(), "open".to_string()]
        );
        t.expect_state(&door, "open").unwrap();
        t.advance(Duration::from_millis(299)).unwrap();
        t.expect_state(&door, "ajar").unwrap();
        t.advance(Duration::from_millis(1)).unwrap();
        match t.expect_state(&door, "open") {
            Err(TestError::WrongState { expected, actual }) => {
                assert_eq!(expected, "open");
                assert_eq!(actual, "closed");
            }
            other => panic!("expected WrongState, got {other:?}"),
        }
        // Not an agent's direct mailbox: no state.
        assert_eq!(t.agent_state(&t.environment().named_mbox("x")), None);
    });
}

#[test]
fn waiting_for_a_cooperation_gone_or_alive_never_blocks() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let sink = t.probe::<Pong>().unwrap();
        let mut coop = t.new_coop();
        let echo = coop.add(echo_to(sink.mbox()));
        let handle = t.register(coop).unwrap();
        t.run_until_quiet().unwrap();
        match t.wait_gone(&handle) {
            Err(TestError::CoopNotGone(id)) => assert_eq!(id, handle.id()),
            other => panic!("expected CoopNotGone, got {other:?}"),
        }
        t.send(&echo.mbox(), Quit);
        t.wait_gone(&handle).unwrap();
        assert!(handle.is_gone());
        // Already gone: a defined outcome, at once.
        t.wait_gone(&handle).unwrap();
        // Sends to it now are dead letters, not handled.
        let before = t.environment().dead_letters();
        t.send(&echo.mbox(), Ping(9));
        t.run_until_quiet().unwrap();
        assert!(sink.is_empty());
        assert_eq!(t.environment().dead_letters(), before + 1);
    });
}

#[test]
fn a_probe_on_a_named_mailbox_sees_its_publications() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let news = t.environment().named_mbox("news");
        let p = t.probe_on::<Ping>(&news).unwrap();
        t.send(&news, Ping(7));
        assert_eq!(p.expect_message(Duration::ZERO).unwrap(), Ping(7));
    });
}

#[test]
fn a_timer_scheduled_from_another_thread_fires_only_when_the_test_advances() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let p = t.probe::<Pong>().unwrap();
        let (env, to) = (t.environment().clone(), p.mbox());
        std::thread::spawn(move || {
            // Fire-and-forget: the timer runs whether or not its id is kept.
            env.send_delayed(&to, Duration::from_secs(1), Pong(1));
        })
        .join()
        .unwrap();
        p.expect_no_message(Duration::from_millis(999)).unwrap();
        assert_eq!(p.expect_message(Duration::from_millis(1)).unwrap(), Pong(1));
    });
}

/// Registers a child cooperation with an `echo_to` replying to `reply_to` when it starts.
struct Parent {
    reply_to: Mbox,
    child: Option<Mbox>,
}
impl Agent for Parent {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, p: &Ping, _| {
            me.child.as_ref().expect("child registered").send(p.clone())
        })?;
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let mut coop = ctx.new_child_coop();
        let echo = coop.add(echo_to(self.reply_to.clone()));
        self.child = Some(echo.mbox());
        ctx.register_coop(coop).expect("the child registers");
    }
}

#[test]
fn child_cooperations_run_on_the_test_thread_too() {
    watchdog(TIMEOUT, || {
        let t = TestEnv::new();
        let replies = t.probe::<Pong>().unwrap();
        let mut coop = t.new_coop();
        let parent = coop
            .add(Parent {
                reply_to: replies.mbox(),
                child: None,
            })
            .mbox();
        t.register(coop).unwrap();
        t.run_until_quiet().unwrap();
        assert_eq!(t.environment().coop_count(), 3); // the probe's, the parent's, the child's
        t.send(&parent, Ping(5));
        assert!(replies.is_empty());
        assert_eq!(t.run_until_quiet().unwrap(), 3); // parent, child, probe
        assert_eq!(replies.try_take(), Some(Pong(5)));
        let log = t.take_handled();
        assert_eq!(log.len(), 3);
        assert_eq!(log[0].0, parent.id());
        assert!(log[1].1.ends_with("Ping") && log[2].1.ends_with("Pong"));
    });
}
