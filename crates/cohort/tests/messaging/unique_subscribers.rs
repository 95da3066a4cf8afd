//! Unique-subscribers mailboxes: multi-producer, one subscriber per message type, so they
//! carry mutable messages (moved to the handler, never copied); the errors they give.

use crate::common;

use cohort::{
    Agent, Context, DefineError, DeliveryFailure, Mbox, Mutable, RegisterError, SubscribeError,
};
use common::{DeadLetters, TIMEOUT, recv, recv_n, watchdog};
use std::sync::mpsc::{self, Sender};

/// Takes `Vec<u64>` by value from `jobs` and reports its buffer's address and sum; handles
/// `&u32` from `jobs` as well.
struct Owner {
    jobs: Mbox,
    out: Sender<(usize, u64)>,
}

impl Agent for Owner {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let jobs = self.jobs.clone();
        ctx.subscribe_mut(
            &jobs,
            |me: &mut Self, v: Vec<u64>, _: &mut Context<'_, Self>| {
                let _ = me.out.send((v.as_ptr() as usize, v.iter().sum()));
            },
        )?;
        ctx.subscribe(
            &jobs,
            |me: &mut Self, n: &u32, _: &mut Context<'_, Self>| {
                let _ = me.out.send((0, u64::from(*n)));
            },
        )?;
        Ok(())
    }
}

#[test]
fn mutable_messages_move_through_a_unique_subscribers_mailbox() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let jobs = env.named_unique_subscribers_mbox("jobs");
        assert_eq!(jobs, env.named_unique_subscribers_mbox("jobs"));
        assert_ne!(jobs, env.named_mbox("jobs"));
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Owner {
            jobs: jobs.clone(),
            out: tx,
        });
        env.register_coop(coop).unwrap();
        let mut sent = Vec::new();
        let producers: Vec<_> = (0..3u64)
            .map(|p| {
                let jobs = jobs.clone();
                let v = vec![p, 10];
                let ptr = v.as_ptr() as usize;
                sent.push((ptr, p + 10));
                std::thread::spawn(move || jobs.send_mut(v).unwrap())
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        jobs.send(7u32);
        let mut got = recv_n(&rx, 4, "the jobs");
        sent.push((0, 7));
        got.sort();
        sent.sort();
        // The very buffers that were sent: moved, not copied.
        assert_eq!(got, sent);
        // No subscriber for a type: a dead letter.
        jobs.send_mut(String::from("nobody")).unwrap();
        assert_eq!(
            dead.of::<Mutable<String>>(),
            vec![DeliveryFailure::NoSubscriber]
        );
        env.stop_and_wait();
    });
}

#[test]
fn a_second_subscriber_of_one_type_is_refused() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let jobs = env.unique_subscribers_mbox();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Owner {
            jobs: jobs.clone(),
            out: tx.clone(),
        });
        env.register_coop(coop).unwrap();
        let mut coop = env.new_coop();
        coop.add(Owner {
            jobs: jobs.clone(),
            out: tx,
        });
        match env.register_coop(coop) {
            Err(RegisterError::Define { reason, .. }) => {
                let expected = SubscribeError::UniqueSubscriberTaken {
                    message_type: std::any::type_name::<Mutable<Vec<u64>>>(),
                    mailbox: "<anonymous>".into(),
                };
                assert_eq!(reason, expected.to_string());
                assert!(reason.contains("one agent per message type"), "{reason}");
            }
            other => panic!("expected a define error, got {other:?}"),
        }
        // The refused agent left nothing behind: the first one still gets everything.
        jobs.send_mut(vec![1u64, 2]).unwrap();
        assert_eq!(recv(&rx, "the job").1, 3);
        env.stop_and_wait();
    });
}

/// Subscribes a mutable handler on the mailbox it is given and reports the result.
struct TryMut {
    on: Mbox,
    out: Sender<Result<(), SubscribeError>>,
}

impl Agent for TryMut {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let on = self.on.clone();
        let r = ctx.subscribe_mut(&on, |_: &mut Self, _: String, _: &mut Context<'_, Self>| {});
        let _ = self.out.send(r);
        Ok(())
    }
}

#[test]
fn mutable_subscriptions_on_multi_consumer_or_foreign_mailboxes_are_refused() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let other = coop.add(common::Idle).mbox();
        coop.add(TryMut {
            on: env.named_mbox("quotes"),
            out: tx.clone(),
        });
        coop.add(TryMut { on: other, out: tx });
        env.register_coop(coop).unwrap();
        let s = std::any::type_name::<Mutable<String>>();
        let e = recv(&rx, "the multi-consumer result").unwrap_err();
        assert_eq!(
            e,
            SubscribeError::MutableOnMultiConsumer {
                message_type: s,
                mailbox: "quotes".into()
            }
        );
        assert!(e.to_string().contains("unique-subscribers mailbox"), "{e}");
        assert_eq!(
            recv(&rx, "the foreign result"),
            Err(SubscribeError::ForeignDirectMailbox { message_type: s })
        );
        env.stop_and_wait();
    });
}
