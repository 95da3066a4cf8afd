//! What the dead-letter hook is told on each path that finds a message undeliverable: the
//! mailbox it was sent to (`mbox`), the receiving agent (`agent`, the id of its direct
//! mailbox) where there is one, and the message itself (`message`), on the multi-consumer,
//! message-limit, message-chain and timer paths, and for the 1:N messages kept for agents
//! whose registration failed.

use crate::common::{self, Latch, TIMEOUT};
use cohort::mchain::{MchainParams, Overflow};
use cohort::{
    Agent, Context, DeadLetter, DefineError, DeliveryFailure, Environment, Mbox, MboxId,
    MessageLimits, OneThreadBuilder, WrappedEnv,
};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The message of these tests.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tick(u32);

/// Holds an agent's queue.
#[derive(Debug, Clone, Copy)]
struct Hold;

/// One dead letter as the hook saw it, with the message read back as a `Tick`.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    reason: DeliveryFailure,
    mbox: Option<MboxId>,
    agent: Option<MboxId>,
    tick: Option<Tick>,
}

/// An environment whose hook records every dead letter of a `Tick`.
fn start() -> (WrappedEnv, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let env = cohort::Environment::builder()
        .dead_letter_hook(move |d: &DeadLetter| {
            if d.message_type == std::any::type_name::<Tick>() {
                sink.lock().unwrap().push(Seen {
                    reason: d.reason,
                    mbox: d.mbox,
                    agent: d.agent,
                    tick: d.message.and_then(|m| m.downcast_ref::<Tick>()).copied(),
                });
            }
        })
        .start()
        .unwrap();
    (env, seen)
}

fn taken(seen: &Mutex<Vec<Seen>>) -> Vec<Seen> {
    std::mem::take(&mut *seen.lock().unwrap())
}

/// Waits until `seen` has `n` entries (some are found by a worker).
fn wait_for(seen: &Mutex<Vec<Seen>>, n: usize) -> Vec<Seen> {
    common::wait_until(|| seen.lock().unwrap().len() >= n);
    taken(seen)
}

fn letter(reason: DeliveryFailure, mbox: MboxId, agent: Option<MboxId>, n: u32) -> Seen {
    Seen {
        reason,
        mbox: Some(mbox),
        agent,
        tick: Some(Tick(n)),
    }
}

/// Subscribes to `Tick` on `topic` (with a delivery filter that panics, when asked) and
/// directly; holds its queue on `Hold`.
struct Receiver1 {
    topic: Option<Mbox>,
    panicking_filter: bool,
    limits: Option<fn(&Mbox) -> MessageLimits>,
    latch: Arc<Latch>,
    ticks: Sender<u32>,
}

impl Agent for Receiver1 {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if let Some(limits) = self.limits {
            ctx.set_message_limits(limits(&ctx.self_mbox()))?;
        }
        ctx.on(|me: &mut Self, t: &Tick, _| {
            let _ = me.ticks.send(t.0);
        })?;
        ctx.on(|me: &mut Self, _: &Hold, _| me.latch.wait())?;
        if let Some(topic) = &self.topic {
            ctx.subscribe(topic, |me: &mut Self, t: &Tick, _| {
                let _ = me.ticks.send(t.0);
            })?;
            if self.panicking_filter {
                ctx.set_delivery_filter(topic, |_: &Tick| panic!("the filter fails on purpose"))?;
            }
        }
        Ok(())
    }
}

struct Setup {
    topic: Option<Mbox>,
    panicking_filter: bool,
    limits: Option<fn(&Mbox) -> MessageLimits>,
}

/// Registers one [`Receiver1`] on a `one_thread` dispatcher of its own; its direct mailbox,
/// its latch and what it handles.
fn receiver(env: &Environment, setup: Setup) -> (Mbox, Arc<Latch>, Receiver<u32>) {
    let (ticks, rx) = mpsc::channel();
    let latch = Arc::new(Latch::default());
    let binder = OneThreadBuilder::new().build(env).unwrap().binder();
    let mut coop = env.new_coop();
    let mbox = coop
        .add_with_binder(
            Receiver1 {
                topic: setup.topic,
                panicking_filter: setup.panicking_filter,
                limits: setup.limits,
                latch: latch.clone(),
                ticks,
            },
            binder,
        )
        .mbox();
    env.register_coop(coop).unwrap();
    (mbox, latch, rx)
}

#[test]
fn named_mailbox_without_subscriber() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let topic = env.named_mbox("nobody");
        topic.send(Tick(1));
        assert_eq!(
            taken(&seen),
            vec![letter(DeliveryFailure::NoSubscriber, topic.id(), None, 1)]
        );
        env.stop_and_wait();
    })
}

#[test]
fn named_mailbox_with_a_panicking_filter() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let topic = env.named_mbox("filtered");
        let setup = Setup {
            topic: Some(topic.clone()),
            panicking_filter: true,
            limits: None,
        };
        let (agent, _, _) = receiver(&env, setup);
        topic.send(Tick(2));
        let why = DeliveryFailure::FilterPanicked;
        assert_eq!(
            taken(&seen),
            vec![letter(why, topic.id(), Some(agent.id()), 2)]
        );
        env.stop_and_wait();
    })
}

/// A limit of one `Tick`, over which it is dropped: the second of two ticks sent while the
/// queue is held, directly and through a named mailbox.
#[test]
fn message_limit_drop() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let topic = env.named_mbox("limited");
        let setup = Setup {
            topic: Some(topic.clone()),
            panicking_filter: false,
            limits: Some(|_| MessageLimits::new().drop::<Tick>(1)),
        };
        let (agent, latch, ticks) = receiver(&env, setup);
        agent.send(Hold);
        agent.send(Tick(3));
        agent.send(Tick(4));
        topic.send(Tick(5));
        let why = DeliveryFailure::LimitReached;
        assert_eq!(
            taken(&seen),
            vec![
                letter(why, agent.id(), Some(agent.id()), 4),
                letter(why, topic.id(), Some(agent.id()), 5),
            ]
        );
        latch.open();
        assert_eq!(common::recv(&ticks, "the tick within the limit"), 3);
        env.stop_and_wait();
    })
}

/// A limit that redirects to the agent itself: the redirect loops until the depth limit.
#[test]
fn message_limit_redirect_loop() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let setup = Setup {
            topic: None,
            panicking_filter: false,
            limits: Some(|me| MessageLimits::new().redirect::<Tick>(1, me)),
        };
        let (agent, latch, _) = receiver(&env, setup);
        agent.send(Hold);
        agent.send(Tick(6));
        agent.send(Tick(7));
        let why = DeliveryFailure::RedirectLoop;
        assert_eq!(
            taken(&seen),
            vec![letter(why, agent.id(), Some(agent.id()), 7)]
        );
        latch.open();
        env.stop_and_wait();
    })
}

/// A limit whose transform panics.
#[test]
fn message_limit_transform_panicked() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let setup = Setup {
            topic: None,
            panicking_filter: false,
            limits: Some(|me| {
                MessageLimits::new()
                    .transform::<Tick, Hold, _>(1, me, |_| panic!("the transform fails on purpose"))
            }),
        };
        let (agent, latch, _) = receiver(&env, setup);
        agent.send(Hold);
        agent.send(Tick(8));
        agent.send(Tick(9));
        let why = DeliveryFailure::TransformPanicked;
        assert_eq!(
            taken(&seen),
            vec![letter(why, agent.id(), Some(agent.id()), 9)]
        );
        latch.open();
        env.stop_and_wait();
    })
}

#[test]
fn message_chain_closed_or_full() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let full = env
            .create_mchain(MchainParams::bounded(1).on_overflow(Overflow::Error))
            .unwrap();
        let mbox = full.as_mbox();
        mbox.send(Tick(10));
        mbox.send(Tick(11));
        assert_eq!(
            taken(&seen),
            vec![letter(DeliveryFailure::ChainFull, mbox.id(), None, 11)]
        );
        full.close_drop_content();
        mbox.send(Tick(12));
        assert_eq!(
            taken(&seen),
            vec![letter(DeliveryFailure::ChainClosed, mbox.id(), None, 12)]
        );
        env.stop_and_wait();
    })
}

/// A timer scheduled after the environment stopped is refused: the dead letter names the
/// mailbox it was for (and the agent, for a direct one).
#[test]
fn timer_refused_after_stop() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let (agent, _, _) = receiver(
            &env,
            Setup {
                topic: None,
                panicking_filter: false,
                limits: None,
            },
        );
        let topic = env.named_mbox("late");
        let handle = env.environment();
        env.stop_and_wait();
        let _ = handle.send_delayed(&agent, Duration::ZERO, Tick(13));
        let _ = handle.send_delayed(&topic, Duration::ZERO, Tick(14));
        let why = DeliveryFailure::ReceiverGone;
        assert_eq!(
            taken(&seen),
            vec![
                letter(why, agent.id(), Some(agent.id()), 13),
                letter(why, topic.id(), None, 14),
            ]
        );
    })
}

/// Its `define` tells the test it runs, waits for the latch, then fails.
struct FailingDefine {
    entered: Sender<()>,
    latch: Arc<Latch>,
}

impl Agent for FailingDefine {
    fn define(&mut self, _: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let _ = self.entered.send(());
        self.latch.wait();
        Err("the registration fails on purpose".into())
    }
}

/// A 1:N message kept for an agent whose cooperation then fails to register.
#[test]
fn kept_for_a_registration_that_fails() {
    common::watchdog(TIMEOUT, || {
        let (env, seen) = start();
        let topic = env.named_mbox("kept");
        let (ticks, _rx) = mpsc::channel();
        let latch = Arc::new(Latch::default());
        let (entered_tx, entered) = mpsc::channel();
        let mut coop = env.new_coop();
        let agent = coop
            .add(Receiver1 {
                topic: Some(topic.clone()),
                panicking_filter: false,
                limits: None,
                latch: latch.clone(),
                ticks,
            })
            .mbox();
        coop.add(FailingDefine {
            entered: entered_tx,
            latch: latch.clone(),
        });
        let handle = env.environment();
        let registering = std::thread::spawn(move || handle.register_coop(coop).is_err());
        common::recv(&entered, "the failing define");
        topic.send(Tick(15));
        latch.open();
        assert!(registering.join().unwrap(), "the registration fails");
        let why = DeliveryFailure::NotRegistered;
        assert_eq!(
            wait_for(&seen, 1),
            vec![letter(why, topic.id(), Some(agent.id()), 15)]
        );
        env.stop_and_wait();
    })
}
