//! Tracing a message's path through the runtime.
//!
//! `cargo run -p cohort --example message_tracing`
//!
//! What it shows: with `EnvironmentBuilder::message_tracing` every step of a message's way
//! is reported: `sent`, `queued` (per receiving agent), `handled`, `filtered out` by a
//! delivery filter, `redirected` or `transformed` by a message limit, `dropped` (a dead
//! letter, with its reason). Here the steps go to a function that collects them;
//! `MessageTracing::to_stderr()` prints them instead, and `to_tracing()` emits `tracing`
//! events (target `cohort::trace`). Filters (`message_type`, `mbox`, `agent`) narrow what
//! is reported. Tracing is off by default and costs one load per step when off.

use cohort::{Agent, Context, DefineError, Environment, Mbox, MboxId, MessageTracing};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// A customer's order: the message we follow.
struct Order {
    id: u32,
    amount: u32,
}

/// Takes orders on its direct mailbox and publishes them to the "orders" named mailbox.
struct Frontdesk {
    orders: Mbox,
}

/// Subscribed to "orders"; `big_only` adds a delivery filter.
struct Department {
    name: &'static str,
    big_only: bool,
    /// Told when an order was handled, so that the main thread stops only after that.
    handled: Option<mpsc::Sender<u32>>,
}

impl Agent for Frontdesk {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, o: &Order, _| {
            me.orders.send(Order {
                id: o.id,
                amount: o.amount,
            })
        })?;
        Ok(())
    }

    fn name(&self) -> Cow<'static, str> {
        "frontdesk".into()
    }
}

impl Agent for Department {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let orders = ctx.environment().named_mbox("orders");
        ctx.subscribe(&orders, |me, o: &Order, _| {
            if let Some(tx) = &me.handled {
                let _ = tx.send(o.id);
            }
        })?;
        if self.big_only {
            ctx.set_delivery_filter(&orders, |o: &Order| o.amount >= 100)?;
        }
        Ok(())
    }

    // The name shown in `handled` steps.
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
}

fn main() {
    // Trace events name mailboxes by id; this table gives them names for printing.
    let names: Arc<Mutex<HashMap<MboxId, &'static str>>> = Arc::default();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let (log, known) = (steps.clone(), names.clone());
    let env = Environment::builder()
        .message_tracing(
            // Runs on the thread where the step happens (sender or worker): keep it quick.
            MessageTracing::to_fn(move |e| {
                let known = known.lock().expect("not poisoned");
                let name = |id: Option<MboxId>| id.and_then(|i| known.get(&i).copied());
                log.lock().expect("not poisoned").push(
                    format!(
                        "{:<24} mbox={:<10} agent={:<10} {}",
                        format!("{:?}", e.step),
                        name(e.mbox).unwrap_or("-"),
                        name(e.agent).unwrap_or("-"),
                        // At `Handled`: the agent's `Agent::name`.
                        e.agent_name
                            .map(|n| format!("name={n}"))
                            .unwrap_or_default(),
                    )
                    .trim_end()
                    .to_string(),
                );
            })
            .message_type::<Order>(),
        )
        .start()
        .expect("the environment starts");

    let orders = env.named_mbox("orders");
    let (handled, billed) = mpsc::channel();
    let mut coop = env.new_coop();
    let desk = coop.add(Frontdesk {
        orders: orders.clone(),
    });
    let billing = coop.add(Department {
        name: "billing",
        big_only: false,
        handled: Some(handled),
    });
    let shipping = coop.add(Department {
        name: "shipping",
        big_only: true,
        handled: None,
    });
    names.lock().expect("not poisoned").extend([
        (desk.mbox().id(), "frontdesk"),
        (orders.id(), "orders"),
        (billing.mbox().id(), "billing"),
        (shipping.mbox().id(), "shipping"),
    ]);
    let desk = desk.mbox();
    env.register_coop(coop).expect("the agents register");

    // A small order: the frontdesk publishes it, billing gets it, shipping's filter keeps
    // it out.
    desk.send(Order { id: 1, amount: 20 });
    billed
        .recv_timeout(Duration::from_secs(10))
        .expect("billing handles the order");
    env.stop_and_wait();
    // The frontdesk is gone now: this one is a dead letter.
    desk.send(Order { id: 2, amount: 500 });

    for (i, step) in steps.lock().expect("not poisoned").iter().enumerate() {
        println!("{:>2}. {step}", i + 1);
    }
    println!("done: message_tracing");
}
