//! Misuse and undeliverable messages: each gets a typed error or a counted dead letter, and
//! leaves the environment working.

use crate::common;

use cohort::{
    Agent, BindError, Context, DefineError, DeliveryFailure, DispatcherError, Environment,
    OneThreadBuilder, RegisterError, SubscribeError,
};
use common::dispatchers::{self, Kind};
use common::{Counter, DeadLetters, TIMEOUT, watchdog};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy)]
struct Ping;

#[derive(Debug, Clone, Copy)]
struct Unhandled;

/// Answers pings on a channel.
type Echo = common::echo::Echo<Ping>;

#[test]
fn empty_coop_is_refused() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let coop = env.new_coop();
        assert!(coop.is_empty());
        match env.register_coop(coop) {
            Err(RegisterError::EmptyCoop) => {}
            other => panic!("expected EmptyCoop, got {other:?}"),
        }
        assert_eq!(env.coop_count(), 0);
        env.stop_and_wait();
    });
}

/// Registers an echo agent in `env` (on `binder`, else the default dispatcher) and waits for
/// its answer to a ping: the environment works.
fn answers(env: &Environment, binder: Option<cohort::Binder>, what: &str) {
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    let echo = match binder {
        Some(b) => coop.add_with_binder(Echo::signal(tx), b),
        None => coop.add(Echo::signal(tx)),
    }
    .mbox();
    env.register_coop(coop).unwrap();
    echo.send(Ping);
    common::recv(&rx, what);
}

/// Binds agent #0 to the default dispatcher and agent #1 to a dispatcher of `kind` that was
/// shut down (its binder taken before).
fn bind_to_shut_dispatcher(kind: Kind) {
    let name = "shut";
    let env = Environment::builder().start().unwrap();
    let shut = kind.build(&env, name, 2);
    shut.shutdown();

    let (tx, _rx) = mpsc::channel();
    let started = Counter::new();
    let mut coop = env.new_coop();
    coop.add(Echo::signal(tx.clone()).counting_starts(&started));
    coop.add_with_binder(
        Echo::signal(tx).counting_starts(&started),
        shut.binder.clone(),
    );
    match env.register_coop(coop) {
        Err(RegisterError::Bind {
            agent,
            index,
            source: BindError::DispatcherShutDown { name: dispatcher },
        }) => {
            assert_eq!(agent, std::any::type_name::<Echo>());
            assert_eq!(index, 1);
            assert_eq!(dispatcher, name);
        }
        other => panic!("expected Bind(DispatcherShutDown), got {other:?}"),
    }
    assert_eq!(env.coop_count(), 0);

    // The error message says which dispatcher.
    let mut coop = env.new_coop();
    coop.add_with_binder(common::Idle, shut.binder.clone());
    let shown = env.register_coop(coop).unwrap_err().to_string();
    assert!(shown.contains(name), "{shown}");

    // Agent #0 was bound to the default dispatcher then unbound: the environment still
    // works, and stops (a binding left behind would keep the default worker alive forever).
    answers(&env, None, "a reply on the default dispatcher");
    env.stop_and_wait();
    assert_eq!(started.get(), 0, "no agent of the refused coop started");
}

#[test]
fn binding_to_a_shut_down_dispatcher_fails() {
    dispatchers::on_every_kind(bind_to_shut_dispatcher);
}

/// A cooperation of one environment given a binder of another environment's dispatcher of
/// `kind`: refused with a typed error naming the dispatcher, nothing of it bound or started,
/// and both environments keep working and stop.
fn bind_to_other_environments_dispatcher(kind: Kind) {
    let name = "elsewhere";
    let owner = Environment::builder().start().unwrap();
    let foreign = kind.build(&owner, name, 2);
    let env = Environment::builder().start().unwrap();

    let started = Counter::new();
    let (tx, _rx) = mpsc::channel();
    // As an agent's own binder, after an agent on the default dispatcher...
    let mut coop = env.new_coop();
    coop.add(Echo::signal(tx.clone()).counting_starts(&started));
    coop.add_with_binder(
        Echo::signal(tx.clone()).counting_starts(&started),
        foreign.binder.clone(),
    );
    // ... and as the cooperation's binder.
    let mut whole = env.new_coop();
    whole.set_binder(foreign.binder.clone());
    whole.add(Echo::signal(tx).counting_starts(&started));
    for (coop, refused_at) in [(coop, 1), (whole, 0)] {
        match env.register_coop(coop) {
            Err(RegisterError::Bind {
                index,
                source: BindError::OtherEnvironment { name: dispatcher },
                ..
            }) => {
                assert_eq!(index, refused_at);
                assert_eq!(dispatcher, name);
            }
            other => panic!("expected Bind(OtherEnvironment), got {other:?}"),
        }
    }
    assert_eq!(env.coop_count(), 0);

    // Each environment still runs its own agents.
    answers(&env, None, "a reply on the default dispatcher");
    answers(&owner, None, "a reply on the owner's default dispatcher");
    answers(
        &owner,
        Some(foreign.binder.clone()),
        "a reply on the dispatcher in its own environment",
    );
    env.stop_and_wait();
    owner.stop_and_wait();
    assert_eq!(started.get(), 0, "no agent of a refused coop started");
}

#[test]
fn a_dispatcher_of_another_environment_is_refused() {
    dispatchers::on_every_kind(bind_to_other_environments_dispatcher);
}

#[test]
fn a_parent_of_another_environment_is_refused() {
    watchdog(TIMEOUT, || {
        let owner = Environment::builder().start().unwrap();
        let mut coop = owner.new_coop();
        coop.add(common::Idle);
        let parent = owner.register_coop(coop).unwrap();

        let env = Environment::builder().start().unwrap();
        let started = Counter::new();
        let (tx, _rx) = mpsc::channel();
        let mut child = env.new_coop();
        child.set_parent(&parent);
        child.add(Echo::signal(tx).counting_starts(&started));
        match env.register_coop(child) {
            Err(RegisterError::ParentInOtherEnvironment) => {}
            other => panic!("expected ParentInOtherEnvironment, got {other:?}"),
        }
        assert_eq!(env.coop_count(), 0);
        assert_eq!(owner.coop_count(), 1, "the parent alone");
        answers(&env, None, "a reply in the refused child's environment");
        env.stop_and_wait();
        owner.stop_and_wait();
        assert_eq!(started.get(), 0, "the refused child did not start");
    });
}

#[test]
fn stop_twice_and_register_after_stop() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.add(common::Idle);
        let handle = env.register_coop(coop).unwrap();
        env.stop();
        env.stop();
        assert!(env.is_stopping());

        let mut coop = env.new_coop();
        coop.add(common::Idle);
        match env.register_coop(coop) {
            Err(RegisterError::EnvironmentStopped) => {}
            other => panic!("expected EnvironmentStopped while stopping, got {other:?}"),
        }
        env.wait();
        env.wait();
        env.stop();
        assert!(handle.is_gone());

        let mut coop = env.new_coop();
        coop.add(common::Idle);
        match env.register_coop(coop) {
            Err(RegisterError::EnvironmentStopped) => {}
            other => panic!("expected EnvironmentStopped once stopped, got {other:?}"),
        }
        match OneThreadBuilder::new().build(&env) {
            Err(DispatcherError::EnvironmentStopped) => {}
            other => panic!("expected DispatcherError::EnvironmentStopped, got {other:?}"),
        }
        assert_eq!(env.coop_count(), 0);
        env.stop_and_wait();
    });
}

/// `DispatcherError::EnvironmentStopped` is documented as "the environment is stopping or
/// stopped" ("create dispatchers before calling stop()"): creating one after `stop()`, while a
/// coop is still finishing, must be refused too.
#[test]
fn dispatcher_creation_is_refused_while_stopping() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (g, control) = common::gate();
        let mut coop = env.new_coop();
        let blocker = coop.add(common::Blocker { gate: g }).mbox();
        env.register_coop(coop).unwrap();
        blocker.send(common::Block);
        control.wait_entered();
        env.stop();
        assert!(env.is_stopping());
        let result = OneThreadBuilder::new().name("late").build(&env);
        control.open();
        env.wait();
        match result {
            Err(DispatcherError::EnvironmentStopped) => {}
            other => panic!(
                "expected DispatcherError::EnvironmentStopped after stop(), got {:?}",
                other.map(|d| d.name().to_owned())
            ),
        }
    });
}

#[test]
fn sending_to_a_gone_agent_is_a_counted_dead_letter() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let echo = coop.add(Echo::signal(tx)).mbox();
        env.register_coop(coop).unwrap();
        echo.send(Ping);
        common::recv(&rx, "a reply before the stop");
        let env_handle = env.environment();
        env.stop_and_wait();

        assert_eq!(env_handle.dead_letters(), 0);
        echo.send(Ping);
        echo.send(Ping);
        assert_eq!(env_handle.dead_letters(), 2);
        assert_eq!(
            dead.all(),
            vec![
                (std::any::type_name::<Ping>(), DeliveryFailure::ReceiverGone),
                (std::any::type_name::<Ping>(), DeliveryFailure::ReceiverGone),
            ]
        );
    });
}

#[test]
fn message_without_handler_is_a_counted_dead_letter() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let echo = coop.add(Echo::signal(tx)).mbox();
        env.register_coop(coop).unwrap();
        echo.send(Unhandled);
        echo.send(Ping);
        // The ping is handled after the unhandled message, on the same worker.
        common::recv(&rx, "a reply");
        assert_eq!(env.dead_letters(), 1);
        assert_eq!(
            dead.all(),
            vec![(
                std::any::type_name::<Unhandled>(),
                DeliveryFailure::NoHandler
            )]
        );
        env.stop_and_wait();
    });
}

#[test]
fn sending_to_an_unregistered_agent_is_a_counted_dead_letter() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let echo = coop.add(Echo::signal(tx)).mbox();
        echo.send(Ping);
        assert_eq!(dead.of::<Ping>(), vec![DeliveryFailure::NotRegistered]);
        env.register_coop(coop).unwrap();
        echo.send(Ping);
        common::recv(&rx, "a reply once registered");
        assert_eq!(env.dead_letters(), 1);
        env.stop_and_wait();
    });
}

/// Panics in `define`.
struct PanicsInDefine;

impl Agent for PanicsInDefine {
    fn define(&mut self, _: &mut Context<'_, Self>) -> Result<(), DefineError> {
        panic!("[expected] no define today");
    }
}

#[test]
fn panic_in_define_is_a_register_error() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.add(common::Idle);
        coop.add(PanicsInDefine);
        match env.register_coop(coop) {
            Err(RegisterError::Define {
                agent,
                index,
                reason,
            }) => {
                assert_eq!(agent, std::any::type_name::<PanicsInDefine>());
                assert_eq!(index, 1);
                assert!(reason.contains("no define today"), "{reason}");
            }
            other => panic!("expected RegisterError::Define, got {other:?}"),
        }
        // Counted (runtime-semantics.md, "Panics"), but no panic reaction applies: the
        // registration fails instead.
        assert_eq!(env.panics(), 1);
        assert_eq!(env.coop_count(), 0);
        env.stop_and_wait();
    });
}

type Outcome = Arc<Mutex<Vec<Result<(), SubscribeError>>>>;

/// Subscribes to `Ping` twice (immutable) and to `Vec<u8>` twice (mutable) in `define`,
/// recording each result, then returns the first error (if any) from `define`.
struct DoubleSubscriber {
    outcome: Outcome,
}

impl Agent for DoubleSubscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let results = vec![
            ctx.on(|_: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {}),
            ctx.on(|_: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {}),
            ctx.on_mut(|_: &mut Self, _: Vec<u8>, _: &mut Context<'_, Self>| {}),
            ctx.on_mut(|_: &mut Self, _: Vec<u8>, _: &mut Context<'_, Self>| {}),
            // Immutable and mutable `Vec<u8>` are different subscriptions.
            ctx.on(|_: &mut Self, _: &Vec<u8>, _: &mut Context<'_, Self>| {}),
        ];
        let first_error = results
            .iter()
            .find_map(|r| r.as_ref().err().map(|e| e.to_string()));
        *self.outcome.lock().unwrap() = results;
        match first_error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

#[test]
fn subscribing_twice_to_a_type_is_an_error() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let outcome = Outcome::default();
        let mut coop = env.new_coop();
        coop.add(DoubleSubscriber {
            outcome: outcome.clone(),
        });
        let err = env.register_coop(coop).unwrap_err();
        assert_eq!(
            *outcome.lock().unwrap(),
            vec![
                Ok(()),
                Err(SubscribeError::AlreadySubscribed {
                    message_type: std::any::type_name::<Ping>()
                }),
                Ok(()),
                Err(SubscribeError::AlreadySubscribed {
                    message_type: std::any::type_name::<cohort::Mutable<Vec<u8>>>()
                }),
                Ok(()),
            ]
        );
        match err {
            RegisterError::Define { reason, .. } => {
                assert!(reason.contains(std::any::type_name::<Ping>()), "{reason}")
            }
            other => panic!("expected RegisterError::Define, got {other:?}"),
        }
        env.stop_and_wait();
    });
}

/// "A panic in the dead-letter hook is caught, logged and counted; the runtime goes on."
#[test]
fn a_panicking_dead_letter_hook_is_counted_and_survived() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder()
            .dead_letter_hook(|_| panic!("[expected] the hook fails"))
            .start()
            .unwrap();

        // Found by this thread (not registered): the hook runs here, inside `send`.
        let mut never = env.new_coop();
        let unregistered = never.add(common::Idle).mbox();
        let sent =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unregistered.send(Ping)));
        assert!(
            sent.is_ok(),
            "a panic in the dead-letter hook escaped Mbox::send: it must be caught, logged \
             and counted"
        );
        assert_eq!(env.dead_letters(), 1);
        assert_eq!(env.panics(), 1);

        // Found by a worker (no handler): the worker must survive it.
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let echo = coop.add(Echo::signal(tx)).mbox();
        env.register_coop(coop).unwrap();
        echo.send(Unhandled);
        echo.send(Ping);
        common::recv(&rx, "a reply after the hook panicked on the worker");
        assert_eq!(env.dead_letters(), 2);
        assert_eq!(env.panics(), 2);
        env.stop_and_wait();
    });
}
