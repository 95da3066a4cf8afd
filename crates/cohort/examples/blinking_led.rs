//! Hierarchical states: a blinking LED, with time limits and history (after SObjectizer's
//! `blinking_led` sample).
//!
//! `cargo run -p cohort --example blinking_led`
//!
//! States:
//!
//! ```text
//! off                   <- Toggle -> blinking (shallow history, 700 ms time limit -> off)
//!                                      ├─ lit  (150 ms time limit -> dark)
//!                                      └─ dark (150 ms time limit -> lit)
//! ```
//!
//! What it shows:
//! - `ctx.new_state` / `ctx.new_substate`, handlers per state with `ctx.in_state(&s).on(..)`;
//!   substates inherit their parent's handlers (`Toggle` is handled in `blinking` for both);
//! - `on_enter` / `on_exit` hooks;
//! - `time_limit`: the blink itself needs no timer code, and `blinking` switches itself off;
//! - `History::Shallow`: switched back on, the LED resumes the phase it was in.

use cohort::{Agent, Context, DefineError, Environment, History};
use std::time::{Duration, Instant};

/// Switches the LED on or off.
struct Toggle;

struct Led {
    born: Instant,
    /// Entries into `off`: the third one (after the time limit) ends the example.
    offs: u32,
}

impl Led {
    fn log(&self, what: &str) {
        println!("{:>5} ms  {what}", self.born.elapsed().as_millis());
    }
}

impl Agent for Led {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let off = ctx.new_state("off")?;
        let blinking = ctx.new_state("blinking")?;
        let lit = ctx.new_substate(&blinking, "lit")?; // the first substate is the initial one
        let dark = ctx.new_substate(&blinking, "dark")?;

        ctx.in_state(&off)
            .on_enter(|me, ctx| {
                me.offs += 1;
                me.log("switched off");
                if me.offs == 3 {
                    ctx.stop_environment();
                }
            })?
            .on(move |_, _: &Toggle, ctx| ctx.change_state(&blinking).expect("own state"))?;

        ctx.in_state(&blinking)
            .history(History::Shallow)?
            .time_limit(Duration::from_millis(700), &off)?
            .on_enter(|me, _| me.log("blinking: on"))?
            .on_exit(|me, _| me.log("blinking: off"))?
            .on(move |_, _: &Toggle, ctx| ctx.change_state(&off).expect("own state"))?;

        ctx.in_state(&lit)
            .time_limit(Duration::from_millis(150), &dark)?
            .on_enter(|me, _| me.log("  LED lit"))?;
        ctx.in_state(&dark)
            .time_limit(Duration::from_millis(150), &lit)?
            .on_enter(|me, _| me.log("  LED dark"))?;

        // Configure first, then switch: the switch takes the states as they are now.
        ctx.change_state(&off)?;
        Ok(())
    }
}

fn main() {
    let env = Environment::builder()
        .start()
        .expect("the environment starts");
    let mut coop = env.new_coop();
    let led = coop
        .add(Led {
            born: Instant::now(),
            offs: 0,
        })
        .mbox();
    env.register_coop(coop).expect("the LED registers");

    // Three toggles: on at 0 ms, off at 220 ms (in `dark`, its second phase), on again at
    // 300 ms: history resumes `dark`, not the initial `lit`. The 700 ms limit switches it
    // off at about 1000 ms.
    // Delayed sends are fire-and-forget: no handle to keep.
    for ms in [0, 220, 300] {
        env.send_delayed(&led, Duration::from_millis(ms), Toggle);
    }
    env.wait(); // the LED stops the environment
    println!("done: blinking_led");
}
