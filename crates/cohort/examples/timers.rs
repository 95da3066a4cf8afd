//! Delayed and periodic messages.
//!
//! `cargo run -p cohort --example timers`
//!
//! What it shows:
//! - `send_delayed`: one message, later; `send_periodic`: a message every period;
//! - a delayed send is fire-and-forget: the `TimerId` it returns may be dropped (the
//!   timer still fires) or kept to `cancel()` it; `.cancel_on_drop()` makes it a guard;
//! - a periodic timer lives as long as the [`TimerHandle`] `send_periodic` returns:
//!   **dropping the handle cancels the timer**. Keep it (here in the agent) for as long as
//!   the timer should run, call `cancel()` to stop it early, or `detach()` to let it run
//!   unowned;
//! - `Environment::timer_count` (also in the run-time statistics) counts active timers.

use cohort::{Agent, Context, DefineError, TimerHandle};
use std::time::{Duration, Instant};

/// Sent every 50 ms.
#[derive(Clone)]
struct Tick;
/// Sent once, 120 ms after start.
struct Reminder(&'static str);
/// Scheduled, then cancelled: never arrives.
struct Never;
/// Ends the example.
struct Stop;

struct Clock {
    born: Instant,
    ticks: u32,
    /// The periodic timer lives as long as this handle: dropping it would cancel the ticks.
    ticking: Option<TimerHandle>,
}

impl Clock {
    fn log(&self, what: &str) {
        println!("{:>4} ms  {what}", self.born.elapsed().as_millis());
    }
}

impl Agent for Clock {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, _: &Tick, ctx| {
            me.ticks += 1;
            me.log(&format!("tick {}", me.ticks));
            if me.ticks == 5 {
                // Stop ticking: cancel (dropping the handle would do the same).
                if let Some(mut t) = me.ticking.take() {
                    t.cancel();
                }
                me.log(&format!(
                    "periodic timer cancelled; {} timer(s) still active",
                    ctx.environment().timer_count()
                ));
            }
        })?;
        ctx.on(|me, r: &Reminder, _| me.log(&format!("reminder: {}", r.0)))?;
        ctx.on(|_, _: &Never, _| unreachable!("this timer was cancelled"))?;
        ctx.on(|me, _: &Stop, ctx| {
            me.log(&format!("stop after {} ticks", me.ticks));
            ctx.stop_environment();
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.self_mbox();
        // First tick after 50 ms, then every 50 ms.
        let period = Duration::from_millis(50);
        self.ticking = Some(ctx.send_periodic(&me, period, period, Tick));
        // One-shot timers run on their own: nothing to keep.
        ctx.send_delayed(&me, Duration::from_millis(120), Reminder("tea"));
        ctx.send_delayed(&me, Duration::from_millis(400), Stop);
        // Cancelled before it fires: `Never` is never sent.
        let never = ctx.send_delayed(&me, Duration::from_millis(100), Never);
        never.cancel();
        self.log(&format!(
            "scheduled; {} timer(s) active",
            ctx.environment().timer_count()
        ));
    }
}

fn main() {
    cohort::launch(|env| {
        let mut coop = env.new_coop();
        coop.add(Clock {
            born: Instant::now(),
            ticks: 0,
            ticking: None,
        });
        env.register_coop(coop)?;
        Ok(())
    })
    .expect("the environment ran");
    println!("done: timers");
}
