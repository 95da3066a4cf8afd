//! Which tokio runtime agents' futures run on: the environment's own, started on first use
//! and stopped with it, or the application's.

use crate::common::{TIMEOUT, recv, watchdog};
use crate::one_runtime_at_a_time;
use cohort::{Agent, AsyncError, Context, Environment, defaults};
use std::sync::mpsc::{self, Sender};

/// Threads of this process named like the embedded runtime's.
fn runtime_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == defaults::ASYNC_THREAD_NAME)
        .count()
}

/// Waits until `n` runtime threads are left: a joined thread may still be listed for a
/// moment after its join returned.
fn until_threads(n: usize) {
    while runtime_threads() != n {
        std::thread::yield_now();
    }
}

struct Spawner {
    out: Sender<String>,
}
impl Agent for Spawner {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.spawn(async { std::thread::current().name().map(str::to_owned) })
            .then(
                |me: &mut Self, name: Option<String>, _: &mut Context<'_, Self>| {
                    me.out.send(name.unwrap_or_default()).unwrap();
                },
            )
            .unwrap();
    }
}

struct Idle;
impl Agent for Idle {}

#[cfg(target_os = "linux")]
#[test]
fn the_embedded_runtime_starts_on_first_spawn_and_stops_with_the_environment() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        until_threads(0);
        let env = Environment::builder()
            .async_threads(2)
            .unwrap()
            .start()
            .unwrap();
        let mut coop = env.new_coop();
        coop.add(Idle);
        env.register_coop(coop).unwrap();
        assert_eq!(runtime_threads(), 0, "a runtime without a spawn");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Spawner { out: tx });
        env.register_coop(coop).unwrap();
        assert_eq!(recv(&rx, "the output"), defaults::ASYNC_THREAD_NAME);
        // The runtime's second worker may still be starting when the first has run the
        // future: wait for it to appear (the watchdog bounds the wait), then no more.
        until_threads(2);
        env.stop();
        env.wait();
        until_threads(0);
    });
}

#[cfg(target_os = "linux")]
#[test]
fn an_environment_that_never_spawns_starts_no_runtime() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        until_threads(0);
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.add(Idle);
        env.register_coop(coop).unwrap();
        env.stop();
        env.wait();
        assert_eq!(runtime_threads(), 0);
    });
}

#[test]
fn futures_run_on_the_applications_runtime_when_given() {
    let _one = one_runtime_at_a_time();
    watchdog(TIMEOUT, || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("app-runtime")
            .build()
            .unwrap();
        let env = Environment::builder()
            .tokio_handle(rt.handle().clone())
            .start()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Spawner { out: tx });
        env.register_coop(coop).unwrap();
        assert_eq!(recv(&rx, "the output"), "app-runtime");
        env.stop();
        env.wait();
        // The application's runtime is not the environment's to stop.
        assert_eq!(rt.block_on(async { 7 }), 7);
    });
}

#[test]
fn zero_threads_is_a_typed_error() {
    assert_eq!(
        Environment::builder().async_threads(0).err(),
        Some(AsyncError::ZeroThreads)
    );
}
