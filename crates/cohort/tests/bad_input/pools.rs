//! Bad input to the pool dispatchers gets a typed error that names what is wrong:
//! `threads(0)`, `max_demands_at_once(0)`, binding to a pool that was shut down, creating a
//! pool after `stop`.

use crate::common;

use cohort::dispatcher::{Fifo, PoolBindParams, PoolHandle};
use cohort::{
    AdvThreadPoolBuilder, BindError, DispatcherError, Environment, RegisterError,
    ThreadPoolBuilder, WorkStealingBuilder,
};
use common::dispatchers::PoolKind;
use common::echo::Echo;
use common::{Idle, TIMEOUT, threads_named, watchdog};
use std::sync::mpsc;
use std::time::Duration;

/// Builds a pool of `kind` with `threads` workers, returning the builder's result.
fn try_build(
    kind: PoolKind,
    env: &Environment,
    name: &str,
    threads: usize,
) -> Result<PoolHandle, DispatcherError> {
    match kind {
        PoolKind::ThreadPool => ThreadPoolBuilder::new()
            .name(name)
            .threads(threads)
            .build(env)
            .map(PoolHandle::from),
        PoolKind::WorkStealing => WorkStealingBuilder::new()
            .name(name)
            .threads(threads)
            .build(env)
            .map(PoolHandle::from),
        PoolKind::AdvThreadPool => AdvThreadPoolBuilder::new()
            .name(name)
            .threads(threads)
            .build(env)
            .map(PoolHandle::from),
    }
}

#[track_caller]
fn assert_invalid(
    result: Result<impl std::fmt::Debug, DispatcherError>,
    dispatcher: &str,
    parameter: &str,
) {
    match result {
        Err(e @ DispatcherError::InvalidParameter { .. }) => {
            let text = e.to_string();
            let DispatcherError::InvalidParameter {
                dispatcher: d,
                parameter: p,
                reason,
            } = e
            else {
                unreachable!()
            };
            assert_eq!(d, dispatcher);
            assert_eq!(p, parameter);
            assert!(!reason.is_empty());
            assert!(
                text.contains(&format!("`{parameter}`")) && text.contains(dispatcher),
                "the message names the dispatcher and the parameter: {text}"
            );
        }
        other => panic!("expected InvalidParameter `{parameter}`, got {other:?}"),
    }
}

#[test]
fn zero_threads_is_an_invalid_parameter() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        for (kind, name) in [
            (PoolKind::ThreadPool, "zero-tp"),
            (PoolKind::WorkStealing, "zero-ws"),
            (PoolKind::AdvThreadPool, "zero-adv"),
        ] {
            assert_invalid(try_build(kind, &env, name, 0), name, "threads");
        }
        assert!(
            threads_named("cohort-zero-").is_empty(),
            "no thread is started for a rejected pool"
        );
        env.stop_and_wait();
    });
}

#[test]
fn zero_max_demands_at_once_is_an_invalid_parameter() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        for kind in PoolKind::ALL {
            let name = format!("{kind:?}");
            let pool = try_build(kind, &env, &name, 1).unwrap();
            for params in [
                PoolBindParams::new().max_demands_at_once(0),
                PoolBindParams::new()
                    .fifo(Fifo::Individual)
                    .max_demands_at_once(0),
                PoolBindParams::new()
                    .fifo(Fifo::Cooperation)
                    .max_demands_at_once(0),
            ] {
                assert_invalid(pool.pool_binder(params), &name, "max_demands_at_once");
            }
            // The smallest valid value works.
            let binder = pool
                .pool_binder(PoolBindParams::new().max_demands_at_once(1))
                .unwrap();
            let mut coop = env.new_coop();
            coop.add_with_binder(Idle, binder);
            env.register_coop(coop).unwrap();
        }
        env.stop_and_wait();
    });
}

#[test]
fn binding_to_a_shut_down_pool_fails_and_undoes_the_registration() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        for kind in PoolKind::ALL {
            let name = format!("shut-{kind:?}");
            let pool = try_build(kind, &env, &name, 2).unwrap();
            // Binders taken before the shutdown are refused too.
            let early = pool.binder();
            let early_params = pool
                .pool_binder(PoolBindParams::new().fifo(Fifo::Cooperation))
                .unwrap();
            // An agent bound before the shutdown keeps working.
            let (tx, ticks) = mpsc::channel();
            let mut coop = env.new_coop();
            let before = coop
                .add_with_binder(Echo::<Tick>::signal(tx), early.clone())
                .mbox();
            env.register_coop(coop).unwrap();
            pool.shutdown();

            for binder in [pool.binder(), early.clone(), early_params] {
                let mut coop = env.new_coop();
                coop.add(Idle); // default dispatcher: bound, then unbound
                coop.add_with_binder(Idle, binder);
                match env.register_coop(coop) {
                    Err(RegisterError::Bind {
                        index,
                        source: BindError::DispatcherShutDown { name: n },
                        ..
                    }) => {
                        assert_eq!(index, 1);
                        assert_eq!(n, name);
                    }
                    other => panic!("{kind:?}: expected Bind(DispatcherShutDown), got {other:?}"),
                }
            }
            before.send(Tick);
            common::recv(&ticks, "the tick of the agent bound before the shutdown");
        }
        assert_eq!(
            env.coop_count(),
            PoolKind::ALL.len(),
            "only the coops registered before shutdown"
        );
        env.stop_and_wait();
    });
}

#[derive(Debug, Clone, Copy)]
struct Tick;

#[test]
fn creating_a_pool_after_stop_fails() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        env.stop();
        for kind in PoolKind::ALL {
            let r = try_build(kind, &env, "late", 2);
            assert!(
                matches!(r, Err(DispatcherError::EnvironmentStopped)),
                "{kind:?} after stop: {r:?}"
            );
        }
        env.wait();
        for kind in PoolKind::ALL {
            let r = try_build(kind, &env, "late", 2);
            assert!(
                matches!(r, Err(DispatcherError::EnvironmentStopped)),
                "{kind:?} after wait: {r:?}"
            );
        }
        // The refused pools started their threads before the environment refused them; those
        // threads must exit by themselves (nobody will join them).
        assert!(
            common::poll_until(Duration::from_secs(5), || threads_named("cohort-late-")
                .is_empty()),
            "threads of refused pools are left running: {:?}",
            threads_named("cohort-late-")
        );
    });
}

/// A spin longer than `MAX_WORKER_SPIN`, or an adaptive one whose max is below its floor,
/// is refused by every dispatcher builder (and by the environment's, for its default
/// dispatcher) with `InvalidParameter` naming `worker_spin`; the bounds themselves work.
#[test]
fn a_worker_spin_out_of_range_is_an_invalid_parameter() {
    use cohort::dispatcher::{MAX_WORKER_SPIN, MIN_ADAPTIVE_SPIN};
    use cohort::{
        ActiveGroupBuilder, ActiveObjBuilder, OneThreadBuilder, PrioOneThreadBuilder, WorkerSpin,
    };
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let bad = [
            WorkerSpin::Fixed(MAX_WORKER_SPIN + Duration::from_nanos(1)),
            WorkerSpin::Adaptive {
                max: Duration::from_secs(1),
            },
            WorkerSpin::Adaptive {
                max: MIN_ADAPTIVE_SPIN / 2,
            },
        ];
        let name = "spin-bad";
        type Build<'a> = Box<dyn Fn(WorkerSpin) -> Result<(), DispatcherError> + 'a>;
        // Each builder type on its own (they share no trait): `new().name(..)`, the spin, `build`.
        macro_rules! build {
            ($builder:ty) => {
                Box::new(|s| {
                    <$builder>::new()
                        .name(name)
                        .worker_spin(s)
                        .build(&env)
                        .map(drop)
                }) as Build<'_>
            };
        }
        let builders: Vec<Build<'_>> = vec![
            build!(OneThreadBuilder),
            build!(ActiveObjBuilder),
            build!(ActiveGroupBuilder),
            build!(PrioOneThreadBuilder),
            build!(ThreadPoolBuilder),
            build!(WorkStealingBuilder),
            build!(AdvThreadPoolBuilder),
        ];
        for spin in bad {
            for build in &builders {
                assert_invalid(build(spin), name, "worker_spin");
            }
            match cohort::Environment::builder().worker_spin(spin).start() {
                Err(DispatcherError::InvalidParameter {
                    parameter: "worker_spin",
                    ..
                }) => {}
                Err(other) => panic!("expected worker_spin to be refused, got {other}"),
                Ok(_) => panic!("expected worker_spin {spin:?} to be refused"),
            }
        }
        assert!(
            threads_named("cohort-spin-bad").is_empty(),
            "no thread is started for a rejected dispatcher"
        );
        drop(builders);
        // The bounds are accepted, and a `Duration` is a fixed spin.
        for (i, spin) in [
            WorkerSpin::Fixed(MAX_WORKER_SPIN),
            WorkerSpin::Adaptive {
                max: MIN_ADAPTIVE_SPIN,
            },
            Duration::ZERO.into(),
        ]
        .into_iter()
        .enumerate()
        {
            let d = OneThreadBuilder::new()
                .name(format!("spin-ok-{i}"))
                .worker_spin(spin)
                .build(&env)
                .unwrap();
            let mut coop = env.new_coop();
            coop.add_with_binder(Idle, d.binder());
            env.register_coop(coop).unwrap();
        }
        env.stop_and_wait();
    });
}
