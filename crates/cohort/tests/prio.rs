//! `prio_one_thread`: strictly ordered and quoted round robin.

mod common;

use cohort::dispatcher::Priority;
use cohort::{Agent, Binder, Context, DefineError, PrioOneThreadBuilder};
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

/// Logs its tag for every `Work`.
struct Worker {
    tag: char,
    log: Sender<char>,
}

impl Agent for Worker {
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
                },
                binder,
            )
            .mbox(),
        ));
    }
    env.register_coop(coop).unwrap();
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
        // The holder (P7) used one demand of P7's first round: b | a | b b | a | b | a a.
        assert_eq!(got, "babbabaa");
    });
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
