//! Autoshutdown: `launch` returns when the last cooperation is gone; an environment started
//! with autoshutdown off keeps running until `stop()`.

use super::{Echo, Ping};
use crate::common;

use cohort::{
    Agent, Context, DefineError, DeregReason, Environment, LaunchError, Mbox, OneThreadBuilder,
};
use common::{Counter, TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy)]
struct Go;

/// Deregisters its coop from `start`; tells `peer` (if any) from its `finish`.
struct First {
    peer: Option<Mbox>,
    finished: Counter,
}

impl Agent for First {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.deregister_coop(DeregReason::Normal);
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.finished.inc();
        if let Some(p) = &self.peer {
            p.send(Go);
        }
    }
}

/// Deregisters its coop when told to; records whether the environment was already stopping
/// when it finished.
struct Second {
    went: Counter,
    finished_while_stopping: Arc<Mutex<Option<bool>>>,
}

impl Agent for Second {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Go, ctx: &mut Context<'_, Self>| {
            me.went.inc();
            ctx.deregister_coop(DeregReason::Normal);
        })?;
        Ok(())
    }
    fn finish(&mut self, ctx: &mut Context<'_, Self>) {
        *self.finished_while_stopping.lock().unwrap() = Some(ctx.environment().is_stopping());
    }
}

#[test]
fn launch_returns_when_the_last_coop_is_gone() {
    watchdog(TIMEOUT, || {
        let first_finished = Counter::new();
        let went = Counter::new();
        let stopping_at_finish = Arc::new(Mutex::new(None));
        let env_slot: Arc<Mutex<Option<Environment>>> = Arc::default();
        cohort::launch(|env| {
            *env_slot.lock().unwrap() = Some(env.clone());
            let mut coop = env.new_coop();
            let second = coop
                .add(Second {
                    went: went.clone(),
                    finished_while_stopping: stopping_at_finish.clone(),
                })
                .mbox();
            env.register_coop(coop)?;
            let mut coop = env.new_coop();
            coop.add(First {
                peer: Some(second),
                finished: first_finished.clone(),
            });
            env.register_coop(coop)?;
            Ok(())
        })
        .unwrap();
        let env = env_slot.lock().unwrap().take().unwrap();
        assert_eq!(first_finished.get(), 1);
        assert_eq!(
            went.get(),
            1,
            "the second coop outlived the first: its Go was handled"
        );
        assert_eq!(
            *stopping_at_finish.lock().unwrap(),
            Some(false),
            "the environment must not stop while a coop is still registered"
        );
        assert!(env.is_stopping());
        assert_eq!(env.coop_count(), 0);
        assert_eq!(env.dead_letters(), 0);
    });
}

#[test]
fn launch_with_an_empty_init_returns_at_once() {
    watchdog(TIMEOUT, || {
        cohort::launch(|_| Ok(())).unwrap();
        // A dispatcher created in init is shut down and joined too.
        cohort::launch(|env| {
            OneThreadBuilder::new().name("unused").build(env)?;
            Ok(())
        })
        .unwrap();
    });
}

#[test]
fn launch_init_error_stops_the_environment() {
    watchdog(TIMEOUT, || {
        let started = Counter::new();
        let finished = Counter::new();
        struct Member(Counter, Counter);
        impl Agent for Member {
            fn start(&mut self, _: &mut Context<'_, Self>) {
                self.0.inc();
            }
            fn finish(&mut self, _: &mut Context<'_, Self>) {
                self.1.inc();
            }
        }
        let err = cohort::launch(|env| {
            let mut coop = env.new_coop();
            coop.add(Member(started.clone(), finished.clone()));
            env.register_coop(coop)?;
            Err("init gave up".into())
        })
        .expect_err("init failed");
        match err {
            LaunchError::Init(e) => assert_eq!(e.to_string(), "init gave up"),
            other => panic!("expected LaunchError::Init, got {other:?}"),
        }
        // The coop registered before the error was deregistered and joined.
        assert_eq!(finished.get(), started.get());
        assert_eq!(finished.get(), 1);
    });
}

/// Deregisters its coop from `start`; signals when it is dropped, which happens once its
/// cooperation is completely gone (after the environment heard of it).
struct Ephemeral {
    dropped: Sender<()>,
}

impl Agent for Ephemeral {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.deregister_coop(DeregReason::Normal);
    }
}

impl Drop for Ephemeral {
    fn drop(&mut self) {
        let _ = self.dropped.send(());
    }
}

/// Registers a coop that deregisters itself and waits until its agent is dropped.
fn last_coop_comes_and_goes(env: &Environment) {
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.add(Ephemeral { dropped: tx });
    let handle = env.register_coop(coop).unwrap();
    common::recv(&rx, "the ephemeral agent to be dropped");
    // The agent's value is dropped right after its `finish`; the cooperation is gone (and
    // uncounted) a moment later, on the same worker.
    common::wait_until(|| handle.is_gone());
}

#[test]
fn start_without_autoshutdown_keeps_running_after_the_last_coop() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        last_coop_comes_and_goes(&env);
        assert!(
            !env.is_stopping(),
            "autoshutdown is off by default for start()"
        );
        assert_eq!(env.coop_count(), 0);

        // Still fully usable.
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let echo = coop.add(Echo::signal(tx)).mbox();
        let handle = env.register_coop(coop).unwrap();
        echo.send(Ping);
        common::recv(
            &rx,
            "a reply from a coop registered after the last one was gone",
        );
        assert!(!env.is_stopping());
        assert!(!handle.is_gone());

        env.stop();
        env.wait();
        assert!(handle.is_gone());
    });
}

#[test]
fn start_with_autoshutdown_stops_after_the_last_coop() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder()
            .autoshutdown(true)
            .start()
            .unwrap();
        last_coop_comes_and_goes(&env);
        // No stop(): the environment stopped by itself, so this returns.
        env.wait();
        assert!(env.is_stopping());
    });
}

#[test]
fn launch_without_autoshutdown_waits_for_stop() {
    watchdog(TIMEOUT, || {
        let (checked_tx, checked_rx) = mpsc::channel();
        cohort::Environment::builder()
            .autoshutdown(false)
            .launch(|env| {
                let env = env.clone();
                // A plain thread watches the last coop go, checks the environment is still
                // running, then stops it: only that lets `launch` return.
                std::thread::spawn(move || {
                    last_coop_comes_and_goes(&env);
                    let _ = checked_tx.send(env.is_stopping());
                    env.stop();
                });
                Ok(())
            })
            .unwrap();
        assert!(
            !common::recv(&checked_rx, "the watcher thread"),
            "with autoshutdown off, the environment must not stop when the last coop is gone"
        );
    });
}

/// The only coop is completely gone before `init` returns (autoshutdown cannot fire during
/// init): `launch` must notice once init is done, and return.
#[test]
fn launch_returns_when_the_last_coop_went_during_init() {
    watchdog(TIMEOUT, || {
        let env_slot: Arc<Mutex<Option<Environment>>> = Arc::default();
        cohort::launch(|env| {
            *env_slot.lock().unwrap() = Some(env.clone());
            last_coop_comes_and_goes(env);
            assert!(!env.is_stopping(), "no autoshutdown during init");
            Ok(())
        })
        .unwrap();
        let env = env_slot.lock().unwrap().take().unwrap();
        assert!(env.is_stopping());
        assert_eq!(env.coop_count(), 0);
    });
}
