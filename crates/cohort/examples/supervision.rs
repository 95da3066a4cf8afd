//! Supervision: a worker restarted one-for-one with back-off, and a pair restarted
//! one-for-all.
//!
//! `cargo run -p cohort --example supervision`
//!
//! What it shows:
//! - a [`Supervisor`] builds each child's cooperation with a factory, so a restarted agent
//!   starts from fresh state (the worker's job count starts at zero again);
//! - the worker panics on every 5th job it handles; its supervisor restarts it alone
//!   (one-for-one) after an exponential back-off (20 ms, then 40 ms);
//! - `left` and `right` play ping-pong and only work together: when `left` panics, the
//!   other supervisor stops `right` too and restarts both, in start order (one-for-all);
//! - clients address supervised agents through named mailboxes, which outlive incarnations:
//!   each incarnation subscribes in `define`;
//! - the supervisors report every step as a [`SupervisionEvent`] (printed here) and count it
//!   in `env.stats().supervision`.

use cohort::supervision::{Backoff, ChildSpec, Intensity, Strategy, SupervisionEvent, Supervisor};
use cohort::{Agent, Context, DefineError, Environment, Mbox};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const JOBS: u32 = 12;

/// A job for the worker, on the named mailbox `jobs`.
struct Job(u32);
/// The worker did job `.0` (to the client).
struct Done(u32);
/// The pair exchanged its pings after a restart (to the client).
struct PairDone;
struct Ping;
struct Pong;

/// Panics on the 5th job it handles.
struct Worker {
    incarnation: u32,
    handled: u32,
    jobs: Mbox,
    client: Mbox,
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let jobs = self.jobs.clone();
        ctx.subscribe(&jobs, |me, job: &Job, _| {
            me.handled += 1;
            if me.handled == 5 {
                panic!("worker #{} tripped on its 5th job", me.incarnation);
            }
            println!("worker #{}: job {}", me.incarnation, job.0);
            me.client.send(Done(job.0));
        })?;
        Ok(())
    }
}

/// Sends the jobs one at a time, sends the current one again when a new worker starts (the
/// one in hand when the worker failed is lost with it), and stops everything at the end.
struct Client {
    jobs: Mbox,
    next: u32,
    pair_done: bool,
}

impl Client {
    fn maybe_stop(&self, ctx: &mut Context<'_, Self>) {
        if self.next > JOBS && self.pair_done {
            let s = ctx.environment().stats().supervision;
            println!(
                "stats: {} starts, {} failures, {} restarts, {} give-ups",
                s.child_starts, s.child_failures, s.restarts, s.give_ups
            );
            ctx.stop_environment();
        }
    }
}

impl Agent for Client {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, d: &Done, ctx| {
            me.next = d.0 + 1;
            if me.next <= JOBS {
                me.jobs.send(Job(me.next));
            }
            me.maybe_stop(ctx);
        })?;
        ctx.on(|me, _: &PairDone, ctx| {
            me.pair_done = true;
            me.maybe_stop(ctx);
        })?;
        ctx.on(|me, e: &SupervisionEvent, _| {
            print_event(e);
            if let SupervisionEvent::ChildStarted { child, .. } = e
                && &**child == "worker"
                && me.next <= JOBS
            {
                me.jobs.send(Job(me.next));
            }
        })?;
        Ok(())
    }
}

fn print_event(e: &SupervisionEvent) {
    match e {
        SupervisionEvent::ChildStarted {
            supervisor,
            child,
            incarnation,
            ..
        } => println!("[{supervisor}] {child} started (incarnation {incarnation})"),
        SupervisionEvent::ChildFailed {
            supervisor,
            child,
            failure,
            ..
        } => println!("[{supervisor}] {child} failed: {failure}"),
        SupervisionEvent::ChildExited {
            supervisor,
            child,
            reason,
        } => println!("[{supervisor}] {child} ended ({reason:?})"),
        SupervisionEvent::ChildRestarting {
            supervisor,
            child,
            attempt,
            delay,
        } => println!("[{supervisor}] restarting {child} (attempt {attempt}) in {delay:?}"),
        SupervisionEvent::GaveUp { supervisor, .. } => println!("[{supervisor}] gave up"),
    }
}

/// Pings `right`; its first incarnation panics at the 3rd pong, a later one reports.
struct Left {
    incarnation: u32,
    pongs: u32,
    right: Mbox,
    client: Mbox,
}

impl Agent for Left {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let me_named = ctx.environment().named_mbox("left");
        ctx.subscribe(&me_named, |me, _: &Pong, _| {
            me.pongs += 1;
            println!("left #{}: pong {}", me.incarnation, me.pongs);
            if me.pongs == 3 {
                if me.incarnation == 1 {
                    panic!("left #1 dropped the ball");
                }
                me.client.send(PairDone);
            } else {
                me.right.send(Ping);
            }
        })?;
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.right.send(Ping);
    }
}

/// Answers `left`'s pings.
struct Right {
    incarnation: u32,
    left: Mbox,
}

impl Agent for Right {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let me_named = ctx.environment().named_mbox("right");
        ctx.subscribe(&me_named, |me, _: &Ping, _| {
            me.left.send(Pong);
        })?;
        Ok(())
    }
    fn start(&mut self, _: &mut Context<'_, Self>) {
        println!("right #{}: ready", self.incarnation);
    }
}

/// The factory of a child: the incarnation counter lives in the closure, the agent is new.
fn counted(
    name: &str,
    mut build: impl FnMut(u32, &mut cohort::Coop) + Send + 'static,
) -> ChildSpec {
    let n = Arc::new(AtomicU32::new(0));
    ChildSpec::new(name, move |coop| {
        build(n.fetch_add(1, Ordering::Relaxed) + 1, coop)
    })
}

fn supervisors(
    env: &Environment,
    client: &Mbox,
) -> Result<(Supervisor, Supervisor), cohort::supervision::SupervisorError> {
    let (jobs, c) = (env.named_mbox("jobs"), client.clone());
    let workers = Supervisor::builder("workers")
        .strategy(Strategy::OneForOne)
        .intensity(Intensity::new(5, Duration::from_secs(10)))
        .backoff(Backoff::exponential(
            Duration::from_millis(20),
            Duration::from_secs(1),
        ))
        .events(client.clone())
        .child(counted("worker", move |incarnation, coop| {
            coop.add(Worker {
                incarnation,
                handled: 0,
                jobs: jobs.clone(),
                client: c.clone(),
            });
        }))
        .build()?;
    let (right, left, c) = (
        env.named_mbox("right"),
        env.named_mbox("left"),
        client.clone(),
    );
    let pair = Supervisor::builder("pair")
        .strategy(Strategy::OneForAll)
        .backoff(Backoff::fixed(Duration::from_millis(10)))
        .events(client.clone())
        .child(counted("left", move |incarnation, coop| {
            coop.add(Left {
                incarnation,
                pongs: 0,
                right: right.clone(),
                client: c.clone(),
            });
        }))
        .child(counted("right", move |incarnation, coop| {
            coop.add(Right {
                incarnation,
                left: left.clone(),
            });
        }))
        .build()?;
    Ok((workers, pair))
}

fn main() {
    // The supervisors report each panic as an event; the default hook's backtrace noise is
    // not needed here.
    std::panic::set_hook(Box::new(|_| {}));
    cohort::launch(|env| {
        let mut coop = env.new_coop();
        coop.set_name("client");
        let client = coop.add(Client {
            jobs: env.named_mbox("jobs"),
            next: 1,
            pair_done: false,
        });
        let (workers, pair) = supervisors(env, &client.mbox())?;
        env.register_coop(coop)?;
        let mut coop = env.new_coop();
        coop.set_name("supervisors");
        coop.add(workers);
        coop.add(pair);
        env.register_coop(coop)?;
        Ok(())
    })
    .expect("the example runs");
    println!("done: supervision");
}
