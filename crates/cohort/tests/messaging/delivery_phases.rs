//! What happens to a message sent to an agent in each phase of its life, for a direct send
//! and for a 1:N send (the table in docs/runtime-semantics.md, "Delivery by phase"), on every
//! dispatcher kind of `common::dispatchers::ALL`.
//!
//! - **Around deregistration, on every delivery path** (`around_deregistration`). Agents
//!   whose queues are held by a handler waiting for the test; some messages sent, the
//!   cooperation deregistered, more sent, the handler released: the messages sent before are
//!   handled. Of those sent after `deregister()` returned, a direct send is a `ReceiverGone`
//!   dead letter per agent, and a 1:N send no longer reaches the agents at all (their
//!   subscriptions were dropped by the deregistration: a `NoSubscriber` dead letter per send,
//!   since nobody else subscribes), whichever path it would have taken (a named mailbox's one
//!   subscriber; one subscriber per queue; several subscribers sharing a queue, one broadcast
//!   demand; four or more queues, the broadcast log; a subscriber with a delivery filter or
//!   message limits, served one by one).
//! - **One test per cell of the phase table** (`phase`: defining, registered but not
//!   started, running, finishing, gone), each 1:N cell over three layouts (one subscriber, two
//!   sharing a queue, four queues).
//! - **Publishers racing with deregistration** (`racing`): nothing published after
//!   `deregister()` returned is handled, and nothing published while a cooperation registers
//!   is lost.

use crate::common::dispatchers::{self, Kind};
use crate::common::{self, DeadLetters, Latch};
use cohort::{
    ActiveGroupBuilder, Agent, Binder, Context, Coop, DefineError, DeliveryFailure, DeregReason,
    Environment, Mbox, MessageLimits, WrappedEnv,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

fn start() -> (WrappedEnv, DeadLetters) {
    let (builder, dead) = DeadLetters::builder();
    (builder.start().unwrap(), dead)
}

/// Waits until `dead` holds `n` dead letters of `M` (some are counted by a worker, after the
/// send returned).
fn wait_dead<M>(dead: &DeadLetters, n: usize) -> Vec<DeliveryFailure> {
    let until = Instant::now() + common::TIMEOUT * common::scale();
    loop {
        let got = dead.of::<M>();
        if got.len() >= n || Instant::now() > until {
            return got;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How the agents are laid out on queues, which decides how a 1:N send reaches them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Path {
    /// Each agent's own mailbox (two agents sharing a queue).
    Direct,
    /// A named mailbox with one subscriber: one message demand, checked at send time.
    Sole,
    /// A named mailbox, one subscriber on each of two queues.
    OnePerQueue,
    /// A named mailbox, two subscribers sharing one queue: one broadcast demand.
    SharedQueue,
    /// A named mailbox, one subscriber on each of four queues: the broadcast log.
    Log,
    /// The broadcast log, two subscribers on each of its four queues.
    LogShared,
    /// Two subscribers sharing a queue, each with a delivery filter: one by one.
    Filtered,
    /// Two subscribers sharing a queue, each with message limits: one by one.
    Limited,
}

impl Path {
    /// Queues, and agents per queue. (On `active_obj` and on a pool with individual fifo
    /// every agent has a queue of its own whatever the layout: "sharing a queue" is then one
    /// queue each.)
    fn layout(self) -> (usize, usize) {
        match self {
            Path::Sole => (1, 1),
            Path::OnePerQueue => (2, 1),
            Path::Direct | Path::SharedQueue | Path::Filtered | Path::Limited => (1, 2),
            Path::Log => (4, 1),
            Path::LogShared => (4, 2),
        }
    }
}

/// The 1:N layouts each cell of the phase table runs over.
const ONE_TO_MANY: [Path; 3] = [Path::Sole, Path::SharedQueue, Path::Log];

/// One dispatcher of `kind` per queue of `path`'s layout (pools of `threads` workers): the
/// binder of each, for that many agents of one cooperation.
fn queue_binders(kind: Kind, env: &Environment, queues: usize, threads: usize) -> Vec<Binder> {
    if kind == Kind::ActiveGroup {
        // Group names are the environment's: one dispatcher, a group per queue.
        let d = ActiveGroupBuilder::new().name("groups").build(env).unwrap();
        return (0..queues)
            .map(|q| d.group_binder(&format!("g{q}")))
            .collect();
    }
    (0..queues)
        .map(|q| kind.binder_with_threads(env, &format!("q{q}"), threads))
        .collect()
}

/// `per_queue` copies of each binder: one per agent.
fn agent_binders(queues: &[Binder], per_queue: usize) -> Vec<Binder> {
    queues
        .iter()
        .flat_map(|b| std::iter::repeat_n(b.clone(), per_queue))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Around deregistration, on every path.

/// Sent before deregistration.
#[derive(Debug, Clone, Copy)]
struct Before;
/// Sent after `deregister()` returned.
#[derive(Debug, Clone, Copy)]
struct After;
/// Holds the agent's queue until the latch opens.
#[derive(Debug, Clone, Copy)]
struct Hold;

/// Counts what it handles; holds its queue on [`Hold`]; tells the test when it finished.
struct Subscriber {
    topic: Option<Mbox>,
    path: Path,
    latch: Arc<Latch>,
    before: Arc<AtomicUsize>,
    after: Arc<AtomicUsize>,
    finished: Sender<()>,
}

impl Agent for Subscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if self.path == Path::Limited {
            ctx.set_message_limits(MessageLimits::new().default_drop(1_000))?;
        }
        ctx.on(|me: &mut Self, _: &Hold, _| me.latch.wait())?;
        ctx.on(|me: &mut Self, _: &Before, _| count(&me.before))?;
        ctx.on(|me: &mut Self, _: &After, _| count(&me.after))?;
        if let Some(topic) = &self.topic {
            ctx.subscribe(topic, |me: &mut Self, _: &Before, _| count(&me.before))?;
            ctx.subscribe(topic, |me: &mut Self, _: &After, _| count(&me.after))?;
            if self.path == Path::Filtered {
                ctx.set_delivery_filter(topic, |_: &Before| true)?;
                ctx.set_delivery_filter(topic, |_: &After| true)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        let _ = self.finished.send(());
    }
}

fn count(c: &AtomicUsize) {
    c.fetch_add(1, Ordering::SeqCst);
}

const SENDS: usize = 10;

/// Agents laid out for `path` on `kind`, their queues held; `SENDS` messages sent before
/// deregistration and `SENDS` after: the first are handled; of the others, a direct send is
/// a `ReceiverGone` dead letter per agent, and a 1:N send reaches no agent of the
/// deregistered cooperation (a `NoSubscriber` dead letter per send: nobody else subscribes).
fn sends_around_deregistration(kind: Kind, path: Path) {
    let (env, dead) = start();
    let (queues, per_queue) = path.layout();
    let binders = agent_binders(
        &queue_binders(kind, &env, queues, per_queue.max(2)),
        per_queue,
    );
    let agents = binders.len();
    let topic = (path != Path::Direct).then(|| env.named_mbox("t"));
    let latch = Arc::new(Latch::default());
    let (before, after) = (Arc::default(), Arc::default());
    let (finished_tx, finished) = mpsc::channel();
    let mut coop = env.new_coop();
    let direct: Vec<Mbox> = binders
        .into_iter()
        .map(|b| {
            let agent = Subscriber {
                topic: topic.clone(),
                path,
                latch: latch.clone(),
                before: Arc::clone(&before),
                after: Arc::clone(&after),
                finished: finished_tx.clone(),
            };
            coop.add_with_binder(agent, b).mbox()
        })
        .collect();
    let handle = env.register_coop(coop).unwrap();
    direct.iter().for_each(|m| m.send(Hold));
    let send = |msg: &dyn Fn(&Mbox)| match &topic {
        Some(t) => msg(t),
        None => direct.iter().for_each(msg),
    };
    for _ in 0..SENDS {
        send(&|m| m.send(Before));
    }
    handle.deregister(DeregReason::Normal);
    for _ in 0..SENDS {
        send(&|m| m.send(After));
    }
    latch.open();
    common::recv_n(&finished, agents, "every agent to finish");
    let what = format!("{kind:?}/{path:?}");
    assert_eq!(
        before.load(Ordering::SeqCst),
        SENDS * agents,
        "{what}: sent before deregistration: handled"
    );
    assert_eq!(dead.of::<Before>(), vec![], "{what}");
    assert_eq!(
        after.load(Ordering::SeqCst),
        0,
        "{what}: handled after deregistration"
    );
    let expected = match path {
        Path::Direct => vec![DeliveryFailure::ReceiverGone; SENDS * agents],
        _ => vec![DeliveryFailure::NoSubscriber; SENDS],
    };
    assert_eq!(
        dead.of::<After>(),
        expected,
        "{what}: sent after deregistration"
    );
    env.stop_and_wait();
}

mod around_deregistration {
    use super::*;

    fn on_every_kind(path: Path) {
        dispatchers::on_every_kind(move |kind| sends_around_deregistration(kind, path))
    }

    #[test]
    fn direct() {
        on_every_kind(Path::Direct)
    }
    #[test]
    fn named_sole_subscriber() {
        on_every_kind(Path::Sole)
    }
    #[test]
    fn named_one_subscriber_per_queue() {
        on_every_kind(Path::OnePerQueue)
    }
    #[test]
    fn named_subscribers_sharing_a_queue() {
        on_every_kind(Path::SharedQueue)
    }
    #[test]
    fn named_broadcast_log() {
        on_every_kind(Path::Log)
    }
    #[test]
    fn named_broadcast_log_shared_queues() {
        on_every_kind(Path::LogShared)
    }
    #[test]
    fn named_with_delivery_filters() {
        on_every_kind(Path::Filtered)
    }
    #[test]
    fn named_with_message_limits() {
        on_every_kind(Path::Limited)
    }
}

// ---------------------------------------------------------------------------------------
// The phase table: one test per cell.

/// The message of the phase tests, numbered by its sender.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ping(usize);

/// Makes a subject subscribe to the mailbox it carries, from a handler.
#[derive(Clone)]
struct Join(Mbox);

/// Holds a subject's queue until the latch it carries opens.
#[derive(Clone)]
struct HoldOn(Arc<Latch>);

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Started(usize),
    Ping(usize, usize),
    Finished(usize),
    /// What subscribing from a handler returned: the subscription's and the filter's result.
    Joined(usize, bool, bool),
}

/// How a cell's test sends [`Ping`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    /// To each subject's own mailbox.
    Direct,
    /// Through the named mailbox the subjects subscribe to in `define`, laid out this way.
    OneToMany(Path),
}

/// Reports its start, its `Ping`s (direct or through `topic`) and its finish; holds its
/// queue on [`Hold`] until `latch` opens.
struct Subject {
    id: usize,
    topic: Mbox,
    latch: Arc<Latch>,
    events: Sender<Event>,
}

impl Subject {
    fn report(&self, e: Event) {
        let _ = self.events.send(e);
    }
}

impl Agent for Subject {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, p: &Ping, _| me.report(Event::Ping(me.id, p.0)))?;
        ctx.subscribe(&self.topic, |me: &mut Self, p: &Ping, _| {
            me.report(Event::Ping(me.id, p.0))
        })?;
        ctx.on(|me: &mut Self, _: &Hold, _| me.latch.wait())?;
        ctx.on(|_: &mut Self, h: &HoldOn, _| h.0.wait())?;
        ctx.on(|me: &mut Self, j: &Join, ctx| {
            let subscribed = ctx
                .subscribe(&j.0, |me: &mut Self, p: &Ping, _| {
                    me.report(Event::Ping(me.id, p.0))
                })
                .is_ok();
            let filtered = ctx.set_delivery_filter(&j.0, |_: &Ping| true).is_ok();
            me.report(Event::Joined(me.id, subscribed, filtered));
            // Still before `finish`: the test publishes to `j.0` meanwhile.
            me.latch.wait();
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.report(Event::Started(self.id));
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.report(Event::Finished(self.id));
    }
}

/// Its `define` tells the test it runs, then waits for the latch; then fails if asked to.
struct DefineGate {
    entered: Sender<()>,
    latch: Arc<Latch>,
    fail: bool,
}

impl Agent for DefineGate {
    fn define(&mut self, _: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let _ = self.entered.send(());
        self.latch.wait();
        if self.fail {
            return Err("the registration fails on purpose".into());
        }
        Ok(())
    }
}

/// Holds its queue on [`Hold`] until the latch opens, telling the test when it does.
struct Holder {
    latch: Arc<Latch>,
    entered: Sender<()>,
}

impl Agent for Holder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Hold, _| {
            let _ = me.entered.send(());
            me.latch.wait()
        })?;
        Ok(())
    }
}

/// Forwards every `Ping` published on the topic to the test: a subscriber outside the
/// subjects' cooperation.
struct Witness {
    topic: Mbox,
    pings: Sender<usize>,
}

impl Agent for Witness {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.subscribe(&self.topic, |me: &mut Self, p: &Ping, _| {
            let _ = me.pings.send(p.0);
        })?;
        Ok(())
    }
}

/// An environment with a dead-letter recorder, the named mailbox `t`, and subjects.
struct Stage {
    env: WrappedEnv,
    dead: DeadLetters,
    topic: Mbox,
    latch: Arc<Latch>,
    tx: Sender<Event>,
    events: Receiver<Event>,
}

/// A cooperation of subjects, not registered yet.
struct Subjects {
    coop: Coop,
    direct: Vec<Mbox>,
}

impl Stage {
    fn new() -> Self {
        let (env, dead) = start();
        let topic = env.named_mbox("t");
        let (tx, events) = mpsc::channel();
        Self {
            env,
            dead,
            topic,
            latch: Arc::default(),
            tx,
            events,
        }
    }

    /// The queue binders for `how` on `kind` (pools of `threads` workers), and the agents
    /// per queue.
    fn binders(&self, kind: Kind, how: How, threads: usize) -> (Vec<Binder>, usize) {
        let (queues, per_queue) = match how {
            How::Direct => (1, 1),
            How::OneToMany(path) => path.layout(),
        };
        (queue_binders(kind, &self.env, queues, threads), per_queue)
    }

    /// A cooperation of subjects, `per_queue` on each of `queues`.
    fn subjects(&self, queues: &[Binder], per_queue: usize) -> Subjects {
        let mut coop = self.env.new_coop();
        let direct = agent_binders(queues, per_queue)
            .into_iter()
            .enumerate()
            .map(|(id, b)| {
                let s = Subject {
                    id,
                    topic: self.topic.clone(),
                    latch: self.latch.clone(),
                    events: self.tx.clone(),
                };
                coop.add_with_binder(s, b).mbox()
            })
            .collect();
        Subjects { coop, direct }
    }

    /// Sends `SENDS` numbered pings: to each subject, or published once each.
    fn send(&self, how: How, direct: &[Mbox]) {
        for n in 0..SENDS {
            match how {
                How::Direct => direct.iter().for_each(|m| m.send(Ping(n))),
                How::OneToMany(_) => self.topic.send(Ping(n)),
            }
        }
    }

    /// After [`Stage::send`] to subjects that deregistered: every direct ping is a
    /// `ReceiverGone` dead letter; every published ping reaches the witness only, with no
    /// dead letter.
    fn expect_subjects_unreached(
        &self,
        how: How,
        direct: &[Mbox],
        witness: &Receiver<usize>,
        what: &str,
    ) {
        match how {
            How::Direct => assert_eq!(
                self.dead.of::<Ping>(),
                vec![DeliveryFailure::ReceiverGone; SENDS * direct.len()],
                "{what}"
            ),
            How::OneToMany(_) => {
                let got = common::recv_n(witness, SENDS, "the witness's pings");
                assert_eq!(got, (0..SENDS).collect::<Vec<_>>(), "{what}");
                assert_eq!(self.dead.of::<Ping>(), vec![], "{what}");
            }
        }
    }

    /// Receives `n` events, and gives them per subject in arrival order.
    fn events(&self, n: usize) -> BTreeMap<usize, Vec<Event>> {
        let mut by_subject: BTreeMap<usize, Vec<Event>> = BTreeMap::new();
        for e in common::recv_n(&self.events, n, "the subjects' events") {
            let id = match e {
                Event::Started(id) | Event::Finished(id) => id,
                Event::Ping(id, _) | Event::Joined(id, ..) => id,
            };
            by_subject.entry(id).or_default().push(e);
        }
        by_subject
    }

    /// A witness subscribed to the topic (on the environment's default dispatcher).
    fn witness(&self) -> Receiver<usize> {
        let (pings, rx) = mpsc::channel();
        let mut coop = self.env.new_coop();
        coop.add(Witness {
            topic: self.topic.clone(),
            pings,
        });
        self.env.register_coop(coop).unwrap();
        rx
    }
}

/// Each subject's events: started, then every ping in order (when `pinged`), then finished
/// (when `finished`).
fn expected(id: usize, pinged: bool, finished: bool) -> Vec<Event> {
    let mut v = vec![Event::Started(id)];
    if pinged {
        v.extend((0..SENDS).map(|n| Event::Ping(id, n)));
    }
    if finished {
        v.push(Event::Finished(id));
    }
    v
}

/// The layouts a cell runs over for a kind of send.
fn hows(one_to_many: bool) -> Vec<How> {
    if one_to_many {
        ONE_TO_MANY.iter().map(|p| How::OneToMany(*p)).collect()
    } else {
        vec![How::Direct]
    }
}

/// Defining: sent while the subjects' cooperation registers (a later agent's `define` holds
/// the registration): a direct send is a `NotRegistered` dead letter at once; a 1:N send
/// reaches the subjects, which subscribed in their `define`, and is handled right after
/// their `start`, in order (or, when `fail`, the registration fails and it becomes a
/// `NotRegistered` dead letter per subject).
fn defining(kind: Kind, how: How, fail: bool) {
    let stage = Stage::new();
    let (queues, per_queue) = stage.binders(kind, how, 2);
    let Subjects { mut coop, direct } = stage.subjects(&queues, per_queue);
    let subjects = direct.len();
    let (entered_tx, entered) = mpsc::channel();
    coop.add(DefineGate {
        entered: entered_tx,
        latch: stage.latch.clone(),
        fail,
    });
    let env = stage.env.environment();
    let registering = std::thread::spawn(move || env.register_coop(coop));
    common::recv(&entered, "the registration to reach the gate's define");
    stage.send(how, &direct);
    if how == How::Direct {
        assert_eq!(
            stage.dead.of::<Ping>(),
            vec![DeliveryFailure::NotRegistered; SENDS * subjects],
            "{kind:?}/{how:?}: a direct send while defining is refused at once"
        );
    }
    stage.latch.open();
    let registered = registering.join().unwrap();
    let what = format!("{kind:?}/{how:?}");
    if fail {
        assert!(registered.is_err(), "{what}: the registration fails");
        assert_eq!(
            wait_dead::<Ping>(&stage.dead, SENDS * subjects),
            vec![DeliveryFailure::NotRegistered; SENDS * subjects],
            "{what}: kept until a start that never comes"
        );
        assert!(stage.events.try_recv().is_err(), "{what}: nothing ran");
        return stage.env.stop_and_wait();
    }
    let handle = registered.unwrap();
    let pinged = how != How::Direct;
    let n = if pinged { 1 + SENDS } else { 1 };
    let events = stage.events(subjects * n);
    for id in 0..subjects {
        assert_eq!(
            events[&id],
            expected(id, pinged, false),
            "{what}: subject {id}"
        );
    }
    if pinged {
        assert_eq!(stage.dead.of::<Ping>(), vec![], "{what}");
    }
    handle.deregister(DeregReason::Normal);
    stage.events(subjects);
    stage.env.stop_and_wait();
}

/// Registered, `start` not run yet: every worker of the subjects' dispatchers is held by
/// another agent's handler (pools get one worker). Queued, handled right after `start`, in
/// order. Not on `active_obj`: an agent's own thread runs nothing before its `start`, so
/// nothing can hold it there.
fn registered_not_started(kind: Kind, how: How) {
    if kind == Kind::ActiveObj {
        return;
    }
    let stage = Stage::new();
    let (queues, per_queue) = stage.binders(kind, how, 1);
    let (entered_tx, entered) = mpsc::channel();
    for b in &queues {
        let mut coop = stage.env.new_coop();
        let holder = Holder {
            latch: stage.latch.clone(),
            entered: entered_tx.clone(),
        };
        let holder = coop.add_with_binder(holder, b.clone()).mbox();
        stage.env.register_coop(coop).unwrap();
        holder.send(Hold);
        common::recv(&entered, "a holder to hold its worker");
    }
    let Subjects { coop, direct } = stage.subjects(&queues, per_queue);
    let handle = stage.env.register_coop(coop).unwrap();
    stage.send(how, &direct);
    assert!(stage.events.try_recv().is_err(), "started while held");
    stage.latch.open();
    let events = stage.events(direct.len() * (1 + SENDS));
    for id in 0..direct.len() {
        assert_eq!(events[&id], expected(id, true, false), "{kind:?}/{how:?}");
    }
    assert_eq!(stage.dead.of::<Ping>(), vec![], "{kind:?}/{how:?}");
    handle.deregister(DeregReason::Normal);
    stage.events(direct.len());
    stage.env.stop_and_wait();
}

/// Running: handled, in order.
fn running(kind: Kind, how: How) {
    let stage = Stage::new();
    stage.latch.open();
    let (queues, per_queue) = stage.binders(kind, how, 2);
    let Subjects { coop, direct } = stage.subjects(&queues, per_queue);
    let handle = stage.env.register_coop(coop).unwrap();
    stage.events(direct.len());
    stage.send(how, &direct);
    let events = stage.events(direct.len() * SENDS);
    for id in 0..direct.len() {
        let pings: Vec<Event> = (0..SENDS).map(|n| Event::Ping(id, n)).collect();
        assert_eq!(events[&id], pings, "{kind:?}/{how:?}");
    }
    assert_eq!(stage.dead.of::<Ping>(), vec![], "{kind:?}/{how:?}");
    handle.deregister(DeregReason::Normal);
    stage.events(direct.len());
    stage.env.stop_and_wait();
}

/// Finishing: sent after `deregister()` returned, while `finish` has not run (each subject
/// holds its queue in a handler queued before). A direct send is a `ReceiverGone` dead
/// letter per receiver; a 1:N send no longer reaches the subjects and counts nothing for
/// them, while it still reaches a subscriber of another cooperation.
fn finishing(kind: Kind, how: How) {
    let stage = Stage::new();
    let witness = stage.witness();
    let (queues, per_queue) = stage.binders(kind, how, 2);
    let Subjects { coop, direct } = stage.subjects(&queues, per_queue);
    let handle = stage.env.register_coop(coop).unwrap();
    direct.iter().for_each(|m| m.send(Hold));
    handle.deregister(DeregReason::Normal);
    stage.send(how, &direct);
    let what = format!("{kind:?}/{how:?}");
    stage.expect_subjects_unreached(how, &direct, &witness, &what);
    stage.latch.open();
    let events = stage.events(direct.len() * 2);
    for id in 0..direct.len() {
        assert_eq!(events[&id], expected(id, false, true), "{what}");
    }
    stage.env.stop_and_wait();
}

/// Finishing, subscribing from a handler that runs after `deregister()` returned: the
/// subscription (and its delivery filter) is accepted but registers nowhere, so a publish is
/// a `NoSubscriber` dead letter, though the agent's `finish` has not run yet.
fn subscribing_after_deregistration(kind: Kind) {
    let stage = Stage::new();
    let late = stage.env.named_mbox("late");
    let (queues, _) = stage.binders(kind, How::Direct, 2);
    let Subjects { coop, direct } = stage.subjects(&queues, 1);
    let handle = stage.env.register_coop(coop).unwrap();
    stage.events(1);
    // Both queued before the deregistration; `Join` runs only after it returned.
    let first = Arc::new(Latch::default());
    direct[0].send(HoldOn(first.clone()));
    direct[0].send(Join(late.clone()));
    handle.deregister(DeregReason::Normal);
    first.open();
    let what = format!("{kind:?}");
    let events = stage.events(1);
    assert_eq!(events[&0], vec![Event::Joined(0, true, true)], "{what}");
    // The `Join` handler now waits on the stage's latch: `finish` has not run.
    late.send(Ping(7));
    assert_eq!(
        stage.dead.of::<Ping>(),
        vec![DeliveryFailure::NoSubscriber],
        "{what}: registered nowhere"
    );
    stage.latch.open();
    let events = stage.events(1);
    assert_eq!(events[&0], vec![Event::Finished(0)], "{what}");
    stage.env.stop_and_wait();
}

/// Gone (`finish` has run, the cooperation is gone): a direct send is a `ReceiverGone`
/// dead letter; a 1:N send reaches the other subscribers only (a `NoSubscriber` dead letter
/// if none is left).
fn gone(kind: Kind, how: How) {
    let stage = Stage::new();
    stage.latch.open();
    let witness = stage.witness();
    let (queues, per_queue) = stage.binders(kind, how, 2);
    let Subjects { coop, direct } = stage.subjects(&queues, per_queue);
    let handle = stage.env.register_coop(coop).unwrap();
    stage.events(direct.len());
    handle.deregister(DeregReason::Normal);
    stage.events(direct.len());
    common::wait_until(|| handle.is_gone());
    stage.send(how, &direct);
    let what = format!("{kind:?}/{how:?}");
    stage.expect_subjects_unreached(how, &direct, &witness, &what);
    assert!(stage.events.try_recv().is_err(), "{what}: a gone agent ran");
    stage.env.stop_and_wait();
}

mod phase {
    use super::*;

    fn each(one_to_many: bool, check: impl Fn(Kind, How) + Send + Sync + Copy + 'static) {
        dispatchers::on_every_kind(move |kind| {
            for how in hows(one_to_many) {
                check(kind, how)
            }
        })
    }

    #[test]
    fn defining_direct() {
        each(false, |k, h| defining(k, h, false))
    }
    #[test]
    fn defining_one_to_many() {
        each(true, |k, h| defining(k, h, false))
    }
    #[test]
    fn defining_one_to_many_then_registration_fails() {
        each(true, |k, h| defining(k, h, true))
    }
    #[test]
    fn registered_not_started_direct() {
        each(false, registered_not_started)
    }
    #[test]
    fn registered_not_started_one_to_many() {
        each(true, registered_not_started)
    }
    #[test]
    fn running_direct() {
        each(false, running)
    }
    #[test]
    fn running_one_to_many() {
        each(true, running)
    }
    #[test]
    fn finishing_direct() {
        each(false, finishing)
    }
    #[test]
    fn finishing_one_to_many() {
        each(true, finishing)
    }
    #[test]
    fn finishing_subscribes_nowhere() {
        dispatchers::on_every_kind(subscribing_after_deregistration)
    }
    #[test]
    fn gone_direct() {
        each(false, gone)
    }
    #[test]
    fn gone_one_to_many() {
        each(true, gone)
    }
}

// ---------------------------------------------------------------------------------------
// Publishers racing with registration and deregistration.

/// Published by the racing threads, numbered in publishing order.
#[derive(Debug, Clone, Copy)]
struct Tick(u64);

/// Counts the ticks it handles that were published after its cooperation's
/// `deregister()` returned.
struct Racer {
    /// The first number drawn after `deregister()` returned (`u64::MAX` until then).
    deregistered_at: Arc<AtomicU64>,
    late: Arc<AtomicUsize>,
    handled: Arc<AtomicUsize>,
}

impl Agent for Racer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let topic = ctx.environment().named_mbox("race");
        ctx.subscribe(&topic, |me: &mut Self, t: &Tick, _| {
            count(&me.handled);
            if t.0 >= me.deregistered_at.load(Ordering::SeqCst) {
                count(&me.late);
            }
        })?;
        Ok(())
    }
}

/// Two threads publish without pause while cooperations of two subscribers are registered
/// and deregistered one after the other: no tick published after a cooperation's
/// `deregister()` returned is handled by its agents; none published while one registered is
/// lost (no `NotRegistered`); the only dead letters are `NoSubscriber` (between
/// cooperations) and `ReceiverGone` (a publish racing with a deregistration).
fn publishers_racing_deregistration(kind: Kind) {
    const PUBLISHERS: usize = 2;
    let (env, dead) = start();
    let binder = kind.binder(&env, "race");
    let topic = env.named_mbox("race");
    let sequence = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|_| {
            let (topic, sequence, stop) = (topic.clone(), sequence.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    topic.send(Tick(sequence.fetch_add(1, Ordering::SeqCst)));
                    common::yield_under_valgrind();
                }
            })
        })
        .collect();
    common::wait_until(|| sequence.load(Ordering::SeqCst) > 0);
    let (late, handled) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    for _ in 0..common::count(200) {
        let deregistered_at = Arc::new(AtomicU64::new(u64::MAX));
        let mut coop = env.new_coop();
        coop.set_binder(binder.clone());
        for _ in 0..2 {
            coop.add(Racer {
                deregistered_at: deregistered_at.clone(),
                late: late.clone(),
                handled: handled.clone(),
            });
        }
        let handle = env.register_coop(coop).unwrap();
        handle.deregister(DeregReason::Normal);
        deregistered_at.store(sequence.load(Ordering::SeqCst), Ordering::SeqCst);
    }
    stop.store(true, Ordering::Relaxed);
    publishers.into_iter().for_each(|p| p.join().unwrap());
    env.stop_and_wait();
    assert_eq!(
        late.load(Ordering::SeqCst),
        0,
        "{kind:?}: handled after deregister()"
    );
    let dead = dead.of::<Tick>();
    assert!(
        dead.iter().all(|r| matches!(
            r,
            DeliveryFailure::NoSubscriber | DeliveryFailure::ReceiverGone
        )),
        "{kind:?}: {:?}",
        dead.iter()
            .filter(|r| !matches!(
                r,
                DeliveryFailure::NoSubscriber | DeliveryFailure::ReceiverGone
            ))
            .collect::<Vec<_>>()
    );
}

mod racing {
    use super::*;

    #[test]
    fn publishers_racing_deregistration_never_reach_it_after_it_returned() {
        dispatchers::on_every_kind(publishers_racing_deregistration)
    }
}
