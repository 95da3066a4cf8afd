//! Cooperations with children, and the notices of their registration and deregistration.
//!
//! `cargo run -p cohort --example coop_children`
//!
//! What it shows:
//! - an agent registers child cooperations from a handler (`ctx.new_child_coop()`);
//! - `Coop::notify_registered` / `notify_deregistered` send [`CoopRegistered`] and
//!   [`CoopDeregistered`] to a mailbox: here the parent agent's own;
//! - a child that ends its own cooperation (`DeregReason::Normal`);
//! - deregistering a parent deregisters its children first (reason `Parent`), and the
//!   parent's agents get the children's `CoopDeregistered` before their own `finish`.

use cohort::{Agent, Context, CoopDeregistered, CoopRegistered, DefineError, DeregReason, Mbox};

/// Asks a worker to do its one job.
struct Job(u64);
/// A worker's result, sent to the manager.
struct Done {
    worker: u64,
    result: u64,
}

/// Registers one child cooperation per job, and an idle one that only goes with the parent.
struct Manager {
    jobs: u64,
    results: u64,
    gone: u64,
}

/// Does one job, reports, and deregisters its own cooperation.
struct Worker {
    id: u64,
    manager: Mbox,
}

/// Does nothing: it is deregistered with its parent.
struct Idler;

impl Agent for Manager {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_, r: &CoopRegistered, _| {
            println!("manager: child {:?} ({:?}) registered", r.name, r.id);
        })?;
        ctx.on(|me, d: &Done, _| {
            println!("manager: worker {} says {}", d.worker, d.result);
            me.results += 1;
        })?;
        ctx.on(|me, d: &CoopDeregistered, ctx| {
            println!("manager: child {:?} gone, reason {:?}", d.name, d.reason);
            me.gone += 1;
            if me.gone == me.jobs {
                // Every worker is gone; deregister ourselves: the idler goes first (Parent).
                println!("manager: all {} workers done, deregistering", me.jobs);
                ctx.deregister_coop(DeregReason::Normal);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.self_mbox();
        for id in 1..=self.jobs {
            let mut child = ctx.new_child_coop();
            child.set_name(format!("worker-{id}"));
            child.notify_registered(me.clone());
            child.notify_deregistered(me.clone());
            let worker = child.add(Worker {
                id,
                manager: me.clone(),
            });
            let worker = worker.mbox();
            ctx.register_coop(child).expect("the child registers");
            // Sent after registration: the worker is active (see docs/runtime-semantics.md).
            worker.send(Job(id * 10));
        }
        let mut idle = ctx.new_child_coop();
        idle.set_name("idler");
        idle.notify_deregistered(me);
        idle.add(Idler);
        ctx.register_coop(idle).expect("the idler registers");
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        // Runs after every child's CoopDeregistered, the idler's included.
        println!(
            "manager: finish ({} results, {} children gone)",
            self.results, self.gone
        );
    }
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, job: &Job, ctx| {
            let result = (1..=job.0).sum();
            me.manager.send(Done {
                worker: me.id,
                result,
            });
            ctx.deregister_coop(DeregReason::Normal);
        })?;
        Ok(())
    }
}

impl Agent for Idler {
    fn finish(&mut self, _: &mut Context<'_, Self>) {
        println!("idler: finish (its parent is going)");
    }
}

fn main() {
    cohort::launch(|env| {
        let mut coop = env.new_coop();
        coop.set_name("manager");
        coop.add(Manager {
            jobs: 3,
            results: 0,
            gone: 0,
        });
        env.register_coop(coop)?;
        Ok(())
    })
    .expect("the environment ran");
    println!("done: coop_children");
}
