//! The phase table: one test per cell.

use super::*;

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

// ---------------------------------------------------------------------------------------
