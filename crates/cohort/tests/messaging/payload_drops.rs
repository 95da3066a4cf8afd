//! Payload drop accounting: every message is dropped exactly once, whether it is handled,
//! becomes a dead letter, or is still queued when the environment stops; no leak, no double
//! drop. Agents themselves are dropped once their cooperation is gone.

use crate::common;

use cohort::{ActiveObjBuilder, Agent, Context, DefineError, DeliveryFailure, Environment, Mbox};
use common::dispatchers::{self, Kind};
use common::echo::Echo;
use common::{Counter, DeadLetters, TIMEOUT, gate, watchdog};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier};

/// Per message id, how many times it was dropped.
struct DropLog {
    drops: Vec<AtomicU32>,
}

impl DropLog {
    fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            drops: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    fn dropped(&self, id: usize) -> u32 {
        self.drops[id].load(Ordering::SeqCst)
    }

    /// Every id in `ids` dropped exactly once, every other id never.
    #[track_caller]
    fn assert_dropped_once(&self, ids: std::ops::Range<usize>) {
        for (id, d) in self.drops.iter().enumerate() {
            let d = d.load(Ordering::SeqCst);
            let want = u32::from(ids.contains(&id));
            assert_eq!(d, want, "message #{id} dropped {d} times, expected {want}");
        }
    }
}

/// A one-word message (stored inline in the envelope) that logs its drop.
struct Token(Box<(usize, Arc<DropLog>)>);

impl Token {
    fn new(id: usize, log: &Arc<DropLog>) -> Self {
        Self(Box::new((id, log.clone())))
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        let (id, log) = &*self.0;
        let before = log.drops[*id].fetch_add(1, Ordering::SeqCst);
        assert_eq!(before, 0, "message #{id} dropped twice");
    }
}

/// A larger message (boxed in the envelope) carrying a token.
struct Heavy {
    token: Token,
    _pad: [u64; 4],
}

impl Heavy {
    fn new(id: usize, log: &Arc<DropLog>) -> Self {
        Self {
            token: Token::new(id, log),
            _pad: [0; 4],
        }
    }
}

/// A message type nobody subscribes to.
struct Stray {
    _token: Token,
}

/// Handles `Token` (immutable and mutable) and `Heavy`; counts them. Mutable tokens are kept
/// in the agent (so they are dropped with it) every other time.
struct Consumer {
    handled: Counter,
    kept: Vec<Token>,
}

impl Consumer {
    fn new(handled: &Counter) -> Self {
        Self {
            handled: handled.clone(),
            kept: Vec::new(),
        }
    }
}

impl Agent for Consumer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Token, _: &mut Context<'_, Self>| me.handled.inc())?;
        ctx.on(|me: &mut Self, h: &Heavy, _: &mut Context<'_, Self>| {
            assert!(h.token.0.0 < h.token.0.1.drops.len());
            me.handled.inc()
        })?;
        ctx.on_mut(|me: &mut Self, t: Token, _: &mut Context<'_, Self>| {
            me.handled.inc();
            if t.0.0.is_multiple_of(2) {
                me.kept.push(t);
            }
        })?;
        Ok(())
    }
}

/// Sends message `id` in one of three shapes, by `id % 3`.
fn send_shape(to: &Mbox, id: usize, log: &Arc<DropLog>) {
    match id % 3 {
        0 => to.send(Token::new(id, log)),
        1 => to.send(Heavy::new(id, log)),
        _ => to.send_mut(Token::new(id, log)).unwrap(),
    }
}

fn handled_messages_are_dropped_once(kind: Kind) {
    let n = common::count(3_000);
    let log = DropLog::new(n);
    let env = Environment::builder().start().unwrap();
    let handled = Counter::new();
    let mut coop = env.new_coop();
    let consumer = coop
        .add_with_binder(Consumer::new(&handled), kind.binder(&env, "drops"))
        .mbox();
    env.register_coop(coop).unwrap();
    for id in 0..n {
        send_shape(&consumer, id, &log);
    }
    env.stop_and_wait();
    assert_eq!(handled.get(), n, "{kind:?}");
    // The consumer (and the tokens it kept) is dropped once nothing refers to it any more.
    drop(consumer);
    log.assert_dropped_once(0..n);
}

#[test]
fn handled_messages_are_dropped_once_on_every_kind() {
    dispatchers::on_every_kind(handled_messages_are_dropped_once);
}

#[test]
fn dead_letters_are_dropped_once() {
    watchdog(TIMEOUT, || {
        let log = DropLog::new(8);
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let handled = Counter::new();

        // Not registered yet: rejected at once, dropped at once.
        let mut coop = env.new_coop();
        let consumer = coop.add(Consumer::new(&handled)).mbox();
        consumer.send(Token::new(0, &log));
        assert_eq!(log.dropped(0), 1);
        consumer.send(Heavy::new(1, &log));
        assert_eq!(log.dropped(1), 1);
        env.register_coop(coop).unwrap();

        // No handler: rejected by the worker. A token handled after them shows they are done.
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let echo = coop.add(Echo::<Token>::signal(tx)).mbox();
        env.register_coop(coop).unwrap();
        echo.send(Stray {
            _token: Token::new(2, &log),
        });
        echo.send_mut(Token::new(3, &log)).unwrap(); // Echo only takes immutable tokens
        echo.send(Token::new(4, &log));
        common::recv(&rx, "the echo's reply");
        assert_eq!(log.dropped(2), 1);
        assert_eq!(log.dropped(3), 1);

        env.stop_and_wait();
        // Receiver gone.
        consumer.send(Token::new(5, &log));
        consumer.send_mut(Token::new(6, &log)).unwrap();
        consumer.send(Heavy::new(7, &log));
        assert_eq!(
            dead.all().iter().map(|(_, r)| *r).collect::<Vec<_>>(),
            vec![
                DeliveryFailure::NotRegistered,
                DeliveryFailure::NotRegistered,
                DeliveryFailure::NoHandler,
                DeliveryFailure::NoHandler,
                DeliveryFailure::ReceiverGone,
                DeliveryFailure::ReceiverGone,
                DeliveryFailure::ReceiverGone,
            ]
        );
        assert_eq!(handled.get(), 0);
        drop((consumer, echo));
        log.assert_dropped_once(0..8);
    });
}

/// A consumer blocked in a handler while messages pile up behind it and the environment
/// stops: the queued messages were pending when deregistration began, so they are handled;
/// those sent after `stop()` are dead letters. Each is dropped exactly once.
#[test]
fn messages_queued_when_the_environment_stops_are_dropped_once() {
    watchdog(TIMEOUT, || {
        let queued = common::count(1_000);
        let late = 10;
        let log = DropLog::new(queued + late);
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let handled = Counter::new();
        let (g, control) = gate();
        let mut coop = env.new_coop();
        let blocker = coop.add(common::Blocker { gate: g }).mbox();
        let consumer = coop.add(Consumer::new(&handled)).mbox();
        env.register_coop(coop).unwrap();
        blocker.send(common::Block);
        control.wait_entered();

        for id in 0..queued {
            send_shape(&consumer, id, &log);
        }
        env.stop();
        for id in queued..queued + late {
            send_shape(&consumer, id, &log);
            assert_eq!(log.dropped(id), 1, "a late message is dropped at once");
        }
        control.open();
        env.wait();

        assert_eq!(handled.get(), queued);
        assert_eq!(env.dead_letters(), late as u64);
        assert!(
            dead.all()
                .iter()
                .all(|(_, r)| *r == DeliveryFailure::ReceiverGone)
        );
        drop(env);
        drop((blocker, consumer));
        log.assert_dropped_once(0..queued + late);
    });
}

/// Senders keep sending while the environment stops under them: whatever the split between
/// handled messages and dead letters, their sum is what was sent and each message is dropped
/// once.
#[test]
fn messages_racing_with_stop_are_each_handled_or_rejected_once() {
    watchdog(TIMEOUT, || {
        let threads = 4;
        let per_thread = common::count(4_000);
        let total = threads * per_thread;
        for round in 0..3 {
            let log = DropLog::new(total);
            let env = Environment::builder().start().unwrap();
            let ao = ActiveObjBuilder::new().build(&env).unwrap();
            let handled = Counter::new();
            let mut coop = env.new_coop();
            // Two receivers: one on the default dispatcher, one on a thread of its own.
            let receivers = [
                coop.add(Consumer::new(&handled)).mbox(),
                coop.add_with_binder(Consumer::new(&handled), ao.binder())
                    .mbox(),
            ];
            env.register_coop(coop).unwrap();

            let barrier = Arc::new(Barrier::new(threads + 1));
            let (half_tx, half_rx) = mpsc::channel();
            let senders: Vec<_> = (0..threads)
                .map(|t| {
                    let receivers = receivers.clone();
                    let log = log.clone();
                    let barrier = barrier.clone();
                    let half = half_tx.clone();
                    std::thread::spawn(move || {
                        barrier.wait();
                        for i in 0..per_thread {
                            if i == per_thread / 2 {
                                let _ = half.send(());
                            }
                            let id = t * per_thread + i;
                            send_shape(&receivers[id % 2], id, &log);
                        }
                    })
                })
                .collect();
            barrier.wait();
            // Where the stop lands in the flow: at once, once the senders are half-way,
            // or once they are done.
            match round {
                0 => env.stop(),
                1 => {
                    common::recv_n(&half_rx, threads, "the senders to be half-way");
                    env.stop();
                }
                _ => {}
            }
            for s in senders {
                s.join().unwrap();
            }
            env.stop();
            env.wait();
            assert_eq!(
                handled.get() as u64 + env.dead_letters(),
                total as u64,
                "round {round}: handled + dead letters"
            );
            drop(env);
            drop(receivers);
            log.assert_dropped_once(0..total);
        }
    });
}

/// Signals when dropped.
struct DropSignal(Sender<&'static str>, &'static str);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

/// An agent that may keep mailboxes (its own, a peer's) in its state.
struct Holder {
    _signal: DropSignal,
    keep_self: bool,
    own: Option<Mbox>,
    peer: Option<Mbox>,
}

impl Holder {
    fn new(tx: &Sender<&'static str>, name: &'static str, keep_self: bool) -> Self {
        Self {
            _signal: DropSignal(tx.clone(), name),
            keep_self,
            own: None,
            peer: None,
        }
    }
}

impl Agent for Holder {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        if self.keep_self {
            // Keep its own mailbox, e.g. to send itself messages later.
            self.own = Some(ctx.self_mbox());
        }
    }
}

/// Agents are dropped once their cooperation is gone and the environment has stopped, even
/// when they keep mailboxes to themselves or to each other (a common pattern: the library's
/// own ping-pong example does it). Otherwise their state (and everything it owns: sockets,
/// files, queued messages) leaks.
#[test]
fn agents_are_dropped_after_the_environment_stops() {
    watchdog(TIMEOUT, || {
        let (tx, rx) = mpsc::channel();
        let env = Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.add(Holder::new(&tx, "plain", false));
        env.register_coop(coop).unwrap();

        let mut coop = env.new_coop();
        coop.add(Holder::new(&tx, "self-holder", true));
        env.register_coop(coop).unwrap();

        let mut coop = env.new_coop();
        let a = coop.add(Holder::new(&tx, "pair-a", false));
        let b = coop.add(Holder::new(&tx, "pair-b", false));
        coop.agent_mut(&a).peer = Some(b.mbox());
        coop.agent_mut(&b).peer = Some(a.mbox());
        drop((a, b));
        env.register_coop(coop).unwrap();
        drop(tx);

        env.stop_and_wait();
        let mut dropped: Vec<&str> = rx.try_iter().collect();
        dropped.sort_unstable();
        assert_eq!(
            dropped,
            vec!["pair-a", "pair-b", "plain", "self-holder"],
            "agents not dropped after the environment stopped (leaked)"
        );
    });
}
