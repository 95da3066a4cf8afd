//! `active_group`: agents bound to one group share one thread; groups are separate threads;
//! a group name belongs to one dispatcher.

use crate::common;

use cohort::{ActiveGroupBuilder, Agent, BindError, Context, DefineError, RegisterError};
use common::{TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};
use std::thread::ThreadId;

struct WhereAmI;

/// Reports the thread its `start` runs on, tagged.
struct Reporter {
    tag: &'static str,
    tx: Sender<(&'static str, ThreadId, String)>,
}

impl Agent for Reporter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &WhereAmI, _: &mut Context<'_, Self>| {
            let t = std::thread::current();
            let _ = me
                .tx
                .send((me.tag, t.id(), t.name().unwrap_or("").to_string()));
        })?;
        Ok(())
    }
}

#[test]
fn agents_of_one_group_share_a_thread_and_groups_do_not() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let disp = ActiveGroupBuilder::new().name("grp").build(&env).unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let mut mboxes = Vec::new();
        for tag in ["a1", "a2", "a3"] {
            mboxes.push(
                coop.add_with_binder(
                    Reporter {
                        tag,
                        tx: tx.clone(),
                    },
                    disp.group_binder("a"),
                )
                .mbox(),
            );
        }
        for tag in ["b1", "b2"] {
            mboxes.push(
                coop.add_with_binder(
                    Reporter {
                        tag,
                        tx: tx.clone(),
                    },
                    disp.group_binder("b"),
                )
                .mbox(),
            );
        }
        env.register_coop(coop).unwrap();
        for m in &mboxes {
            m.send(WhereAmI);
        }
        let got = common::recv_n(&rx, 5, "five reports");
        let thread_of = |prefix: char| -> Vec<(ThreadId, String)> {
            got.iter()
                .filter(|(t, ..)| t.starts_with(prefix))
                .map(|(_, id, n)| (*id, n.clone()))
                .collect()
        };
        let (a, b) = (thread_of('a'), thread_of('b'));
        assert_eq!(a.len(), 3);
        assert_eq!(b.len(), 2);
        assert!(
            a.iter().all(|x| x.0 == a[0].0),
            "group a runs on one thread: {a:?}"
        );
        assert!(
            b.iter().all(|x| x.0 == b[0].0),
            "group b runs on one thread: {b:?}"
        );
        assert_ne!(a[0].0, b[0].0, "two groups, two threads");
        assert_eq!(a[0].1, "cohort-grp-a");
        assert_eq!(b[0].1, "cohort-grp-b");
        env.stop_and_wait();
    });
}

#[test]
fn a_group_name_belongs_to_one_dispatcher() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let first = ActiveGroupBuilder::new().name("first").build(&env).unwrap();
        let second = ActiveGroupBuilder::new()
            .name("second")
            .build(&env)
            .unwrap();
        let (tx, _rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add_with_binder(
            Reporter {
                tag: "x",
                tx: tx.clone(),
            },
            first.group_binder("shared"),
        );
        env.register_coop(coop).unwrap();

        let mut coop = env.new_coop();
        coop.add_with_binder(Reporter { tag: "y", tx }, second.group_binder("shared"));
        match env.register_coop(coop) {
            Err(RegisterError::Bind {
                source: BindError::GroupTaken { group, owner },
                ..
            }) => {
                assert_eq!(group, "shared");
                assert_eq!(owner, "first");
            }
            other => panic!("expected GroupTaken, got {other:?}"),
        }
        env.stop_and_wait();
    });
}

#[test]
fn a_group_is_released_when_its_last_agent_is_gone() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let first = ActiveGroupBuilder::new().name("first").build(&env).unwrap();
        let second = ActiveGroupBuilder::new()
            .name("second")
            .build(&env)
            .unwrap();
        let (tx, rx) = mpsc::channel();

        let probe = common::Probe::<cohort::CoopDeregistered>::new();
        let mut coop = env.new_coop();
        coop.add_with_binder(
            Reporter {
                tag: "x",
                tx: tx.clone(),
            },
            first.group_binder("g"),
        );
        coop.notify_deregistered(probe.mbox.clone());
        let h = env.register_coop(coop).unwrap();
        h.deregister(cohort::DeregReason::Normal);
        probe.recv("the first coop to be gone");

        // The name is free again: another dispatcher may take it.
        let mut coop = env.new_coop();
        let m = coop
            .add_with_binder(Reporter { tag: "y", tx }, second.group_binder("g"))
            .mbox();
        env.register_coop(coop).unwrap();
        m.send(WhereAmI);
        let (_, _, name) = common::recv(&rx, "the report of the second group");
        assert_eq!(name, "cohort-second-g");
        env.stop_and_wait();
        probe.shutdown();
    });
}
