//! What happens to a message sent to an agent in each phase of its life, for a direct send
//! and for a 1:N send (the table in docs/runtime-semantics.md, "Delivery by phase").
//!
//! - **After deregistration, on every delivery path and dispatcher.** Agents whose queues
//!   are held by a handler waiting for the test; some messages sent, the cooperation
//!   deregistered, more sent, the handler released: the messages sent before are handled,
//!   the ones sent after are `ReceiverGone` dead letters, whichever path a send takes
//!   (direct; a named mailbox's one subscriber; one subscriber per queue; several
//!   subscribers sharing a queue, one broadcast demand; four or more queues, the broadcast
//!   log; a subscriber with a delivery filter or message limits, served one by one).
//! - **One test per cell of the phase table** (defining, registered but not started,
//!   running, finishing, gone) for both kinds of send.
//!
//! Self-contained (its own watchdog, latch and dead-letter recorder).

use cohort::dispatcher::{Fifo, PoolBindParams};
use cohort::{
    ActiveGroupBuilder, ActiveObjBuilder, AdvThreadPoolBuilder, Agent, Binder, Context, DeadLetter,
    DefineError, DeliveryFailure, DeregReason, Mbox, MessageLimits, OneThreadBuilder,
    PrioOneThreadBuilder, ThreadPoolBuilder, WorkStealingBuilder, WrappedEnv,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `body` on its own thread and fails if it takes longer than [`TIMEOUT`].
fn watchdog(body: impl FnOnce() + Send + 'static) {
    cohort::testing::watchdog(TIMEOUT, body)
}

#[track_caller]
fn recv<T>(rx: &Receiver<T>, what: &str) -> T {
    rx.recv_timeout(TIMEOUT)
        .unwrap_or_else(|e| panic!("waiting for {what}: {e}"))
}

/// A gate the test opens once: every handler waiting on it goes on.
#[derive(Default)]
struct Latch {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    fn wait(&self) {
        let open = self.open.lock().unwrap();
        // A test that never opens it fails on its watchdog; the worker goes on eventually.
        let _ = self.cv.wait_timeout_while(open, TIMEOUT, |open| !*open);
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// The dead letters of an environment, by message type and reason.
#[derive(Clone, Default)]
struct DeadLetters(Arc<Mutex<Vec<(&'static str, DeliveryFailure)>>>);

impl DeadLetters {
    fn start() -> (WrappedEnv, Self) {
        let log = Self::default();
        let sink = log.clone();
        let env = cohort::Environment::builder()
            .dead_letter_hook(move |d: &DeadLetter| {
                sink.0.lock().unwrap().push((d.message_type, d.reason))
            })
            .start()
            .unwrap();
        (env, log)
    }

    fn of<M>(&self) -> Vec<DeliveryFailure> {
        let name = std::any::type_name::<M>();
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|(t, _)| *t == name)
            .map(|(_, r)| *r)
            .collect()
    }
}

/// Sent before deregistration.
#[derive(Debug, Clone, Copy)]
struct Before;
/// Sent after `deregister()` returned.
#[derive(Debug, Clone, Copy)]
struct After;
/// Holds the agent's queue until the latch opens.
#[derive(Debug, Clone, Copy)]
struct Hold;

/// How the sends reach the agents.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Path {
    /// To each agent's own mailbox.
    Direct,
    /// A named mailbox with one subscriber.
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
    /// Queues, and subscribers per queue.
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

#[derive(Debug, Clone, Copy)]
enum Kind {
    OneThread,
    ActiveObj,
    ActiveGroup,
    ThreadPool,
    WorkStealing,
    AdvThreadPool,
    PrioOneThread,
}

impl Kind {
    /// One binder per agent: `queues` queues of `per_queue` agents each (`None` where the
    /// dispatcher cannot share a queue between agents).
    fn binders(self, env: &WrappedEnv, queues: usize, per_queue: usize) -> Option<Vec<Binder>> {
        let queue_binders: Vec<Binder> = match self {
            Kind::ActiveObj if per_queue > 1 => return None,
            Kind::ActiveObj => {
                let d = ActiveObjBuilder::new().build(env).unwrap();
                (0..queues).map(|_| d.binder()).collect()
            }
            Kind::ActiveGroup => {
                let d = ActiveGroupBuilder::new().build(env).unwrap();
                (0..queues)
                    .map(|q| d.group_binder(&format!("g{q}")))
                    .collect()
            }
            _ => (0..queues).map(|q| self.one_queue(env, q)).collect(),
        };
        Some(
            queue_binders
                .into_iter()
                .flat_map(|b| std::iter::repeat_n(b, per_queue))
                .collect(),
        )
    }

    /// A binder whose agents (of one cooperation) share one queue, on a dispatcher of its own.
    fn one_queue(self, env: &WrappedEnv, q: usize) -> Binder {
        let name = format!("q{q}");
        let pool = |d: cohort::dispatcher::PoolHandle| {
            let params = PoolBindParams::new().fifo(Fifo::Cooperation);
            d.pool_binder(params).unwrap()
        };
        match self {
            Kind::OneThread => OneThreadBuilder::new()
                .name(name)
                .build(env)
                .unwrap()
                .binder(),
            Kind::PrioOneThread => {
                let d = PrioOneThreadBuilder::new().name(name).build(env).unwrap();
                d.binder()
            }
            Kind::ThreadPool => pool(
                ThreadPoolBuilder::new()
                    .name(name)
                    .threads(2)
                    .build(env)
                    .unwrap()
                    .into(),
            ),
            Kind::WorkStealing => pool(
                WorkStealingBuilder::new()
                    .name(name)
                    .threads(2)
                    .build(env)
                    .unwrap()
                    .into(),
            ),
            Kind::AdvThreadPool => pool(
                AdvThreadPoolBuilder::new()
                    .name(name)
                    .threads(2)
                    .build(env)
                    .unwrap()
                    .into(),
            ),
            Kind::ActiveObj | Kind::ActiveGroup => unreachable!("one dispatcher, many queues"),
        }
    }
}

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

/// Agents laid out for `path` on `kind`, their queues held; `SENDS` messages sent to each
/// before deregistration and `SENDS` after: the first are handled, the others dead letters.
fn sends_around_deregistration(kind: Kind, path: Path) {
    watchdog(move || {
        let (env, dead) = DeadLetters::start();
        let (queues, per_queue) = path.layout();
        let Some(binders) = kind.binders(&env, queues, per_queue) else {
            return env.stop_and_wait();
        };
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
        for _ in 0..agents {
            recv(&finished, "every agent to finish");
        }
        let expected = SENDS * agents;
        assert_eq!(
            before.load(Ordering::SeqCst),
            expected,
            "{kind:?}/{path:?}: sent before deregistration: handled"
        );
        assert_eq!(dead.of::<Before>(), vec![]);
        assert_eq!(
            after.load(Ordering::SeqCst),
            0,
            "{kind:?}/{path:?}: handled after deregistration"
        );
        assert_eq!(
            dead.of::<After>(),
            vec![DeliveryFailure::ReceiverGone; expected],
            "{kind:?}/{path:?}: sent after deregistration: dead letters"
        );
        env.stop_and_wait();
    })
}

macro_rules! every_path {
    ($($module:ident: $kind:expr;)*) => {$(
        mod $module {
            use super::*;
            #[test]
            fn direct() {
                sends_around_deregistration($kind, Path::Direct)
            }
            #[test]
            fn named_sole_subscriber() {
                sends_around_deregistration($kind, Path::Sole)
            }
            #[test]
            fn named_one_subscriber_per_queue() {
                sends_around_deregistration($kind, Path::OnePerQueue)
            }
            #[test]
            fn named_subscribers_sharing_a_queue() {
                sends_around_deregistration($kind, Path::SharedQueue)
            }
            #[test]
            fn named_broadcast_log() {
                sends_around_deregistration($kind, Path::Log)
            }
            #[test]
            fn named_broadcast_log_shared_queues() {
                sends_around_deregistration($kind, Path::LogShared)
            }
            #[test]
            fn named_with_delivery_filters() {
                sends_around_deregistration($kind, Path::Filtered)
            }
            #[test]
            fn named_with_message_limits() {
                sends_around_deregistration($kind, Path::Limited)
            }
        }
    )*};
}

every_path! {
    one_thread: Kind::OneThread;
    active_obj: Kind::ActiveObj;
    active_group: Kind::ActiveGroup;
    thread_pool: Kind::ThreadPool;
    work_stealing: Kind::WorkStealing;
    adv_thread_pool: Kind::AdvThreadPool;
    prio_one_thread: Kind::PrioOneThread;
}

// The phase table: one test per cell.

#[derive(Debug, Clone, Copy)]
struct Ping;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Started,
    Ping,
    Finished,
}

/// How a cell's test sends [`Ping`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    /// To the agent's own mailbox.
    Direct,
    /// Through a named mailbox.
    OneToMany,
}

/// Reports its start, its `Ping`s (direct or through `topic`) and its finish.
struct Subject {
    topic: Mbox,
    send_in_define: Option<How>,
    events: Sender<Event>,
}

impl Subject {
    fn report(&self, e: Event) {
        let _ = self.events.send(e);
    }
}

impl Agent for Subject {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _| me.report(Event::Ping))?;
        ctx.subscribe(&self.topic, |me: &mut Self, _: &Ping, _| {
            me.report(Event::Ping)
        })?;
        match self.send_in_define {
            Some(How::Direct) => ctx.self_mbox().send(Ping),
            Some(How::OneToMany) => self.topic.send(Ping),
            None => {}
        }
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.report(Event::Started);
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.report(Event::Finished);
    }
}

/// Holds its queue on [`Hold`] until the latch opens.
struct Holder(Arc<Latch>);

impl Agent for Holder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Hold, _| me.0.wait())?;
        Ok(())
    }
}

/// An environment with a dead-letter recorder, a `one_thread` dispatcher whose queue a
/// [`Holder`] holds until the latch opens, and the named mailbox `t`.
struct Stage {
    env: WrappedEnv,
    dead: DeadLetters,
    queue: Binder,
    latch: Arc<Latch>,
    topic: Mbox,
}

impl Stage {
    fn new() -> Self {
        let (env, dead) = DeadLetters::start();
        let queue = OneThreadBuilder::new().build(&env).unwrap().binder();
        let latch = Arc::new(Latch::default());
        let mut coop = env.new_coop();
        let holder = coop
            .add_with_binder(Holder(latch.clone()), queue.clone())
            .mbox();
        env.register_coop(coop).unwrap();
        holder.send(Hold);
        let topic = env.named_mbox("t");
        Self {
            env,
            dead,
            queue,
            latch,
            topic,
        }
    }

    /// Registers `n` subjects in one cooperation bound to the held queue.
    fn subjects(&self, n: usize, send_in_define: Option<How>) -> Subjects {
        let (tx, events) = mpsc::channel();
        let mut coop = self.env.new_coop();
        let direct = (0..n)
            .map(|_| {
                let s = Subject {
                    topic: self.topic.clone(),
                    send_in_define,
                    events: tx.clone(),
                };
                coop.add_with_binder(s, self.queue.clone()).mbox()
            })
            .collect();
        let handle = self.env.register_coop(coop).unwrap();
        Subjects {
            direct,
            handle,
            events,
        }
    }

    fn send(&self, how: How, to: &Subjects) {
        match how {
            How::Direct => to.direct.iter().for_each(|m| m.send(Ping)),
            How::OneToMany => self.topic.send(Ping),
        }
    }
}

struct Subjects {
    direct: Vec<Mbox>,
    handle: cohort::CoopHandle,
    events: Receiver<Event>,
}

impl Subjects {
    #[track_caller]
    fn expect(&self, events: &[Event]) {
        for e in events {
            assert_eq!(recv(&self.events, &format!("{e:?}")), *e);
        }
    }

    fn gone(&self) {
        while !self.handle.is_gone() {
            std::thread::yield_now();
        }
    }
}

/// How many subjects a cell's test uses: a 1:N send to two agents sharing a queue takes the
/// broadcast path; a direct send goes to one.
fn subjects_for(how: How) -> usize {
    match how {
        How::Direct => 1,
        How::OneToMany => 2,
    }
}

/// Defining: sent from `define` (the agent is not registered yet): a `NotRegistered` dead
/// letter, never handled. (One subscriber: the send checks the status at once.)
fn defining(how: How) {
    watchdog(move || {
        let stage = Stage::new();
        let subjects = stage.subjects(1, Some(how));
        assert_eq!(
            stage.dead.of::<Ping>(),
            vec![DeliveryFailure::NotRegistered]
        );
        stage.latch.open();
        subjects.handle.deregister(DeregReason::Normal);
        subjects.expect(&[Event::Started, Event::Finished]);
        stage.env.stop_and_wait();
    })
}

/// Registered, `start` not run yet (its queue is held): queued, handled after `start`.
fn registered_not_started(how: How) {
    watchdog(move || {
        let stage = Stage::new();
        let n = subjects_for(how);
        let subjects = stage.subjects(n, None);
        stage.send(how, &subjects);
        stage.latch.open();
        subjects.expect(&[Event::Started; 2][..n]);
        subjects.expect(&[Event::Ping; 2][..n]);
        assert_eq!(stage.dead.of::<Ping>(), vec![]);
        stage.env.stop_and_wait();
    })
}

/// Running: handled.
fn running(how: How) {
    watchdog(move || {
        let stage = Stage::new();
        stage.latch.open();
        let n = subjects_for(how);
        let subjects = stage.subjects(n, None);
        subjects.expect(&[Event::Started; 2][..n]);
        stage.send(how, &subjects);
        subjects.expect(&[Event::Ping; 2][..n]);
        assert_eq!(stage.dead.of::<Ping>(), vec![]);
        stage.env.stop_and_wait();
    })
}

/// Finishing: sent after `deregister()` returned, while `finish` has not run (its queue is
/// held): a `ReceiverGone` dead letter per receiver, never handled.
fn finishing(how: How) {
    watchdog(move || {
        let stage = Stage::new();
        let n = subjects_for(how);
        let subjects = stage.subjects(n, None);
        subjects.handle.deregister(DeregReason::Normal);
        stage.send(how, &subjects);
        stage.latch.open();
        subjects.expect(&[Event::Started; 2][..n]);
        subjects.expect(&[Event::Finished; 2][..n]);
        assert_eq!(
            stage.dead.of::<Ping>(),
            vec![DeliveryFailure::ReceiverGone; n]
        );
        stage.env.stop_and_wait();
    })
}

/// Gone: a direct send is a `ReceiverGone` dead letter; a gone agent no longer subscribes,
/// so a 1:N send reaches the others only (a `NoSubscriber` dead letter if none is left).
fn gone(how: How) {
    watchdog(move || {
        let stage = Stage::new();
        stage.latch.open();
        let stays = stage.subjects(1, None);
        let leaves = stage.subjects(1, None);
        stays.expect(&[Event::Started]);
        leaves.expect(&[Event::Started]);
        leaves.handle.deregister(DeregReason::Normal);
        leaves.expect(&[Event::Finished]);
        leaves.gone();
        stage.send(how, &leaves);
        match how {
            How::Direct => {
                assert_eq!(stage.dead.of::<Ping>(), vec![DeliveryFailure::ReceiverGone])
            }
            How::OneToMany => {
                stays.expect(&[Event::Ping]);
                assert_eq!(stage.dead.of::<Ping>(), vec![]);
                stays.handle.deregister(DeregReason::Normal);
                stays.expect(&[Event::Finished]);
                stays.gone();
                stage.send(how, &stays);
                assert_eq!(stage.dead.of::<Ping>(), vec![DeliveryFailure::NoSubscriber]);
            }
        }
        assert!(leaves.events.try_recv().is_err(), "a gone agent handled it");
        stage.env.stop_and_wait();
    })
}

mod phase {
    use super::*;

    #[test]
    fn defining_direct() {
        defining(How::Direct)
    }
    #[test]
    fn defining_one_to_many() {
        defining(How::OneToMany)
    }
    #[test]
    fn registered_not_started_direct() {
        registered_not_started(How::Direct)
    }
    #[test]
    fn registered_not_started_one_to_many() {
        registered_not_started(How::OneToMany)
    }
    #[test]
    fn running_direct() {
        running(How::Direct)
    }
    #[test]
    fn running_one_to_many() {
        running(How::OneToMany)
    }
    #[test]
    fn finishing_direct() {
        finishing(How::Direct)
    }
    #[test]
    fn finishing_one_to_many() {
        finishing(How::OneToMany)
    }
    #[test]
    fn gone_direct() {
        gone(How::Direct)
    }
    #[test]
    fn gone_one_to_many() {
        gone(How::OneToMany)
    }
}
