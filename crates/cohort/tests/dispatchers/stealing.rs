//! A worker blocked in a handler does not hold up the rest of its pool.
//!
//! - `work_stealing`: a handler on worker W1 wakes idle agents, then blocks in a gate. The
//!   queues it woke sit on W1 (its LIFO slot and its deque); the other worker must take them
//!   and run them while W1 is still blocked.
//! - `thread_pool`: the other worker keeps running every other agent.
//!
//! Each agent reports the thread its handler ran on; the test checks, while the gate is still
//! closed, that every report came and none came from the blocked thread.

use crate::common;

use cohort::dispatcher::Fifo;
use cohort::{Agent, Context, DefineError, Mbox};
use common::dispatchers::PoolKind;
use common::{Gate, TIMEOUT, gate, watchdog};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::ThreadId;
use std::time::Duration;

/// How long the other worker gets to pick up the woken agents while the gate is closed (an
/// idle worker normally does it within microseconds).
const STEAL_WITHIN: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
struct Ping;

/// Reports `(index, thread)` for every `Ping`, and its start.
struct Reporter {
    index: usize,
    report: Sender<(usize, ThreadId)>,
    started: Sender<()>,
}

impl Agent for Reporter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {
            let _ = me.report.send((me.index, std::thread::current().id()));
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.started.send(());
    }
}

#[derive(Debug, Clone, Copy)]
struct Go;

/// On `Go`: reports its thread, pings `wake` (idle agents), then blocks in its gate.
struct Blocker {
    gate: Option<Gate>,
    wake: Vec<Mbox>,
    thread: Sender<ThreadId>,
    started: Sender<()>,
}

impl Agent for Blocker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Go, _: &mut Context<'_, Self>| {
            let _ = me.thread.send(std::thread::current().id());
            for m in &me.wake {
                m.send(Ping);
            }
            me.gate.take().expect("one Go").block();
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.started.send(());
    }
}

/// A pool of two workers, `n` reporters, and a blocker that pings the first `woken_by_blocker`
/// of them from its handler before it blocks.
struct Setup {
    env: cohort::WrappedEnv,
    reporters: Vec<Mbox>,
    blocker: Mbox,
    control: common::GateControl,
    reports: Receiver<(usize, ThreadId)>,
    blocker_thread: Receiver<ThreadId>,
}

fn setup(kind: PoolKind, name: &str, n: usize, woken_by_blocker: usize) -> Setup {
    let env = cohort::Environment::builder().start().unwrap();
    let pool = kind.build(&env, name, 2);
    let binder = pool.binder(Fifo::Individual, 4);
    let (report_tx, reports) = mpsc::channel();
    let (started_tx, started_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(binder.clone());
    let reporters: Vec<Mbox> = (0..n)
        .map(|index| {
            coop.add(Reporter {
                index,
                report: report_tx.clone(),
                started: started_tx.clone(),
            })
            .mbox()
        })
        .collect();
    env.register_coop(coop).unwrap();

    let (g, control) = gate();
    let (thread_tx, blocker_thread) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(binder);
    let blocker = coop
        .add(Blocker {
            gate: Some(g),
            wake: reporters[..woken_by_blocker].to_vec(),
            thread: thread_tx,
            started: started_tx,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    // Every start has run, so every reporter's queue is idle: a ping schedules it.
    common::recv_n(&started_rx, n + 1, "every start");
    Setup {
        env,
        reporters,
        blocker,
        control,
        reports,
        blocker_thread,
    }
}

/// Collects reports until every index in `want` has reported or [`STEAL_WITHIN`] has passed.
fn collect(rx: &Receiver<(usize, ThreadId)>, want: &[usize]) -> Vec<(usize, ThreadId)> {
    let deadline = std::time::Instant::now() + STEAL_WITHIN * common::scale();
    let mut got: Vec<(usize, ThreadId)> = Vec::new();
    while !want.iter().all(|w| got.iter().any(|(i, _)| i == w)) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(r) => got.push(r),
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => panic!("every reporter is gone"),
        }
    }
    got
}

/// Blocks a worker in the blocker's handler (after it pinged what it pings), pings
/// `from_outside` reporters from the test thread, and returns what was handled while the
/// gate was closed (waiting until `want` have run, at most [`STEAL_WITHIN`]). Opens the gate and stops the environment before
/// returning, so a failed expectation never leaves anything blocked.
fn run(s: Setup, from_outside: std::ops::Range<usize>, want: &[usize]) -> Vec<usize> {
    s.blocker.send(Go);
    let blocked = common::recv(&s.blocker_thread, "the blocker's thread");
    s.control.wait_entered();
    for i in from_outside {
        s.reporters[i].send(Ping);
    }
    let got = collect(&s.reports, want);
    s.control.open();
    s.env.stop_and_wait();
    for (i, t) in &got {
        assert_ne!(
            *t, blocked,
            "reporter {i} ran on the blocked thread while it was blocked"
        );
    }
    let mut handled: Vec<usize> = got.into_iter().map(|(i, _)| i).collect();
    handled.sort_unstable();
    handled
}

/// `work_stealing`: the blocked handler pinged four idle agents. Each ping put its queue in
/// the worker's LIFO slot and pushed the previous one to the worker's deque, so three queues
/// wait in W1's deque (stealable) and the last one in its LIFO slot. Agents pinged from
/// outside the pool go to the injector. This test checks the deque and the injector.
#[test]
fn work_stealing_idle_worker_steals_from_a_blocked_workers_deque() {
    watchdog(TIMEOUT, || {
        let s = setup(PoolKind::WorkStealing, "steal1", 6, 4);
        // Reporter 3 is in the LIFO slot: checked by the next test.
        let handled = run(s, 4..6, &[0, 1, 2, 4, 5]);
        let handled: Vec<usize> = handled.into_iter().filter(|&i| i != 3).collect();
        assert_eq!(
            handled,
            vec![0, 1, 2, 4, 5],
            "agents queued on the blocked worker's deque (0, 1, 2) or in the injector (4, 5) \
             must run on the other worker while the first one is blocked"
        );
    });
}

/// `work_stealing`: the blocked handler pinged one idle agent; its queue sits in the blocked
/// worker's LIFO slot. The other worker, idle, must still run it: a handler that blocks (for
/// instance waiting for the reply of the agent it just messaged) must not strand the agents
/// it woke while another worker has nothing to do.
#[test]
fn work_stealing_agent_in_a_blocked_workers_lifo_slot_is_not_stranded() {
    watchdog(TIMEOUT, || {
        let s = setup(PoolKind::WorkStealing, "steal2", 1, 1);
        let handled = run(s, 0..0, &[0]);
        assert_eq!(
            handled,
            vec![0],
            "the agent woken by the blocked handler (in that worker's LIFO slot) did not run \
             within {STEAL_WITHIN:?} although the other worker was idle"
        );
    });
}

/// `thread_pool`: agents pinged by the blocked handler and from outside all run on the other
/// worker while the first one is blocked (the first agent the handler pinged waits in the
/// blocked worker's hand-off slot: it must not be stranded there).
#[test]
fn thread_pool_blocked_worker_does_not_stop_the_other() {
    watchdog(TIMEOUT, || {
        let s = setup(PoolKind::ThreadPool, "tpblk", 6, 3);
        let handled = run(s, 3..6, &[0, 1, 2, 3, 4, 5]);
        assert_eq!(
            handled,
            (0..6).collect::<Vec<_>>(),
            "every other agent must run on the free worker while one worker is blocked"
        );
    });
}
