//! Message limits under overload: drop, redirect, transform.
//!
//! `cargo run -p cohort --example message_limits`
//!
//! What it shows: a slow agent declares, in `define`, how many messages of each type may
//! wait in its queue and what happens to the next one (SObjectizer's `limit_then_*`):
//! - `drop::<Log>(5)`: the 6th waiting `Log` is a counted dead letter (`LimitReached`);
//! - `redirect::<Job>(10, &spare)`: the 11th waiting `Job` goes to a spare worker instead;
//! - `transform(3, &desk, |o: &Order| Rejected { .. })`: the 4th waiting `Order` becomes a
//!   `Rejected` sent to a desk agent.
//!
//! A limit counts messages *waiting*, not handled: the one being handled no longer counts.
//! To make the counts exact, the slow agent first handles a `Hold` message that blocks it
//! until the main thread has sent everything (a real agent would just be slow).

use cohort::{
    ActiveObjBuilder, Agent, Context, DefineError, DeliveryFailure, Environment, Mbox,
    MessageLimits,
};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, mpsc};

/// Blocks the slow agent until the main thread releases it (a `Mutex` makes the receiver
/// `Sync`, as every message sent with `send` must be).
struct Hold(std::sync::Mutex<mpsc::Receiver<()>>);
struct Job(u32);
struct Log;
struct Order(u32);
struct Rejected {
    order: u32,
}

/// What each agent handled, read by the main thread at the end.
#[derive(Default)]
struct Counts {
    jobs: AtomicU64,
    logs: AtomicU64,
    orders: AtomicU64,
    spare_jobs: AtomicU64,
    rejected: AtomicU64,
    limit_drops: AtomicU64,
}

struct Slow {
    spare: Mbox,
    desk: Mbox,
    counts: Arc<Counts>,
}

impl Agent for Slow {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.set_message_limits(
            MessageLimits::new()
                .drop::<Log>(5)
                .redirect::<Job>(10, &self.spare)
                .transform(3, &self.desk, |o: &Order| Rejected { order: o.0 }),
        )?;
        ctx.on(|_, h: &Hold, _| {
            // Blocks until the main thread has flooded us (see the module comment).
            let _ = h.0.lock().expect("not poisoned").recv();
        })?;
        ctx.on(|me, _: &Job, _| {
            me.counts.jobs.fetch_add(1, Relaxed);
        })?;
        ctx.on(|me, _: &Log, _| {
            me.counts.logs.fetch_add(1, Relaxed);
        })?;
        ctx.on(|me, _: &Order, _| {
            me.counts.orders.fetch_add(1, Relaxed);
        })?;
        Ok(())
    }
}

/// Takes the jobs the slow agent has no room for.
struct Spare {
    counts: Arc<Counts>,
    first: Option<u32>,
}

impl Agent for Spare {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, j: &Job, _| {
            me.first.get_or_insert(j.0);
            me.counts.spare_jobs.fetch_add(1, Relaxed);
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        // Jobs 0..=9 waited at the slow agent; the rest came here.
        println!(
            "spare: the first job redirected to me was job {:?}",
            self.first
        );
    }
}

/// Tells customers their order was turned away.
struct Desk {
    counts: Arc<Counts>,
}

impl Agent for Desk {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, r: &Rejected, _| {
            println!("desk: sorry, order {} was rejected (too busy)", r.order);
            me.counts.rejected.fetch_add(1, Relaxed);
        })?;
        Ok(())
    }
}

fn main() {
    let counts = Arc::new(Counts::default());
    let hook_counts = counts.clone();
    let env = Environment::builder()
        // The hook sees every dead letter; here it counts those of the drop limit.
        .dead_letter_hook(move |d| {
            if d.reason == DeliveryFailure::LimitReached {
                hook_counts.limit_drops.fetch_add(1, Relaxed);
            }
        })
        .start()
        .expect("the environment starts");

    let mut coop = env.new_coop();
    let spare = coop.add(Spare {
        counts: counts.clone(),
        first: None,
    });
    let desk = coop.add(Desk {
        counts: counts.clone(),
    });
    // The slow agent gets a thread of its own, so its blocking does not hold up the others.
    let own_thread = ActiveObjBuilder::new()
        .name("slow")
        .build(&env)
        .expect("a dispatcher");
    let slow = coop.add_with_binder(
        Slow {
            spare: spare.mbox(),
            desk: desk.mbox(),
            counts: counts.clone(),
        },
        own_thread.binder(),
    );
    let slow = slow.mbox();
    env.register_coop(coop).expect("the agents register");

    let (release, gate) = mpsc::channel();
    slow.send(Hold(std::sync::Mutex::new(gate)));
    for i in 0..30 {
        slow.send(Job(i));
    }
    for _ in 0..20 {
        slow.send(Log);
    }
    for i in 0..8 {
        slow.send(Order(i));
    }
    println!("main: sent 30 jobs, 20 logs, 8 orders to the slow agent");
    release.send(()).expect("the slow agent waits");

    env.stop_and_wait(); // everything queued is handled first
    let c = |a: &AtomicU64| a.load(Relaxed);
    println!(
        "slow agent handled {} jobs, {} logs, {} orders",
        c(&counts.jobs),
        c(&counts.logs),
        c(&counts.orders)
    );
    println!(
        "spare worker took {} redirected jobs",
        c(&counts.spare_jobs)
    );
    println!("desk got {} rejected orders", c(&counts.rejected));
    println!("{} logs dropped as dead letters", c(&counts.limit_drops));
    println!("done: message_limits");
}
