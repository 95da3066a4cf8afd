//! 1:N sends to subscribers spread over many queues (a pool with individual fifo): one
//! entry per send in the type's broadcast log, read by every queue.
//!
//! - **Order per sender across mailboxes.** Plain threads and agents send numbered messages
//!   to six subscribers on every dispatcher kind, switching between two named mailboxes and direct sends
//!   in an irregular pattern; every subscriber checks that each sender's numbers arrive
//!   strictly in order, none missing or repeated. (A named send after a direct one, or
//!   after one through the other mailbox, must come after it: the log's forced markers.)
//! - **Nothing lost on deregistration.** Subscribers deregistered with a backlog: for each,
//!   the messages it handled plus its dead letters equal what was sent.
//! - **Subscription changes.** A subscriber that joins mid-stream gets exactly the sends
//!   made after its subscription, the others every send.

use crate::common;

use cohort::dispatcher::Fifo;
use cohort::{Agent, Context, DefineError, DeliveryFailure, DeregReason, Mbox};
use common::dispatchers::{self, Kind, PoolKind};
use common::order::{Report, SendSeq, Seq, SeqCheck, check_reports, run_senders};
use common::{DeadLetters, TIMEOUT, watchdog};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};

/// Subscribed to `Seq` on two mailboxes and reachable directly; checks per-sender order.
struct Checker {
    check: SeqCheck,
    mailboxes: [Mbox; 2],
    finished: Sender<Report>,
}

impl Agent for Checker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &Seq, _: &mut Context<'_, Self>| me.check.on(m))?;
        for mbox in self.mailboxes.clone() {
            ctx.subscribe(
                &mbox,
                |me: &mut Self, m: &Seq, _: &mut Context<'_, Self>| me.check.on(m),
            )?;
        }
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(self.check.report());
    }
}

/// How message `n` of a sender travels: mostly runs through one mailbox (which share a
/// marker), broken by direct sends and switches to the other mailbox.
fn path(sender: u32, n: u32) -> usize {
    match (n.wrapping_mul(7) + sender * 3) % 11 {
        0..=4 => 0,
        5 | 6 => 2,
        _ => 1,
    }
}

/// Sends message `n` of `sender` to every subscriber, by `path`.
fn send(sender: u32, n: u32, mailboxes: &[Mbox; 2], direct: &[Mbox]) {
    let m = Seq { sender, n };
    match path(sender, n) {
        p @ (0 | 1) => mailboxes[p].send(m),
        _ => direct.iter().for_each(|d| d.send(m)),
    }
}

const SUBSCRIBERS: usize = 6;
const THREADS: u32 = 2;

fn order_per_sender(kind: Kind) {
    let per_sender = common::count(4_000) as u32;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let binder = kind.binder_with_threads(&env, "fan", 3);
    let mailboxes = [env.named_mbox("fan-a"), env.anonymous_mbox()];
    let sender_binders = [binder.clone(), env.default_binder()];
    let senders = THREADS as usize + sender_binders.len();
    let expected = senders * per_sender as usize;

    let (reached_tx, reached_rx) = mpsc::channel();
    let (finished_tx, finished_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(binder);
    let direct: Vec<Mbox> = (0..SUBSCRIBERS)
        .map(|index| {
            coop.add(Checker {
                check: SeqCheck::new(index, senders, expected, reached_tx.clone()),
                mailboxes: mailboxes.clone(),
                finished: finished_tx.clone(),
            })
            .mbox()
        })
        .collect();
    env.register_coop(coop).unwrap();

    let send: SendSeq = Arc::new(move |sender, n| send(sender, n, &mailboxes, &direct));
    let agents = sender_binders
        .into_iter()
        .enumerate()
        .map(|(i, b)| (b, 13 + 20 * i as u32))
        .collect();
    run_senders(&env, THREADS, agents, per_sender, send);
    common::recv_n(
        &reached_rx,
        SUBSCRIBERS,
        "every subscriber to get everything",
    );
    env.stop_and_wait();

    let reports = common::recv_n(&finished_rx, SUBSCRIBERS, "every finish");
    check_reports(reports, senders, per_sender, &format!("{kind:?}"));
    assert_eq!(dead.all(), vec![], "{kind:?}: no dead letter");
}

#[test]
fn keeps_order_per_sender_across_named_and_direct_sends() {
    dispatchers::on_every_kind(order_per_sender);
}

/// Counts what it handles; reports the count from `finish`.
struct Counter {
    mbox: Mbox,
    handled: usize,
    finished: Sender<usize>,
}

impl Counter {
    /// Adds `SUBSCRIBERS` counters of `mbox` to `coop`, reporting to `finished`.
    fn add_all(coop: &mut cohort::Coop, mbox: &Mbox, finished: &Sender<usize>) {
        for _ in 0..SUBSCRIBERS {
            coop.add(Counter {
                mbox: mbox.clone(),
                handled: 0,
                finished: finished.clone(),
            });
        }
    }
}

impl Agent for Counter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let mbox = self.mbox.clone();
        ctx.subscribe(
            &mbox,
            |me: &mut Self, _: &Seq, _: &mut Context<'_, Self>| me.handled += 1,
        )?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(self.handled);
    }
}

#[test]
fn subscribers_deregistered_with_a_backlog_handle_what_came_before_only() {
    watchdog(TIMEOUT, || {
        for kind in PoolKind::ALL {
            let sent = common::count(20_000);
            let (builder, dead) = DeadLetters::builder();
            let env = builder.start().unwrap();
            // One worker, held in a gate: the subscribers cannot finish before every send is
            // made, so every send before the deregistration is still queued for each of them
            // when it begins.
            let pool = kind.build(&env, "fan-dereg", 1);
            let binder = pool.binder(Fifo::Individual, 4);
            let (gate, control) = common::gate();
            let mut coop = env.new_coop();
            let blocker = coop
                .add_with_binder(common::Blocker { gate }, binder.clone())
                .mbox();
            env.register_coop(coop).unwrap();
            blocker.send(common::Block);
            control.wait_entered();

            let mbox = env.named_mbox("backlog");
            let (finished_tx, finished_rx) = mpsc::channel();
            let mut coop = env.new_coop();
            coop.set_binder(binder);
            Counter::add_all(&mut coop, &mbox, &finished_tx);
            let handle = env.register_coop(coop).unwrap();
            for n in 0..sent as u32 {
                mbox.send(Seq { sender: 0, n });
                if n as usize == sent / 2 {
                    handle.deregister(DeregReason::Normal);
                }
            }
            control.open();
            let handled: usize = common::recv_n(&finished_rx, SUBSCRIBERS, "every finish")
                .into_iter()
                .sum();
            env.stop_and_wait();
            // Deregistration (from this thread, no children) dropped the subscriptions before
            // `deregister()` returned: the sends before it are all handled (behind the gate,
            // before `finish`); the ones after reach nobody.
            let after = sent - (sent / 2 + 1);
            assert_eq!(
                dead.of::<Seq>(),
                vec![DeliveryFailure::NoSubscriber; after],
                "{kind:?}: the sends after deregister() reach nobody"
            );
            assert_eq!(
                handled,
                (sent / 2 + 1) * SUBSCRIBERS,
                "{kind:?}: the sends before deregister() are handled"
            );
        }
    });
}

/// Subscribes to `Seq` on `mbox` when told to; reports the first and last numbers it got.
struct Joiner {
    mbox: Mbox,
    first: Option<u32>,
    count: u32,
    joined: Sender<()>,
    finished: Sender<(Option<u32>, u32)>,
}

#[derive(Debug, Clone, Copy)]
struct Join;

impl Agent for Joiner {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Join, ctx: &mut Context<'_, Self>| {
            let mbox = me.mbox.clone();
            ctx.subscribe(
                &mbox,
                |me: &mut Self, m: &Seq, _: &mut Context<'_, Self>| {
                    me.first.get_or_insert(m.n);
                    me.count += 1;
                },
            )
            .expect("subscribe");
            let _ = me.joined.send(());
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send((self.first, self.count));
    }
}

#[test]
fn a_subscriber_that_joins_mid_stream_gets_exactly_the_later_sends() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let pool = PoolKind::ThreadPool.build(&env, "fan-join", 2);
        let binder = pool.binder(Fifo::Individual, 4);
        let mbox = env.named_mbox("join");
        let (finished_tx, finished_rx) = mpsc::channel();
        let (joined_tx, joined_rx) = mpsc::channel();
        let (counts_tx, counts_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_binder(binder);
        Counter::add_all(&mut coop, &mbox, &counts_tx);
        let joiner = coop
            .add(Joiner {
                mbox: mbox.clone(),
                first: None,
                count: 0,
                joined: joined_tx,
                finished: finished_tx,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        let (before, after) = (common::count(3_000) as u32, common::count(3_000) as u32);
        for n in 0..before {
            mbox.send(Seq { sender: 0, n });
        }
        joiner.send(Join);
        common::recv(&joined_rx, "the joiner to subscribe");
        for n in before..before + after {
            mbox.send(Seq { sender: 0, n });
        }
        env.stop_and_wait();
        let counts = common::recv_n(&counts_rx, SUBSCRIBERS, "every counter");
        assert_eq!(counts, vec![(before + after) as usize; SUBSCRIBERS]);
        let (first, count) = common::recv(&finished_rx, "the joiner's report");
        assert_eq!((first, count), (Some(before), after));
    });
}
