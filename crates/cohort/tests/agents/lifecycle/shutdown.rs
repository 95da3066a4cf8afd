//! Stopping an environment whose pool agents still have large backlogs.
//!
//! Both workers of a pool are blocked in gates while plain threads queue thousands of
//! messages to agents of several cooperations (individual fifo, cooperation fifo, a child
//! cooperation); more senders race with `stop`. Then the gates open. Every `finish` hook must
//! run, every message must be either handled or counted as a dead letter (a `Drop` counter on
//! the message checks that none is lost or leaked), `wait` must return, and the pool's
//! threads (`cohort-<name>-<i>`, seen in `/proc/self/task`) must be gone.
//!
//! Pools only: the set-up blocks each of a pool's two workers in a gate while the backlog
//! is queued, and binds with both fifos; on a single-thread dispatcher the second gate could
//! never be entered. `deregistration.rs` checks finish-after-backlog on every kind.

use crate::common;

use cohort::dispatcher::Fifo;
use cohort::{Agent, Context, DefineError, DeliveryFailure, Mbox};
use common::dispatchers::PoolKind;
use common::{DeadLetters, Gate, TIMEOUT, gate, threads_named, watchdog};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// A message that counts its drops: each one sent is dropped exactly once, handled or not.
struct Tracked {
    drops: Arc<AtomicUsize>,
    n: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Counts what it handles; reports its start and its finish.
struct Sink {
    handled: Arc<AtomicUsize>,
    started: Sender<()>,
    finished: Sender<&'static str>,
    name: &'static str,
    gate: Option<Gate>,
}

#[derive(Debug, Clone, Copy)]
struct Block;

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Tracked, _: &mut Context<'_, Self>| {
            std::hint::black_box(m.n);
            me.handled.fetch_add(1, Ordering::SeqCst);
        })?;
        ctx.on(|me: &mut Self, _: &Block, _: &mut Context<'_, Self>| {
            me.gate.take().expect("one Block").block();
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.started.send(());
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(self.name);
    }
}

const NAMES: [&str; 9] = [
    "s0", "s1", "s2", "s3", "pair.a", "pair.b", "child", "gate0", "gate1",
];

fn stop_with_backlogs(kind: PoolKind, name: &str) {
    let backlog_per_sink = common::count(3_000);
    let racing_per_sink = common::count(2_000);
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let pool = kind.build(&env, name, 2);
    let prefix = format!("cohort-{name}-");
    let workers = vec![format!("{prefix}0"), format!("{prefix}1")];
    // A new thread names itself as it starts: wait until both have.
    assert!(
        common::poll_until(Duration::from_secs(5), || threads_named(&prefix) == workers),
        "the pool's two workers run: {:?}",
        threads_named(&prefix)
    );
    let individual = pool.binder(Fifo::Individual, 4);
    let cooperation = pool.binder(Fifo::Cooperation, 16);
    let handled = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    let (started_tx, started_rx) = mpsc::channel();
    let (finished_tx, finished_rx) = mpsc::channel();
    let sink = |name, gate| Sink {
        handled: handled.clone(),
        started: started_tx.clone(),
        finished: finished_tx.clone(),
        name,
        gate,
    };

    let mut sinks: Vec<Mbox> = Vec::new();
    let mut coop = env.new_coop();
    coop.set_binder(individual.clone());
    for name in &NAMES[..4] {
        sinks.push(coop.add(sink(name, None)).mbox());
    }
    let parent = env.register_coop(coop).unwrap();
    let mut coop = env.new_coop();
    coop.set_binder(cooperation.clone());
    sinks.push(coop.add(sink("pair.a", None)).mbox());
    sinks.push(coop.add(sink("pair.b", None)).mbox());
    env.register_coop(coop).unwrap();
    let mut coop = env.new_coop();
    coop.set_binder(cooperation).set_parent(&parent);
    sinks.push(coop.add(sink("child", None)).mbox());
    env.register_coop(coop).unwrap();
    let mut coop = env.new_coop();
    coop.set_binder(individual);
    let (g0, control0) = gate();
    let (g1, control1) = gate();
    let gate0 = coop.add(sink("gate0", Some(g0))).mbox();
    let gate1 = coop.add(sink("gate1", Some(g1))).mbox();
    env.register_coop(coop).unwrap();
    common::recv_n(&started_rx, NAMES.len(), "every start");

    // Both workers blocked: everything sent from now on waits in the queues.
    gate0.send(Block);
    control0.wait_entered();
    gate1.send(Block);
    control1.wait_entered();

    let send = |to: &Mbox, n: usize| {
        to.send(Tracked {
            drops: drops.clone(),
            n: n as u64,
        })
    };
    for i in 0..backlog_per_sink {
        for s in &sinks {
            send(s, i);
        }
    }
    let backlog = backlog_per_sink * sinks.len();

    // Senders racing with `stop`: what they send is handled or a `ReceiverGone` dead letter.
    let barrier = Arc::new(Barrier::new(3));
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let (sinks, barrier, drops) = (sinks.clone(), barrier.clone(), drops.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..racing_per_sink {
                    for s in &sinks {
                        s.send(Tracked {
                            drops: drops.clone(),
                            n: i as u64,
                        });
                    }
                }
            })
        })
        .collect();
    barrier.wait();
    env.stop();
    // Sent after `stop` to agents of a cooperation without children: refused at once.
    for s in &sinks[4..6] {
        send(s, 0);
    }
    control0.open();
    control1.open();
    env.wait();
    for r in racers {
        r.join().unwrap();
    }

    let sent = backlog + 2 * racing_per_sink * sinks.len() + 2;
    let handled = handled.load(Ordering::SeqCst);
    let dead_tracked = dead.of::<Tracked>();
    assert!(
        dead_tracked
            .iter()
            .all(|r| *r == DeliveryFailure::ReceiverGone),
        "{kind:?}: dead letters {dead_tracked:?}"
    );
    assert_eq!(
        handled + dead_tracked.len(),
        sent,
        "{kind:?}: handled ({handled}) + dead letters ({}) must be every message sent",
        dead_tracked.len()
    );
    assert!(
        handled >= backlog,
        "{kind:?}: only {handled} handled: the {backlog} messages queued before `stop` must all \
         run before `finish`"
    );
    assert!(
        dead_tracked.len() >= 2,
        "the sends after `stop` are dead letters"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        sent,
        "{kind:?}: every message sent is dropped exactly once"
    );
    assert_eq!(
        dead.all().len(),
        dead_tracked.len(),
        "{kind:?}: no other dead letter"
    );
    let mut finished: Vec<&str> = finished_rx.try_iter().collect();
    finished.sort_unstable();
    let mut names = NAMES.to_vec();
    names.sort_unstable();
    assert_eq!(finished, names, "{kind:?}: every finish hook ran once");
    assert_eq!(env.coop_count(), 0);
    // `wait` joined the workers; a joined thread leaves /proc right after its join returns.
    assert!(
        common::poll_until(Duration::from_secs(5), || threads_named(&prefix).is_empty()),
        "{kind:?}: pool threads still alive after wait: {:?}",
        threads_named(&prefix)
    );
}

#[test]
fn thread_pool_stop_with_backlogs_handles_or_counts_everything() {
    watchdog(TIMEOUT, || {
        stop_with_backlogs(PoolKind::ThreadPool, "sd-tp")
    });
}

#[test]
fn work_stealing_stop_with_backlogs_handles_or_counts_everything() {
    watchdog(TIMEOUT, || {
        stop_with_backlogs(PoolKind::WorkStealing, "sd-ws")
    });
}

#[test]
fn adv_thread_pool_stop_with_backlogs_handles_or_counts_everything() {
    watchdog(TIMEOUT, || {
        stop_with_backlogs(PoolKind::AdvThreadPool, "sd-adv")
    });
}

/// A pool nobody was ever bound to: its threads exit once it is shut down (by its handle,
/// before the environment stops), and `wait` joins them.
#[test]
fn unused_pools_threads_exit_on_shutdown_and_are_joined() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let tp = PoolKind::ThreadPool.build(&env, "itp", 3);
        let _ws = PoolKind::WorkStealing.build(&env, "iws", 3);
        // A new thread names itself as it starts: wait until all have.
        assert!(
            common::poll_until(Duration::from_secs(5), || {
                threads_named("cohort-itp-").len() == 3 && threads_named("cohort-iws-").len() == 3
            }),
            "both pools run three workers: {:?}",
            threads_named("cohort-i")
        );
        tp.shutdown();
        assert!(
            common::poll_until(Duration::from_secs(5), || threads_named("cohort-itp-")
                .is_empty()),
            "a shut-down pool with no agent keeps its threads: {:?}",
            threads_named("cohort-itp-")
        );
        assert_eq!(
            threads_named("cohort-iws-").len(),
            3,
            "the other pool still runs"
        );
        env.stop_and_wait();
        assert!(
            common::poll_until(Duration::from_secs(5), || threads_named("cohort-i")
                .is_empty()),
            "pool threads alive after wait: {:?}",
            threads_named("cohort-i")
        );
    });
}
