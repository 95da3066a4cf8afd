//! Message limits: exact counts of drops under a limit, the default limit, redirect,
//! transform, redirect loops, limits on mutable messages and on named-mailbox subscriptions,
//! abort, and the errors of bad declarations.

use crate::common;

use cohort::{
    ActiveObjBuilder, Agent, Context, DefineError, DeliveryFailure, LimitError, Mbox,
    MessageLimits, Mutable, RegisterError,
};
use common::{Block, DeadLetters, Gate, TIMEOUT, gate, recv_n, watchdog};
use std::sync::mpsc::{self, Receiver, Sender};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Job(u32);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Other(u32);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Third(u32);

/// What a [`Limited`] agent handled.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Job(u32),
    Other(u32),
    Third(u32),
    MutJob(u32),
}

/// An agent with the limits it is given, that blocks in a gate on [`Block`] (so that
/// messages pile up in its queue) and reports every message it handles.
struct Limited {
    limits: Option<MessageLimits>,
    gate: Gate,
    seen: Sender<Seen>,
}

impl Agent for Limited {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if let Some(l) = self.limits.take() {
            ctx.set_message_limits(l)?;
        }
        ctx.on(|me: &mut Self, _: &Block, _: &mut Context<'_, Self>| me.gate.block())?;
        ctx.on(|me: &mut Self, j: &Job, _: &mut Context<'_, Self>| {
            let _ = me.seen.send(Seen::Job(j.0));
        })?;
        ctx.on(|me: &mut Self, o: &Other, _: &mut Context<'_, Self>| {
            let _ = me.seen.send(Seen::Other(o.0));
        })?;
        ctx.on(|me: &mut Self, t: &Third, _: &mut Context<'_, Self>| {
            let _ = me.seen.send(Seen::Third(t.0));
        })?;
        ctx.on_mut(|me: &mut Self, j: Job, _: &mut Context<'_, Self>| {
            let _ = me.seen.send(Seen::MutJob(j.0));
        })?;
        Ok(())
    }
}

/// Forwards every `M` to a channel (on its own thread: not behind a blocked agent).
struct Sink<M> {
    tx: Sender<M>,
}

impl<M: Clone + Send + Sync + 'static> Agent for Sink<M> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &M, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(m.clone());
        })?;
        Ok(())
    }
}

/// A started environment with one [`Limited`] agent whose worker is blocked in its gate.
struct Blocked {
    env: cohort::WrappedEnv,
    agent: Mbox,
    ctl: common::GateControl,
    seen: Receiver<Seen>,
    dead: DeadLetters,
}

fn blocked(limits: MessageLimits, extra: impl FnOnce(&cohort::Environment)) -> Blocked {
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    extra(&env);
    let (g, ctl) = gate();
    let (tx, seen) = mpsc::channel();
    let mut coop = env.new_coop();
    let agent = coop
        .add(Limited {
            limits: Some(limits),
            gate: g,
            seen: tx,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    agent.send(Block);
    ctl.wait_entered();
    Blocked {
        env,
        agent,
        ctl,
        seen,
        dead,
    }
}

#[test]
fn drop_limit_drops_exactly_the_excess_and_frees_up_when_handled() {
    watchdog(TIMEOUT, || {
        let b = blocked(MessageLimits::new().drop::<Job>(3), |_| {});
        for i in 0..10 {
            b.agent.send(Job(i));
        }
        // Other types are not limited.
        for i in 0..5 {
            b.agent.send(Other(i));
        }
        assert_eq!(b.dead.of::<Job>(), vec![DeliveryFailure::LimitReached; 7]);
        assert_eq!(b.env.dead_letters(), 7);
        assert_eq!(b.env.stats().dead_letters, 7);
        b.ctl.open();
        let mut expect: Vec<Seen> = (0..3).map(Seen::Job).collect();
        expect.extend((0..5).map(Seen::Other));
        assert_eq!(recv_n(&b.seen, 8, "the queued messages"), expect);
        // The count went back to zero as the jobs were handled: three more fit.
        b.agent.send(Block);
        b.ctl.wait_entered();
        for i in 10..14 {
            b.agent.send(Job(i));
        }
        assert_eq!(b.env.dead_letters(), 8);
        b.ctl.open();
        let got = recv_n(&b.seen, 3, "the second batch");
        assert_eq!(got, vec![Seen::Job(10), Seen::Job(11), Seen::Job(12)]);
        b.env.stop_and_wait();
    });
}

#[test]
fn default_limit_covers_unlisted_types_with_one_count() {
    watchdog(TIMEOUT, || {
        let limits = MessageLimits::new().drop::<Job>(5).default_drop(2);
        let b = blocked(limits, |_| {});
        for i in 0..3 {
            b.agent.send(Job(i));
        }
        b.agent.send(Other(0));
        b.agent.send(Third(0));
        b.agent.send(Other(1)); // the default count is shared: full
        b.agent.send(Third(1));
        assert_eq!(b.dead.of::<Job>(), vec![]);
        assert_eq!(b.dead.of::<Other>(), vec![DeliveryFailure::LimitReached]);
        assert_eq!(b.dead.of::<Third>(), vec![DeliveryFailure::LimitReached]);
        b.ctl.open();
        let got = recv_n(&b.seen, 5, "the queued messages");
        assert_eq!(
            got,
            vec![
                Seen::Job(0),
                Seen::Job(1),
                Seen::Job(2),
                Seen::Other(0),
                Seen::Third(0)
            ]
        );
        b.env.stop_and_wait();
    });
}

#[test]
fn mutable_messages_are_limited_as_mutable() {
    watchdog(TIMEOUT, || {
        let b = blocked(MessageLimits::new().drop::<Mutable<Job>>(1), |_| {});
        for i in 0..3 {
            b.agent.send_mut(Job(i)).unwrap();
        }
        b.agent.send(Job(7)); // the immutable `Job` is another type
        assert_eq!(
            b.dead.of::<Mutable<Job>>(),
            vec![DeliveryFailure::LimitReached; 2]
        );
        b.ctl.open();
        let got = recv_n(&b.seen, 2, "the queued messages");
        assert_eq!(got, vec![Seen::MutJob(0), Seen::Job(7)]);
        b.env.stop_and_wait();
    });
}

#[test]
fn redirect_sends_the_excess_to_another_agent() {
    watchdog(TIMEOUT, || {
        let (tx, rx) = mpsc::channel();
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let ao = ActiveObjBuilder::new().build(&env).unwrap();
        let mut coop = env.new_coop();
        let spare = coop.add_with_binder(Sink::<Job> { tx }, ao.binder()).mbox();
        env.register_coop(coop).unwrap();
        let (g, ctl) = gate();
        let (stx, seen) = mpsc::channel();
        let mut coop = env.new_coop();
        let agent = coop
            .add(Limited {
                limits: Some(MessageLimits::new().redirect::<Job>(2, &spare)),
                gate: g,
                seen: stx,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        agent.send(Block);
        ctl.wait_entered();
        for i in 0..5 {
            agent.send(Job(i));
        }
        assert_eq!(
            recv_n(&rx, 3, "the redirected jobs"),
            vec![Job(2), Job(3), Job(4)]
        );
        ctl.open();
        assert_eq!(
            recv_n(&seen, 2, "the kept jobs"),
            vec![Seen::Job(0), Seen::Job(1)]
        );
        assert_eq!(dead.all(), vec![]);
        env.stop_and_wait();
    });
}

/// A payload that is boxed (more than one word) and not `Clone`: redirected to a
/// multi-consumer mailbox, it is shared, not copied.
#[derive(Debug, PartialEq, Eq)]
struct Big(String, u64);

struct BigSink {
    mbox: Mbox,
    tx: Sender<(usize, String)>,
    index: usize,
}

impl Agent for BigSink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let mbox = self.mbox.clone();
        ctx.subscribe(
            &mbox,
            |me: &mut Self, b: &Big, _: &mut Context<'_, Self>| {
                let _ = me.tx.send((me.index, b.0.clone()));
            },
        )?;
        Ok(())
    }
}

struct BigHolder {
    spill: Mbox,
}

impl Agent for BigHolder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.set_message_limits(MessageLimits::new().redirect::<Big>(0, &self.spill))?;
        ctx.on(|_: &mut Self, _: &Big, _: &mut Context<'_, Self>| {})?;
        Ok(())
    }
}

#[test]
fn redirect_to_a_named_mailbox_reaches_every_subscriber() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let ao = ActiveObjBuilder::new().build(&env).unwrap();
        let spill = env.named_mbox("spill");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        for index in 0..2 {
            let sink = BigSink {
                mbox: spill.clone(),
                tx: tx.clone(),
                index,
            };
            coop.add_with_binder(sink, ao.binder());
        }
        env.register_coop(coop).unwrap();
        let mut coop = env.new_coop();
        let holder = coop.add(BigHolder { spill }).mbox();
        env.register_coop(coop).unwrap();
        // A limit of 0: every `Big` is redirected.
        holder.send(Big("a".into(), 1));
        holder.send(Big("b".into(), 2));
        let mut got = recv_n(&rx, 4, "the redirected messages");
        got.sort();
        let s = |i: usize, t: &str| (i, t.to_string());
        assert_eq!(got, vec![s(0, "a"), s(0, "b"), s(1, "a"), s(1, "b")]);
        assert_eq!(dead.all(), vec![]);
        env.stop_and_wait();
    });
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Overflowed(u32);

#[test]
fn transform_sends_another_message_instead() {
    watchdog(TIMEOUT, || {
        let (tx, rx) = mpsc::channel();
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let ao = ActiveObjBuilder::new().build(&env).unwrap();
        let mut coop = env.new_coop();
        let spare = coop
            .add_with_binder(Sink::<Overflowed> { tx }, ao.binder())
            .mbox();
        env.register_coop(coop).unwrap();
        let (g, ctl) = gate();
        let (stx, seen) = mpsc::channel();
        let limits =
            MessageLimits::new().transform::<Job, _, _>(1, &spare, |j: &Job| Overflowed(j.0 * 10));
        let mut coop = env.new_coop();
        let agent = coop
            .add(Limited {
                limits: Some(limits),
                gate: g,
                seen: stx,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        agent.send(Block);
        ctl.wait_entered();
        for i in 0..3 {
            agent.send(Job(i));
        }
        let got = recv_n(&rx, 2, "the transformed jobs");
        assert_eq!(got, vec![Overflowed(10), Overflowed(20)]);
        ctl.open();
        assert_eq!(recv_n(&seen, 1, "the kept job"), vec![Seen::Job(0)]);
        assert_eq!(dead.all(), vec![]);
        env.stop_and_wait();
    });
}

/// Redirects every `Job` (a limit of 0) to `to`, or to itself when `to` is `None`.
struct Bouncer {
    to: Option<Mbox>,
}

impl Agent for Bouncer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let to = self.to.clone().unwrap_or_else(|| ctx.self_mbox());
        ctx.set_message_limits(MessageLimits::new().redirect::<Job>(0, &to))?;
        ctx.on(|_: &mut Self, _: &Job, _: &mut Context<'_, Self>| {})?;
        Ok(())
    }
}

#[test]
fn redirect_loops_are_dropped_with_a_typed_reason() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        // Two agents redirecting to each other, and one redirecting to itself.
        let mut coop = env.new_coop();
        let a = coop.add(Bouncer { to: None });
        let b = coop.add(Bouncer { to: Some(a.mbox()) });
        coop.agent_mut(&a).to = Some(b.mbox());
        let own = coop.add(Bouncer { to: None }).mbox();
        env.register_coop(coop).unwrap();
        a.mbox().send(Job(1));
        own.send(Job(2));
        own.send(Job(3));
        assert_eq!(dead.of::<Job>(), vec![DeliveryFailure::RedirectLoop; 3]);
        assert_eq!(env.dead_letters(), 3);
        env.stop_and_wait();
    });
}

/// Subscribes to `Job` on a named mailbox first, then declares its limits.
struct NamedLimited {
    jobs: Mbox,
    gate: Gate,
    seen: Sender<u32>,
}

impl Agent for NamedLimited {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let jobs = self.jobs.clone();
        ctx.subscribe(
            &jobs,
            |me: &mut Self, j: &Job, _: &mut Context<'_, Self>| {
                let _ = me.seen.send(j.0);
            },
        )?;
        ctx.on(|me: &mut Self, _: &Block, _: &mut Context<'_, Self>| me.gate.block())?;
        ctx.set_message_limits(MessageLimits::new().drop::<Job>(2))?;
        Ok(())
    }
}

#[test]
fn limits_count_messages_from_named_mailboxes() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let jobs = env.named_mbox("jobs");
        let (g, ctl) = gate();
        let (tx, seen) = mpsc::channel();
        let mut coop = env.new_coop();
        let agent = coop
            .add(NamedLimited {
                jobs: jobs.clone(),
                gate: g,
                seen: tx,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        agent.send(Block);
        ctl.wait_entered();
        for i in 0..6 {
            jobs.send(Job(i));
        }
        assert_eq!(dead.of::<Job>(), vec![DeliveryFailure::LimitReached; 4]);
        ctl.open();
        assert_eq!(recv_n(&seen, 2, "the queued jobs"), vec![0, 1]);
        env.stop_and_wait();
    });
}

/// Declares the limits it is given, then reports what a second declaration says.
struct Declares {
    first: Option<MessageLimits>,
    second: Option<MessageLimits>,
    later: Sender<LimitError>,
}

impl Agent for Declares {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if let Some(l) = self.first.take() {
            ctx.set_message_limits(l)?;
        }
        if let Some(l) = self.second.take() {
            ctx.set_message_limits(l)?;
        }
        Ok(())
    }
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        if let Err(e) = ctx.set_message_limits(MessageLimits::new().drop::<Job>(1)) {
            let _ = self.later.send(e);
        }
    }
}

/// Registers a [`Declares`]; on success, also returns what `start` was told.
fn register_declares(
    first: MessageLimits,
    second: Option<MessageLimits>,
) -> (Result<(), RegisterError>, Option<LimitError>) {
    let env = cohort::Environment::builder().start().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.add(Declares {
        first: Some(first),
        second,
        later: tx,
    });
    let r = env.register_coop(coop).map(|_| ());
    let later = r
        .is_ok()
        .then(|| common::recv(&rx, "the error of a declaration in start"));
    env.stop_and_wait();
    (r, later)
}

#[test]
fn bad_limit_declarations_are_typed_errors() {
    watchdog(TIMEOUT, || {
        let define_error = |first, second| match register_declares(first, second).0 {
            Err(RegisterError::Define { reason, .. }) => reason,
            other => panic!("expected a define error, got {other:?}"),
        };
        let twice = define_error(MessageLimits::new().drop::<Job>(1).abort::<Job>(2), None);
        assert_eq!(
            twice,
            LimitError::DuplicateType {
                message_type: std::any::type_name::<Job>()
            }
            .to_string()
        );
        assert!(twice.contains("one limit per message type"), "{twice}");
        let defaults = define_error(MessageLimits::new().default_drop(1).default_abort(1), None);
        assert_eq!(defaults, LimitError::DuplicateDefault.to_string());
        let again = define_error(
            MessageLimits::new().drop::<Job>(1),
            Some(MessageLimits::new().drop::<Other>(1)),
        );
        assert_eq!(again, LimitError::AlreadySet.to_string());
        // Outside `define`: refused, and the agent keeps running.
        let (r, later) = register_declares(MessageLimits::new(), None);
        r.unwrap();
        assert_eq!(later, Some(LimitError::NotInDefine));
    });
}

const ABORT_CHILD: &str = "COHORT_TEST_LIMIT_ABORT_CHILD";

#[test]
fn abort_limit_aborts_the_process() {
    if std::env::var_os(ABORT_CHILD).is_some() {
        // The child: overflow an abort limit (never returns).
        let b = blocked(MessageLimits::new().abort::<Job>(1), |_| {});
        b.agent.send(Job(0));
        b.agent.send(Job(1));
        unreachable!("the second job should have aborted the process");
    }
    watchdog(TIMEOUT, || {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                common::test_path(module_path!(), "abort_limit_aborts_the_process").as_str(),
                "--nocapture",
            ])
            .env(ABORT_CHILD, "1")
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "status {:?}", out.status);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("message limit of 1 for") && stderr.contains("Job"),
            "{stderr}"
        );
    });
}

/// Subscribes to `Job` on `on`; with `bounce`, redirects every `Job` (a limit of 0) back to
/// `on`; else forwards each to `seen`.
struct Echoer {
    on: Mbox,
    bounce: bool,
    seen: Sender<u32>,
}

impl Agent for Echoer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let on = self.on.clone();
        if self.bounce {
            ctx.set_message_limits(MessageLimits::new().redirect::<Job>(0, &on))?;
        }
        ctx.subscribe(&on, |me: &mut Self, j: &Job, _: &mut Context<'_, Self>| {
            let _ = me.seen.send(j.0);
        })?;
        Ok(())
    }
}

#[test]
fn a_redirect_back_into_the_same_named_mailbox_ends_after_the_depth_bound() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let jobs = env.named_mbox("loop");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        for bounce in [true, false] {
            coop.add(Echoer {
                on: jobs.clone(),
                bounce,
                seen: tx.clone(),
            });
        }
        env.register_coop(coop).unwrap();
        jobs.send(Job(5));
        // The send itself, then one more per hop, until the bound.
        assert_eq!(dead.of::<Job>(), vec![DeliveryFailure::RedirectLoop]);
        let hops = cohort::defaults::MAX_REDIRECT_DEPTH;
        assert_eq!(recv_n(&rx, hops + 1, "every copy"), vec![5; hops + 1]);
        env.stop_and_wait();
        assert!(rx.try_recv().is_err(), "no more copies");
    });
}

#[test]
fn failed_redirects_and_transforms_are_dead_letters_with_their_reason() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        // A multi-consumer mailbox with two subscribers of `Big`.
        let many = env.named_mbox("many");
        let (tx, _rx) = mpsc::channel();
        let mut coop = env.new_coop();
        for index in 0..2 {
            coop.add(BigSink {
                mbox: many.clone(),
                tx: tx.clone(),
                index,
            });
        }
        env.register_coop(coop).unwrap();
        let limits = MessageLimits::new()
            // A mutable message has no subscriber on a multi-consumer mailbox.
            .redirect::<Mutable<Job>>(0, &many)
            // A transform function that panics.
            .transform::<Other, _, _>(0, &many, |_: &Other| -> Job { panic!("no") });
        let b = blocked(limits, |_| {});
        b.agent.send_mut(Job(1)).unwrap();
        b.agent.send(Other(2));
        // Both counted by the limited agent's environment, where the redirect was refused
        // (a multi-consumer mailbox never takes a mutable message) and the transform ran.
        assert_eq!(
            b.dead.of::<Mutable<Job>>(),
            vec![DeliveryFailure::MutableToMultiConsumer]
        );
        assert!(dead.of::<Mutable<Job>>().is_empty());
        assert_eq!(
            b.dead.of::<Other>(),
            vec![DeliveryFailure::TransformPanicked]
        );
        assert_eq!(b.env.panics(), 1);
        assert_eq!(b.dead.all().len(), 2);
        b.ctl.open();
        b.env.stop_and_wait();
        env.stop_and_wait();
    });
}
