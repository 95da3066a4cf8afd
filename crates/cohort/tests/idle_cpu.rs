//! An idle environment parks: after a burst of work, with no message left, the worker threads
//! of every dispatcher kind (`common::dispatchers::ALL`) stop consuming CPU.
//!
//! This is a benchmark-like check, made robust: it is the only test of its binary (so no other
//! test burns CPU in this process while it measures), it reads CPU time the kernel accounts
//! (`/proc/self/stat` for the whole process, `/proc/self/task/<tid>/stat` for each worker;
//! fields 14 and 15, utime and stime, in clock ticks), and its bounds are loose: over a
//! one-second window the whole process must use less than 20% of one core and the workers
//! together less than 10% (the real target, < 1% over 10 s, is measured by
//! `cohort-bench idle-cpu`: workers spin for `WORKER_SPIN` = 50 µs, then park until a send
//! wakes them).

mod common;

use cohort::{Agent, Context, DefineError, Mbox};
use common::dispatchers;
use common::{TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

/// Clock ticks per second of `/proc` CPU times (`USER_HZ`): 100 on every Linux target this
/// project builds for (x86_64, aarch64).
const TICKS_PER_SEC: u64 = 100;

/// The measurement window.
const WINDOW: Duration = Duration::from_secs(1);

/// utime + stime, in ticks, from a `/proc/.../stat` line (the command name, field 2, may
/// contain spaces: count fields after its closing parenthesis).
fn cpu_ticks(stat: &str) -> u64 {
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3, so fields 14 and 15 are at indices 11 and 12.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn process_ticks() -> u64 {
    cpu_ticks(&std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat"))
}

/// CPU ticks of every live thread whose name starts with `prefix`.
fn threads_ticks(prefix: &str) -> (usize, u64) {
    let mut threads = 0;
    let mut ticks = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if name.starts_with(prefix)
            && let Ok(stat) = std::fs::read_to_string(task.path().join("stat"))
        {
            threads += 1;
            ticks += cpu_ticks(&stat);
        }
    }
    (threads, ticks)
}

#[derive(Debug, Clone, Copy)]
struct Ball(u32);

/// Passes the ball to its peer until it has made `rounds` hops; the last hop reports.
struct Player {
    peer: Option<Mbox>,
    done: Sender<()>,
}

impl Agent for Player {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, b: &Ball, _: &mut Context<'_, Self>| {
            if b.0 == 0 {
                let _ = me.done.send(());
            } else {
                me.peer.as_ref().expect("a peer").send(Ball(b.0 - 1));
            }
        })?;
        Ok(())
    }
}

/// Registers a pair of players bound to `binder` and serves the first ball of their rally.
fn rally(env: &cohort::Environment, binder: cohort::Binder, hops: u32, done: &Sender<()>) {
    let mut coop = env.new_coop();
    coop.set_binder(binder);
    let a = coop.add(Player {
        peer: None,
        done: done.clone(),
    });
    let b = coop.add(Player {
        peer: None,
        done: done.clone(),
    });
    let (ma, mb) = (a.mbox(), b.mbox());
    coop.agent_mut(&a).peer = Some(mb);
    coop.agent_mut(&b).peer = Some(ma.clone());
    env.register_coop(coop).unwrap();
    ma.send(Ball(hops));
}

#[test]
fn idle_dispatchers_stop_consuming_cpu() {
    watchdog(TIMEOUT, || {
        let pairs = 8;
        let hops = common::count(500) as u32;
        let env = cohort::Environment::builder().start().unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        // `pairs` rallies on each pool, one on each single-thread kind.
        let (mut rallies, mut workers) = (0, 0);
        for (i, kind) in dispatchers::ALL.into_iter().enumerate() {
            let binder = kind.binder(&env, &format!("i{i}"));
            let n = if kind.is_pool() { pairs } else { 1 };
            for _ in 0..n {
                rally(&env, binder.clone(), hops, &done_tx);
            }
            rallies += n;
            workers += match kind {
                _ if kind.is_pool() => dispatchers::POOL_THREADS,
                dispatchers::Kind::ActiveObj => 2,
                _ => 1,
            };
        }
        // The burst: every pair passes its ball `hops` times, on both pools at once.
        common::recv_n(&done_rx, rallies, "every rally to end");
        assert_eq!(
            threads_ticks("cohort-i").0,
            workers,
            "the workers are visible: every pool's, active_obj's (one per agent of its \
             rally), one each for the other kinds"
        );

        let (_, pool_before) = threads_ticks("cohort-i");
        let process_before = process_ticks();
        let t0 = Instant::now();
        // The measurement window, not a synchronisation: nothing is waited for here.
        std::thread::sleep(WINDOW);
        let elapsed = t0.elapsed();
        let process = process_ticks() - process_before;
        let (_, pool_after) = threads_ticks("cohort-i");
        let pool = pool_after - pool_before;

        let window_ticks = elapsed.as_millis() as u64 * TICKS_PER_SEC / 1000;
        env.stop_and_wait();
        assert!(
            pool * 10 < window_ticks,
            "the idle workers used {pool} ticks of CPU in {elapsed:?} ({window_ticks} \
             ticks): some do not park"
        );
        assert!(
            process * 5 < window_ticks,
            "the idle process used {process} ticks of CPU in {elapsed:?} ({window_ticks} ticks)"
        );
    });
}
