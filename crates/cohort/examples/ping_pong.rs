//! Ping-pong: two agents exchange messages through each other's direct mailbox.
//!
//! `cargo run -p cohort --example ping_pong` (add `--release` for real figures)
//!
//! What it shows:
//! - each agent has a direct mailbox ([`cohort::Mbox`]): a cheap clonable handle any
//!   thread can send to;
//! - two agents that need each other's mailbox are wired after `add`, before registration,
//!   with `Coop::agent_mut`;
//! - both agents share the default `one_thread` dispatcher (one worker thread), so every
//!   message goes from one handler to the next without a thread switch;
//! - `ctx.deregister_coop` ends the cooperation; `launch` stops once the last one is gone
//!   (autoshutdown).

use cohort::{Agent, Context, DefineError, DeregReason, Mbox};
use std::time::Instant;

/// The ball, going one way. Zero-sized: sending it allocates nothing.
struct Ping;
/// The ball, coming back.
struct Pong;

/// Serves `left` pings, then ends the game.
struct Pinger {
    ponger: Option<Mbox>,
    left: u32,
    started: Option<Instant>,
}

/// Answers every ping.
struct Ponger {
    pinger: Mbox,
    served: u32,
}

const ROUND_TRIPS: u32 = 100_000;

impl Agent for Pinger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Pong, ctx| {
            me.left -= 1;
            if me.left == 0 {
                let took = me.started.expect("set in start").elapsed();
                println!(
                    "{ROUND_TRIPS} round trips in {:.1} ms ({:.0} ns per round trip)",
                    took.as_secs_f64() * 1e3,
                    took.as_nanos() as f64 / f64::from(ROUND_TRIPS)
                );
                // The game is over: both agents finish, then the environment stops by itself.
                ctx.deregister_coop(DeregReason::Normal);
            } else {
                me.ponger
                    .as_ref()
                    .expect("wired before registration")
                    .send(Ping);
            }
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        println!("pinger: first serve");
        self.started = Some(Instant::now());
        self.ponger
            .as_ref()
            .expect("wired before registration")
            .send(Ping);
    }
}

impl Agent for Ponger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Ping, _| {
            me.served += 1;
            me.pinger.send(Pong);
        })?;
        Ok(())
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        println!("ponger: returned {} balls", self.served);
    }
}

fn main() {
    cohort::launch(|env| {
        let mut coop = env.new_coop();
        let pinger = coop.add(Pinger {
            ponger: None,
            left: ROUND_TRIPS,
            started: None,
        });
        // The ponger gets the pinger's mailbox at once; the pinger gets the ponger's below.
        let ponger = coop.add(Ponger {
            pinger: pinger.mbox(),
            served: 0,
        });
        coop.agent_mut(&pinger).ponger = Some(ponger.mbox());
        env.register_coop(coop)?;
        Ok(())
    })
    .expect("the environment ran");
    println!("done: ping_pong");
}
