//! Messages that reach an agent before its `start` has run are handled after `start`, in the
//! order they were sent (on every dispatcher kind where the timing is not specific to
//! `one_thread`'s local and remote halves).

use crate::common;

use cohort::{Agent, Context, DefineError, Mbox, OneThreadBuilder};
use common::dispatchers;
use common::{Block, Blocker, DeadLetters, TIMEOUT, gate, watchdog};
use std::sync::mpsc::{self, Receiver, Sender};

/// Message `n` from sender `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seq {
    from: u32,
    n: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Start,
    Msg(u32, u32),
}

/// Records its `start` and every `Seq`; hands the record over from `finish`.
struct Recorder {
    events: Vec<Event>,
    done: Sender<Vec<Event>>,
    /// Subscribe to `Seq` in `start` rather than in `define`.
    subscribe_in_start: bool,
    /// Panic at the end of `start`.
    panic_in_start: bool,
}

impl Recorder {
    fn new(done: Sender<Vec<Event>>) -> Self {
        Self {
            events: Vec::new(),
            done,
            subscribe_in_start: false,
            panic_in_start: false,
        }
    }

    fn on_seq(&mut self, m: &Seq, _: &mut Context<'_, Self>) {
        self.events.push(Event::Msg(m.from, m.n))
    }
}

impl Agent for Recorder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if !self.subscribe_in_start {
            ctx.on(Self::on_seq)?;
        }
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.events.push(Event::Start);
        if self.subscribe_in_start {
            ctx.on(Self::on_seq).unwrap();
        }
        if self.panic_in_start {
            panic!("[expected] start fails after recording");
        }
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.done.send(std::mem::take(&mut self.events));
    }
}

/// Checks that `events` starts with `Start`, holds it once, and holds each sender's messages
/// `0..n` in order (senders `0..senders`).
fn check_start_first_then_fifo(events: &[Event], senders: u32, n: u32) {
    assert_eq!(events.first(), Some(&Event::Start), "start must come first");
    assert_eq!(
        events.iter().filter(|e| **e == Event::Start).count(),
        1,
        "exactly one start"
    );
    for from in 0..senders {
        let got: Vec<u32> = events
            .iter()
            .filter_map(|e| match e {
                Event::Msg(f, i) if *f == from => Some(*i),
                _ => None,
            })
            .collect();
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "messages of sender {from}");
    }
    assert_eq!(events.len(), 1 + (senders * n) as usize);
}

/// Blocks in a handler, receives the recorder's mailbox while blocked, and sends it `n`
/// messages from there: those take the local path of the recorder's queue, ahead of the
/// recorder's `start`, which waits in the queue's remote half. Signals `entered` when it
/// blocks and again when it has sent everything.
struct EarlySender {
    entered: Sender<()>,
    target: Receiver<Mbox>,
    n: u32,
}

impl Agent for EarlySender {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Block, _: &mut Context<'_, Self>| {
            let _ = me.entered.send(());
            let target = me
                .target
                .recv_timeout(TIMEOUT * common::scale())
                .expect("the test never sent the recorder's mailbox");
            for n in 0..me.n {
                target.send(Seq { from: 0, n });
            }
            let _ = me.entered.send(());
        })?;
        Ok(())
    }
}

/// Deterministically delivers messages to an agent before its `start`: they must be held
/// back and handled right after it, in order, before what was queued behind the `start`.
fn delivered_before_start(recorder: impl FnOnce(Sender<Vec<Event>>) -> Recorder) {
    let n = 200; // more than one local batch (64)
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let busy = OneThreadBuilder::new().name("busy").build(&env).unwrap();

    let (entered_tx, entered_rx) = mpsc::channel();
    let (target_tx, target_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(busy.binder());
    let early = coop
        .add(EarlySender {
            entered: entered_tx,
            target: target_rx,
            n,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    early.send(Block);
    common::recv(&entered_rx, "the early sender to block");

    // The recorder's start goes to the busy queue's remote half...
    let (done_tx, done_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(busy.binder());
    let recorder = coop.add(recorder(done_tx)).mbox();
    let handle = env.register_coop(coop).unwrap();
    // ...followed by these (same remote half, after the start)...
    for n in 0..n {
        recorder.send(Seq { from: 1, n });
    }
    // ...while the early sender, running on the busy thread, sends through the local half,
    // which runs first.
    target_tx.send(recorder).unwrap();
    common::recv(&entered_rx, "the early sender to send");

    handle.deregister(cohort::DeregReason::Normal);
    let events = common::recv(&done_rx, "the recorder's events");
    let mut expected = vec![Event::Start];
    expected.extend((0..n).map(|i| Event::Msg(0, i)));
    expected.extend((0..n).map(|i| Event::Msg(1, i)));
    assert_eq!(events, expected);
    env.stop_and_wait();
    assert_eq!(dead.all(), vec![]);
}

#[test]
fn messages_delivered_before_start_are_handled_after_it_in_order() {
    watchdog(TIMEOUT, || delivered_before_start(Recorder::new));
}

/// Held messages are replayed "with the subscriptions made in `start` already in place".
#[test]
fn held_messages_see_subscriptions_made_in_start() {
    watchdog(TIMEOUT, || {
        delivered_before_start(|done| Recorder {
            subscribe_in_start: true,
            ..Recorder::new(done)
        })
    });
}

/// "After a panic in `start`, the held early messages are still replayed" (and, with the
/// default reaction, the coop deregisters, but only after the pending messages).
#[test]
fn held_messages_are_replayed_after_a_panic_in_start() {
    watchdog(TIMEOUT, || {
        delivered_before_start(|done| Recorder {
            panic_in_start: true,
            ..Recorder::new(done)
        })
    });
}

/// The recorder is registered on a dispatcher with an agent blocked in a handler (on a
/// single-thread kind the dispatcher is busy); plain threads send to it right after
/// `register_coop` returns, before its `start` can run.
#[test]
fn messages_sent_right_after_registration_to_a_busy_dispatcher() {
    dispatchers::on_every_kind(|kind| {
        let senders = 4;
        let n = common::count(1_000) as u32;
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let busy = kind.binder(&env, "busy");
        let (g, control) = gate();
        let mut coop = env.new_coop();
        let blocker = coop
            .add_with_binder(Blocker { gate: g }, busy.clone())
            .mbox();
        env.register_coop(coop).unwrap();
        blocker.send(Block);
        control.wait_entered();

        let (done_tx, done_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let recorder = coop.add_with_binder(Recorder::new(done_tx), busy).mbox();
        let handle = env.register_coop(coop).unwrap();
        let threads: Vec<_> = (0..senders)
            .map(|from| {
                let r = recorder.clone();
                std::thread::spawn(move || {
                    for n in 0..n {
                        r.send(Seq { from, n });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        control.open();
        handle.deregister(cohort::DeregReason::Normal);
        let events = common::recv(&done_rx, "the recorder's events");
        check_start_first_then_fifo(&events, senders, n);
        env.stop_and_wait();
        assert_eq!(dead.all(), vec![], "{kind:?}");
    });
}

/// Sends `n` messages to `target` from its `start`, then says so.
struct StartSender {
    target: Mbox,
    n: u32,
    sent: Sender<()>,
}

impl Agent for StartSender {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        for n in 0..self.n {
            self.target.send(Seq { from: 0, n });
        }
        let _ = self.sent.send(());
    }
}

/// One coop, two dispatchers: the sender's `start` may run before the recorder's `start` is
/// even queued (the order of the groups is not specified), so its messages may arrive first.
/// Either way the recorder (on each kind of dispatcher) sees its `start` first, then the
/// messages in order.
#[test]
fn messages_from_a_sibling_start_on_another_dispatcher() {
    dispatchers::on_every_kind(|kind| {
        for _ in 0..common::count(50) {
            let (builder, dead) = DeadLetters::builder();
            let env = builder.start().unwrap();
            let other = kind.binder(&env, "other");
            let (done_tx, done_rx) = mpsc::channel();
            let (sent_tx, sent_rx) = mpsc::channel();
            let mut coop = env.new_coop();
            let recorder = coop.add_with_binder(Recorder::new(done_tx), other).mbox();
            coop.add_with_binder(
                StartSender {
                    target: recorder,
                    n: 100,
                    sent: sent_tx,
                },
                env.default_binder(),
            );
            let handle = env.register_coop(coop).unwrap();
            common::recv(&sent_rx, "the sender's start");
            handle.deregister(cohort::DeregReason::Normal);
            let events = common::recv(&done_rx, "the recorder's events");
            check_start_first_then_fifo(&events, 1, 100);
            env.stop_and_wait();
            assert_eq!(dead.all(), vec![], "{kind:?}");
        }
    });
}

/// Sends to itself and to a sibling from `define`.
struct ChattyDefine {
    sibling: Option<Mbox>,
}

impl Agent for ChattyDefine {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_: &mut Self, _: &Seq, _: &mut Context<'_, Self>| {})?;
        ctx.self_mbox().send(Seq { from: 0, n: 0 });
        if let Some(s) = &self.sibling {
            s.send(Seq { from: 0, n: 1 });
        }
        Ok(())
    }
}

/// "Messages sent during `define` to any agent of the cooperation being registered (including
/// the agent itself) are `NotRegistered` dead letters."
#[test]
fn messages_sent_during_define_to_the_coop_being_registered_are_dead_letters() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let mut coop = env.new_coop();
        let first = coop.add(ChattyDefine { sibling: None }).mbox();
        coop.add(ChattyDefine {
            sibling: Some(first),
        });
        env.register_coop(coop).unwrap();
        assert_eq!(
            dead.of::<Seq>(),
            vec![cohort::DeliveryFailure::NotRegistered; 3]
        );
        env.stop_and_wait();
        assert_eq!(dead.all().len(), 3);
    });
}
