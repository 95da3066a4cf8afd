//! Hello world: one agent, one message, one environment.
//!
//! `cargo run -p cohort --example hello_world`
//!
//! What it shows:
//! - an agent is a plain struct that implements [`cohort::Agent`];
//! - `define` subscribes handlers (here with the short closure form: only the message type is
//!   written, the agent and the context are inferred);
//! - `start` is the agent's first event, on its worker thread;
//! - `launch` runs an environment until it stops, and returns once every thread is joined.

use cohort::{Agent, Context, DefineError};

/// The message: any `Send + Sync + 'static` type is one, no trait to implement.
struct Greeting(&'static str);

/// The agent: greets, then stops the environment.
struct Greeter {
    greeted: u32,
}

impl Agent for Greeter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        // Runs on the thread that registers the cooperation, before the agent starts.
        ctx.on(|me, g: &Greeting, ctx| {
            me.greeted += 1;
            println!("hello, {}! (greeting #{})", g.0, me.greeted);
            // Deregisters every cooperation; `launch` then returns.
            ctx.stop_environment();
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        println!(
            "the greeter starts on thread {:?}",
            std::thread::current().name()
        );
        ctx.send_self(Greeting("world"));
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        println!("the greeter finishes after {} greeting(s)", self.greeted);
    }
}

fn main() {
    cohort::launch(|env| {
        // A cooperation is a group of agents registered and deregistered together.
        let mut coop = env.new_coop();
        coop.add(Greeter { greeted: 0 });
        env.register_coop(coop)?;
        Ok(())
    })
    .expect("the environment ran");
    println!("done: hello_world");
}
