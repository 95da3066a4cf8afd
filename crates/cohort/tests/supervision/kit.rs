//! What the supervision tests share: a worker that logs its life and panics on request, and
//! helpers to read the supervisor's events from a test kit probe.

use cohort::supervision::{ChildSpec, SupervisionEvent};
use cohort::testing::{Probe, TestEnv};
use cohort::{Agent, Context, DefineError, DeregReason, Mbox};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Published on a worker's named mailbox: the worker panics.
#[derive(Debug, Clone, Copy)]
pub struct Crash;

/// Published on a worker's named mailbox: the worker ends its cooperation with this reason.
#[derive(Debug, Clone, Copy)]
pub struct Quit(pub DeregReason);

/// Published on a worker's named mailbox: logged as `name#incarnation job n`.
#[derive(Debug, Clone, Copy)]
pub struct Job(pub u32);

/// The shared record of what the workers did, in order.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, s: String) {
        self.0.lock().unwrap().push(s);
    }
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A worker that subscribes to the named mailbox `name` and logs its starts and finishes.
pub struct Worker {
    pub name: String,
    pub incarnation: u64,
    pub inbox: Mbox,
    pub log: Log,
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |_: &mut Self, _: &Crash, _: &mut Context<'_, Self>| panic!("asked to crash"),
        )?;
        ctx.subscribe(
            &inbox,
            |_: &mut Self, q: &Quit, ctx: &mut Context<'_, Self>| ctx.deregister_coop(q.0),
        )?;
        ctx.subscribe(
            &inbox,
            |me: &mut Self, j: &Job, _: &mut Context<'_, Self>| {
                me.log
                    .push(format!("{}#{} job {}", me.name, me.incarnation, j.0))
            },
        )?;
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.log
            .push(format!("{}#{} start", self.name, self.incarnation));
    }
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.log
            .push(format!("{}#{} finish", self.name, self.incarnation));
    }
}

/// A child spec whose worker listens on the named mailbox `name` of `env`.
pub fn worker(env: &cohort::Environment, name: &str, log: &Log) -> ChildSpec {
    worker_counted(env, name, log, Arc::default())
}

/// As [`worker`], numbering incarnations with `incarnations` (for a spec built anew by an
/// outer factory).
pub fn worker_counted(
    env: &cohort::Environment,
    name: &str,
    log: &Log,
    incarnations: Arc<AtomicU64>,
) -> ChildSpec {
    let inbox = env.named_mbox(name);
    let log = log.clone();
    let n = name.to_owned();
    ChildSpec::new(name, move |coop| {
        coop.add(Worker {
            name: n.clone(),
            incarnation: incarnations.fetch_add(1, Ordering::Relaxed) + 1,
            inbox: inbox.clone(),
            log: log.clone(),
        });
    })
}

/// Every event the probe holds, each as a short line.
pub fn events(p: &Probe<SupervisionEvent>) -> Vec<String> {
    std::iter::from_fn(|| p.try_take())
        .map(|e| line(&e))
        .collect()
}

/// One event as `kind child detail`.
pub fn line(e: &SupervisionEvent) -> String {
    match e {
        SupervisionEvent::ChildStarted {
            child, incarnation, ..
        } => format!("started {child} #{incarnation}"),
        SupervisionEvent::ChildFailed { child, failure, .. } => {
            format!("failed {child}: {failure}")
        }
        SupervisionEvent::ChildExited { child, reason, .. } => {
            format!("exited {child} {reason:?}")
        }
        SupervisionEvent::ChildRestarting {
            child,
            attempt,
            delay,
            ..
        } => format!("restarting {child} #{attempt} in {delay:?}"),
        SupervisionEvent::GaveUp {
            supervisor,
            restarts,
            ..
        } => format!("gave up {supervisor} after {restarts}"),
    }
}

/// Registers `sup` in a cooperation of its own on the test dispatcher and runs until quiet.
pub fn register(t: &TestEnv, sup: cohort::supervision::Supervisor) -> cohort::CoopHandle {
    let mut coop = t.new_coop();
    coop.add(sup);
    let h = t.register(coop).expect("register the supervisor");
    t.run_until_quiet().expect("quiet");
    h
}

/// Publishes `msg` on the named mailbox `name` and runs until quiet.
pub fn publish<M: Send + Sync + 'static>(t: &TestEnv, name: &str, msg: M) {
    t.environment().named_mbox(name).send(msg);
    t.run_until_quiet().expect("quiet");
}
