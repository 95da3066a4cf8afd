//! Multi-consumer mailboxes: named and anonymous, 1:N delivery with one shared payload,
//! subscription lifetime, and the errors they give.

use crate::common;

use cohort::{Agent, Context, DefineError, DeliveryFailure, Mbox, SendError, SubscribeError};
use common::{TIMEOUT, watchdog};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

/// A payload too big to be inline: shared through one `Arc`.
struct Quote {
    price: [u64; 4],
    drops: Arc<AtomicUsize>,
}

impl Drop for Quote {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

struct Tick(u32);

/// Subscribes to `Quote` and `Tick` on a named mailbox; reports what it saw.
struct Listener {
    mbox: Mbox,
    seen: Sender<(usize, u64)>,
    ticks: Sender<u32>,
    index: usize,
}

impl Agent for Listener {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let mbox = self.mbox.clone();
        ctx.subscribe(
            &mbox,
            |me: &mut Self, q: &Quote, _: &mut Context<'_, Self>| {
                let _ = me
                    .seen
                    .send((me.index, q as *const Quote as usize as u64 ^ q.price[0]));
            },
        )?;
        ctx.subscribe(
            &mbox,
            |me: &mut Self, t: &Tick, _: &mut Context<'_, Self>| {
                let _ = me.ticks.send(t.0);
            },
        )?;
        Ok(())
    }
}

#[test]
fn the_same_name_gives_the_same_mailbox() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let a = env.named_mbox("a");
        assert_eq!(a, env.named_mbox("a"));
        assert_ne!(a, env.named_mbox("b"));
        assert_ne!(env.anonymous_mbox(), env.anonymous_mbox());
        assert_eq!(a.name(), Some("a"));
        assert!(env.named_mbox_count() >= 1);
    });
}

#[test]
fn one_send_reaches_every_subscriber_with_one_shared_payload() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let pool = cohort::ThreadPoolBuilder::new()
            .threads(2)
            .build(&env)
            .unwrap();
        let active = cohort::ActiveObjBuilder::new().build(&env).unwrap();
        let mbox = env.named_mbox("quotes");
        let (seen_tx, seen_rx) = mpsc::channel();
        let (tick_tx, tick_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let binders = [env.default_binder(), pool.binder(), active.binder()];
        for (index, b) in binders.into_iter().enumerate() {
            let l = Listener {
                mbox: mbox.clone(),
                seen: seen_tx.clone(),
                ticks: tick_tx.clone(),
                index,
            };
            coop.add_with_binder(l, b);
        }
        env.register_coop(coop).unwrap();

        let drops = Arc::new(AtomicUsize::new(0));
        mbox.send(Quote {
            price: [7, 0, 0, 0],
            drops: drops.clone(),
        });
        let seen = common::recv_n(&seen_rx, 3, "three receivers");
        let mut who: Vec<usize> = seen.iter().map(|s| s.0).collect();
        who.sort_unstable();
        assert_eq!(who, vec![0, 1, 2], "every subscriber got it once");
        assert!(
            seen.iter().all(|s| s.1 == seen[0].1),
            "all three read the same allocation"
        );
        for i in 0..10 {
            mbox.send(Tick(i));
        }
        let ticks = common::recv_n(&tick_rx, 30, "thirty ticks");
        assert_eq!(ticks.iter().map(|&t| t as usize).sum::<usize>(), 3 * 45);
        env.stop_and_wait();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the shared payload is dropped exactly once"
        );
    });
}

struct Quiet;
impl Agent for Quiet {}

#[test]
fn no_subscriber_is_a_counted_dead_letter_and_mutable_messages_are_refused() {
    watchdog(TIMEOUT, || {
        let (builder, letters) = common::DeadLetters::builder();
        let env = builder.start().unwrap();
        let mbox = env.named_mbox("nobody");
        mbox.send(Tick(1));
        assert_eq!(letters.of::<Tick>(), vec![DeliveryFailure::NoSubscriber]);
        match mbox.send_mut(vec![1u8]) {
            Err(SendError::MutableToMultiConsumer { mailbox, .. }) => assert_eq!(mailbox, "nobody"),
            other => panic!("expected MutableToMultiConsumer, got {other:?}"),
        }
        env.stop_and_wait();
    });
}

/// Subscribes in define according to `what`, reporting the result.
struct Subscriber {
    target: Mbox,
    twice: bool,
    result: Arc<Mutex<Vec<Result<(), SubscribeError>>>>,
}

impl Agent for Subscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let target = self.target.clone();
        for _ in 0..(1 + usize::from(self.twice)) {
            let r = ctx.subscribe(
                &target,
                |_: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {},
            );
            self.result.lock().unwrap().push(r);
        }
        Ok(())
    }
}

#[test]
fn subscription_errors_are_typed() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let result = Arc::new(Mutex::new(Vec::new()));
        let mut coop = env.new_coop();
        let other = coop.add(Quiet).mbox();
        coop.add(Subscriber {
            target: env.named_mbox("t"),
            twice: true,
            result: result.clone(),
        });
        coop.add(Subscriber {
            target: other,
            twice: false,
            result: result.clone(),
        });
        env.register_coop(coop).unwrap();
        let r = result.lock().unwrap().clone();
        assert_eq!(r[0], Ok(()));
        assert!(
            matches!(r[1], Err(SubscribeError::AlreadySubscribed { .. })),
            "{:?}",
            r[1]
        );
        assert!(
            matches!(r[2], Err(SubscribeError::ForeignDirectMailbox { .. })),
            "{:?}",
            r[2]
        );
        env.stop_and_wait();
    });
}

/// Counts its drops: proves the named mailbox does not keep a finished agent alive.
struct Dropped {
    mbox: Mbox,
    dropped: Sender<()>,
}

impl Agent for Dropped {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let m = self.mbox.clone();
        ctx.subscribe(&m, |_: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {})?;
        Ok(())
    }
}

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.dropped.send(());
    }
}

#[test]
fn subscriptions_end_with_the_agent() {
    watchdog(TIMEOUT, || {
        let (builder, letters) = common::DeadLetters::builder();
        let env = builder.start().unwrap();
        let mbox = env.named_mbox("ending");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Dropped {
            mbox: mbox.clone(),
            dropped: tx.clone(),
        });
        let h = env.register_coop(coop).unwrap();
        h.deregister(cohort::DeregReason::Normal);
        common::recv(&rx, "the agent to be dropped after finish");
        common::wait_until(|| h.is_gone());
        mbox.send(Tick(1));
        assert_eq!(letters.of::<Tick>(), vec![DeliveryFailure::NoSubscriber]);

        // A cooperation that fails to register does not keep its subscriptions either.
        let mut coop = env.new_coop();
        coop.add(Dropped {
            mbox: mbox.clone(),
            dropped: tx,
        });
        coop.add(Failing);
        assert!(env.register_coop(coop).is_err());
        common::recv(&rx, "the agent of the failed registration to be dropped");
        mbox.send(Tick(2));
        assert_eq!(letters.of::<Tick>().len(), 2);
        env.stop_and_wait();
    });
}

struct Failing;
impl Agent for Failing {
    fn define(&mut self, _: &mut Context<'_, Self>) -> Result<(), DefineError> {
        Err("refused on purpose".into())
    }
}

/// Publishes `Tick(1)`, then, after the subscribers changed (on the same thread), `Tick(2)`
/// and `Tick(3)`: a worker keeps the subscriber table of its last send, and must not use it
/// once the subscriptions changed.
struct Publisher {
    mbox: Mbox,
    joiner: Option<Mbox>,
}

struct Join;
struct Step;

impl Agent for Publisher {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Step, _: &mut Context<'_, Self>| {
            me.mbox.send(Tick(2));
            me.mbox.send(Tick(3));
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.mbox.send(Tick(1));
        if let Some(j) = &self.joiner {
            j.send(Join);
        }
        ctx.self_mbox().send(Step);
    }
}

/// Leaves the mailbox on its first tick.
struct Leaver {
    mbox: Mbox,
    seen: Sender<(&'static str, u32)>,
}

impl Agent for Leaver {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let mbox = self.mbox.clone();
        ctx.subscribe(
            &mbox,
            |me: &mut Self, t: &Tick, ctx: &mut Context<'_, Self>| {
                let _ = me.seen.send(("leaver", t.0));
                assert!(ctx.unsubscribe_from::<Tick>(&me.mbox));
            },
        )?;
        Ok(())
    }
}

/// Joins the mailbox when told to; stops the environment on `Tick(3)`.
struct Joiner {
    mbox: Mbox,
    seen: Sender<(&'static str, u32)>,
}

impl Agent for Joiner {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Join, ctx: &mut Context<'_, Self>| {
            let mbox = me.mbox.clone();
            ctx.subscribe(
                &mbox,
                |me: &mut Self, t: &Tick, ctx: &mut Context<'_, Self>| {
                    let _ = me.seen.send(("joiner", t.0));
                    if t.0 == 3 {
                        ctx.stop_environment();
                    }
                },
            )
            .unwrap();
        })?;
        Ok(())
    }
}

#[test]
fn a_subscription_change_is_seen_by_the_next_send_of_the_same_thread() {
    watchdog(TIMEOUT, || {
        let (builder, letters) = common::DeadLetters::builder();
        let env = builder.start().unwrap();
        let mbox = env.named_mbox("changing");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Leaver {
            mbox: mbox.clone(),
            seen: tx.clone(),
        });
        let joiner = coop.add(Joiner {
            mbox: mbox.clone(),
            seen: tx,
        });
        let publisher = coop.add(Publisher {
            mbox: mbox.clone(),
            joiner: None,
        });
        coop.agent_mut(&publisher).joiner = Some(joiner.mbox());
        env.register_coop(coop).unwrap();
        env.wait();
        let seen: Vec<_> = rx.try_iter().collect();
        assert_eq!(seen, vec![("leaver", 1), ("joiner", 2), ("joiner", 3)]);
        assert!(letters.of::<Tick>().is_empty());
    });
}
