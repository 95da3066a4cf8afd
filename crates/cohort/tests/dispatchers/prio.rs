//! `prio_one_thread`: strictly ordered and quoted round robin.

use crate::common;

use cohort::dispatcher::Priority;
use cohort::{Agent, Binder, Context, DefineError, PrioOneThreadBuilder};
use common::echo::Echo;
use common::{Gate, TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};

struct Hold;
struct Work;

/// Blocks the dispatcher's only thread until the test opens the gate.
struct Holder {
    gate: Gate,
}

impl Agent for Holder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Hold, _: &mut Context<'_, Self>| me.gate.block())?;
        Ok(())
    }
}

/// Logs its tag for every `Work`; says when it has started.
struct Worker {
    tag: char,
    log: Sender<char>,
    started: Sender<()>,
}

impl Agent for Worker {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.started.send(());
    }

    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Work, _: &mut Context<'_, Self>| {
            let _ = me.log.send(me.tag);
        })?;
        Ok(())
    }
}

/// Queues `sends` (tag, count) while the worker thread is held, then releases it and returns
/// the order in which the work was handled.
fn order(
    build: PrioOneThreadBuilder,
    agents: &[(char, Priority)],
    sends: &[(char, usize)],
) -> String {
    let env = cohort::Environment::builder().start().unwrap();
    let disp = build.build(&env).unwrap();
    let (gate, control) = common::gate();
    let (tx, rx) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    let mut coop = env.new_coop();
    let holder = coop
        .add_with_binder(Holder { gate }, disp.priority_binder(Priority::P7))
        .mbox();
    let mut mboxes = Vec::new();
    for &(tag, p) in agents {
        let binder: Binder = disp.priority_binder(p);
        mboxes.push((
            tag,
            coop.add_with_binder(
                Worker {
                    tag,
                    log: tx.clone(),
                    started: started_tx.clone(),
                },
                binder,
            )
            .mbox(),
        ));
    }
    env.register_coop(coop).unwrap();
    // Start events sit in their agents' priority queues: let them all run first, so the
    // held thread's backlog is exactly the work below.
    common::recv_n(&started, agents.len(), "every worker started");
    holder.send(Hold);
    control.wait_entered();
    for &(tag, n) in sends {
        let m = &mboxes.iter().find(|(t, _)| *t == tag).unwrap().1;
        for _ in 0..n {
            m.send(Work);
        }
    }
    control.open();
    let total = sends.iter().map(|s| s.1).sum();
    let got: String = common::recv_n(&rx, total, "all the work")
        .into_iter()
        .collect();
    env.stop_and_wait();
    got
}

#[test]
fn strictly_ordered_runs_higher_priorities_first() {
    watchdog(TIMEOUT, || {
        let got = order(
            PrioOneThreadBuilder::new().strictly_ordered(),
            &[
                ('a', Priority::P0),
                ('c', Priority::P3),
                ('b', Priority::P7),
            ],
            &[('a', 3), ('c', 3), ('b', 3)],
        );
        assert_eq!(got, "bbbcccaaa");
    });
}

#[test]
fn quoted_round_robin_gives_each_priority_its_quota() {
    watchdog(TIMEOUT, || {
        // P7 handles two demands per round, P0 one.
        let got = order(
            PrioOneThreadBuilder::new().quoted_round_robin([1, 1, 1, 1, 1, 1, 1, 2]),
            &[('a', Priority::P0), ('b', Priority::P7)],
            &[('a', 4), ('b', 4)],
        );
        // Where the first round starts depends on how the start events and the holder's
        // `Hold` fell into rounds (e.g. "babbabaa" or "abbabbaa"). What must hold: while
        // both have work, P0 runs one demand per round and P7 at most two, and P7 gets its
        // full two in the middle rounds.
        assert_quota_rounds(&got, 'b', 2, 'a', 1);
    });
}

/// Checks the runs of `got` while both tags still have work left: `hi` runs at most
/// `hi_quota` long and `lo` runs exactly `lo_quota` long, and some `hi` run is full.
fn assert_quota_rounds(got: &str, hi: char, hi_quota: usize, lo: char, lo_quota: usize) {
    let mut runs: Vec<(char, usize)> = Vec::new();
    for c in got.chars() {
        match runs.last_mut() {
            Some((t, n)) if *t == c => *n += 1,
            _ => runs.push((c, 1)),
        }
    }
    // The last run of each tag may be cut short (its work ran out), and the run after the
    // last run of the other tag is unconstrained: look only at runs before both ends.
    let last_hi = runs.iter().rposition(|r| r.0 == hi).unwrap();
    let last_lo = runs.iter().rposition(|r| r.0 == lo).unwrap();
    let both_busy = &runs[..last_hi.min(last_lo)];
    for &(t, n) in both_busy {
        if t == hi {
            assert!(n <= hi_quota, "{hi} ran {n} in a round in {got:?}");
        } else {
            assert_eq!(n, lo_quota, "{lo} ran {n} in a round in {got:?}");
        }
    }
    assert!(
        both_busy.iter().any(|&(t, n)| t == hi && n == hi_quota),
        "{hi} never used its full quota in {got:?}"
    );
}

#[test]
fn a_zero_quota_is_refused() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let err = PrioOneThreadBuilder::new()
            .quoted_round_robin([1, 1, 0, 1, 1, 1, 1, 1])
            .build(&env)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("quoted_round_robin") && text.contains("P2"),
            "{text}"
        );
    });
}

/// Sends the work from a handler on the dispatcher's own thread (so the queues it wakes are
/// scheduled by that thread, not from outside).
struct Kicker {
    targets: Vec<(cohort::Mbox, usize)>,
}

struct Kick;

impl Agent for Kicker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Kick, _: &mut Context<'_, Self>| {
            for (m, n) in &me.targets {
                for _ in 0..*n {
                    m.send(Work);
                }
            }
        })?;
        Ok(())
    }
}

#[test]
fn strictly_ordered_runs_higher_priorities_first_when_woken_from_its_thread() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let disp = PrioOneThreadBuilder::new()
            .strictly_ordered()
            .build(&env)
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let (started_tx, started) = mpsc::channel();
        let mut coop = env.new_coop();
        let mut targets = Vec::new();
        for (tag, p) in [
            ('a', Priority::P0),
            ('c', Priority::P3),
            ('b', Priority::P6),
        ] {
            let worker = Worker {
                tag,
                log: tx.clone(),
                started: started_tx.clone(),
            };
            targets.push((
                coop.add_with_binder(worker, disp.priority_binder(p)).mbox(),
                3,
            ));
        }
        let kicker = coop
            .add_with_binder(Kicker { targets }, disp.priority_binder(Priority::P0))
            .mbox();
        env.register_coop(coop).unwrap();
        common::recv_n(&started, 3, "every worker started");
        kicker.send(Kick);
        let got: String = common::recv_n(&rx, 9, "all the work").into_iter().collect();
        env.stop_and_wait();
        assert_eq!(
            got, "bbbcccaaa",
            "work sent from a handler on the dispatcher's thread must run highest priority first"
        );
    });
}

#[derive(Debug, Clone, Copy)]
struct Item(u32);

/// Records every item; reports them from `finish`.
struct Sink {
    seen: Vec<u32>,
    finished: Sender<(char, Vec<u32>)>,
    tag: char,
}

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Item, _: &mut Context<'_, Self>| me.seen.push(m.0))?;
        Ok(())
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self
            .finished
            .send((self.tag, std::mem::take(&mut self.seen)));
    }
}

/// Agents of one cooperation on three priorities (three queues of the one thread), each with
/// a backlog when their cooperation is deregistered: every `finish` comes after all of its
/// agent's pending messages, in order, whatever the mode.
#[test]
fn finish_runs_after_the_pending_messages_of_every_priority() {
    watchdog(TIMEOUT, || {
        let n = common::count(1_000) as u32;
        for build in [
            PrioOneThreadBuilder::new().strictly_ordered(),
            PrioOneThreadBuilder::new().quoted_round_robin([2, 1, 1, 1, 3, 1, 1, 1]),
        ] {
            let env = cohort::Environment::builder().start().unwrap();
            let disp = build.build(&env).unwrap();
            let (gate, control) = common::gate();
            let mut holding = env.new_coop();
            let holder = holding
                .add_with_binder(Holder { gate }, disp.priority_binder(Priority::P7))
                .mbox();
            env.register_coop(holding).unwrap();
            let (tx, finished) = mpsc::channel();
            let mut coop = env.new_coop();
            let sinks: Vec<_> = [
                ('a', Priority::P0),
                ('b', Priority::P4),
                ('c', Priority::P7),
            ]
            .into_iter()
            .map(|(tag, p)| {
                let sink = Sink {
                    seen: Vec::new(),
                    finished: tx.clone(),
                    tag,
                };
                coop.add_with_binder(sink, disp.priority_binder(p)).mbox()
            })
            .collect();
            let handle = env.register_coop(coop).unwrap();
            holder.send(Hold);
            control.wait_entered();
            for i in 0..n {
                for s in &sinks {
                    s.send(Item(i));
                }
            }
            handle.deregister(cohort::DeregReason::Normal);
            control.open();
            let mut got = common::recv_n(&finished, 3, "the three finish hooks");
            got.sort();
            for (tag, seen) in got {
                assert_eq!(
                    seen,
                    (0..n).collect::<Vec<_>>(),
                    "`{tag}`: finish must come after every message pending when \
                     deregistration began, in order"
                );
            }
            env.stop_and_wait();
        }
    });
}

/// Answers `Item` with its number.
fn echo(tx: Sender<u32>) -> Echo<Item> {
    Echo::map(tx, |m| m.0)
}

/// Binding to a `prio_one_thread` that was shut down fails with a typed error that names it,
/// at any priority; an agent bound before keeps working.
#[test]
fn binding_after_shutdown_is_refused_and_bound_agents_keep_working() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let disp = PrioOneThreadBuilder::new()
            .name("late")
            .build(&env)
            .unwrap();
        let (tx, echoed) = mpsc::channel();
        let mut coop = env.new_coop();
        let before = coop
            .add_with_binder(echo(tx), disp.priority_binder(Priority::P2))
            .mbox();
        env.register_coop(coop).unwrap();
        disp.shutdown();
        for binder in [disp.binder(), disp.priority_binder(Priority::P5)] {
            let (tx, _) = mpsc::channel();
            let mut coop = env.new_coop();
            coop.add_with_binder(echo(tx), binder);
            match env.register_coop(coop) {
                Err(cohort::RegisterError::Bind {
                    source: cohort::BindError::DispatcherShutDown { name },
                    ..
                }) => assert_eq!(name, "late"),
                other => panic!("expected Bind(DispatcherShutDown), got {other:?}"),
            }
        }
        before.send(Item(7));
        assert_eq!(
            common::recv(&echoed, "the echo of the agent bound before"),
            7
        );
        env.stop_and_wait();
    });
}

/// Statistics of a `prio_one_thread`: its kind, its one worker thread, and the events of
/// every priority counted on it.
#[test]
fn statistics_count_the_events_of_every_priority_on_one_worker() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        env.start_stats(cohort::StatsConfig::new().export_metrics(false))
            .unwrap();
        let disp = PrioOneThreadBuilder::new()
            .name("ranked")
            .build(&env)
            .unwrap();
        let n = common::count(500);
        let (tx, echoed) = mpsc::channel();
        let mut coop = env.new_coop();
        let mboxes: Vec<_> = [Priority::P0, Priority::P6]
            .into_iter()
            .map(|p| {
                coop.add_with_binder(echo(tx.clone()), disp.priority_binder(p))
                    .mbox()
            })
            .collect();
        env.register_coop(coop).unwrap();
        for i in 0..n {
            for m in &mboxes {
                m.send(Item(i as u32));
            }
        }
        common::recv_n(&echoed, 2 * n, "every echo");
        let ranked = || {
            env.stats()
                .dispatchers
                .into_iter()
                .find(|d| d.name == "ranked")
                .expect("the dispatcher in the statistics")
        };
        // The worker publishes its counters at the end of each batch, right after handling.
        common::wait_until(|| {
            ranked().workers.iter().map(|w| w.events).sum::<u64>() >= 2 * n as u64
        });
        let s = ranked();
        assert_eq!(s.kind, "prio_one_thread::strictly_ordered");
        assert_eq!(s.workers.len(), 1);
        assert_eq!(s.workers[0].thread, "cohort-ranked-0");
        env.stop_stats();
        env.stop_and_wait();
    });
}

/// An agent that keeps its priority's local half full with its own sends still gets what a
/// plain thread sends it: the remote half moves in every `LOCAL_BATCH` demands, not only when
/// the local half runs dry.
#[test]
fn a_send_from_outside_reaches_an_agent_that_keeps_its_local_half_full() {
    watchdog(TIMEOUT, || {
        for build in [
            PrioOneThreadBuilder::new().strictly_ordered(),
            PrioOneThreadBuilder::new().quoted_round_robin([4; 8]),
        ] {
            let env = cohort::Environment::builder().start().unwrap();
            let disp = build.build(&env).unwrap();
            let (halted, ran) =
                common::self_feeder::halt_from_outside(&env, disp.priority_binder(Priority::P3));
            env.stop_and_wait();
            assert!(
                halted,
                "`Halt`, sent from outside to an agent that keeps {} demands of its own \
                 queued, was not handled in the {ran} demands it ran after the send returned",
                common::self_feeder::IN_FLIGHT
            );
        }
    });
}
