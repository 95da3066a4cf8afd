//! Publish/subscribe through a named mailbox, with a delivery filter.
//!
//! `cargo run -p cohort --example named_pubsub`
//!
//! What it shows:
//! - `Environment::named_mbox("quotes")`: the same name gives the same mailbox, so
//!   publishers and subscribers only need to agree on a name;
//! - one `send` reaches every agent subscribed to that message type (1:N, one allocation);
//! - `Context::set_delivery_filter` keeps unwanted messages out of one subscriber's queue
//!   (it runs on the sender's thread: a rejected message costs the subscriber nothing);
//! - a send nobody is subscribed to is a counted dead letter (`NoSubscriber`);
//! - stopping the environment lets the subscribers handle what was already published
//!   before their `finish`.

use cohort::{Agent, Context, DefineError, Environment};

/// A price update, published to the "quotes" mailbox.
struct Quote {
    symbol: &'static str,
    price: u32,
}

/// A message type nobody subscribes to.
struct Rumour;

/// Prints the quotes it gets; `filter` (if any) becomes its delivery filter.
struct Subscriber {
    name: &'static str,
    filter: Option<fn(&Quote) -> bool>,
    seen: u32,
}

impl Agent for Subscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let quotes = ctx.environment().named_mbox("quotes");
        ctx.subscribe(&quotes, |me, q: &Quote, _| {
            me.seen += 1;
            println!("{:>8} got {} at {}", me.name, q.symbol, q.price);
        })?;
        // A filter belongs to a subscription: set it after subscribing.
        if let Some(keep) = self.filter {
            ctx.set_delivery_filter(&quotes, keep)?;
        }
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        println!("{:>8} saw {} quote(s)", self.name, self.seen);
    }
}

fn main() {
    let env = Environment::builder()
        .start()
        .expect("the environment starts");
    let mut coop = env.new_coop();
    coop.add(Subscriber {
        name: "everyone",
        filter: None,
        seen: 0,
    });
    coop.add(Subscriber {
        name: "cheap",
        filter: Some(|q| q.price < 100),
        seen: 0,
    });
    coop.add(Subscriber {
        name: "acme",
        filter: Some(|q| q.symbol == "ACME"),
        seen: 0,
    });
    // Publish only once registration has returned: the subscribers are active then.
    env.register_coop(coop).expect("the subscribers register");

    let quotes = env.named_mbox("quotes");
    for (symbol, price) in [("ACME", 120), ("INIT", 42), ("ACME", 95), ("BOLT", 300)] {
        quotes.send(Quote { symbol, price });
    }
    quotes.send(Rumour); // nobody listens for it: a NoSubscriber dead letter
    println!("dead letters so far: {}", env.dead_letters());

    // Stops and waits: what was published is handled before the subscribers finish.
    env.stop_and_wait();
    println!("done: named_pubsub");
}
