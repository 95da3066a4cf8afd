//! State switch (cohort's target: a state switch plus one handled message within 2x of a
//! handled message without switch): one agent on one thread sends itself a signal `count` times.
//!
//! - `plain`: an agent without states; each signal is handled and sends the next.
//! - `switch`: two top-level states `a` and `b`, each with its own handler; each signal is
//!   handled in the current state, which switches to the other state and sends the next.
//! - `nested`: the same between two leaves at depth 2 (`a/a1/a11` and `b/b1/b11`) whose six
//!   states all have `on_enter` and `on_exit` hooks: each switch leaves three states and
//!   enters three, running six hooks, and the handlers are inherited from the top states.
//!
//! Each run times the three variants back to back (so machine noise hits them alike);
//! `switch_ratio` and `nested_ratio` are the per-run ratios of time per message.

use cohort::{Agent, Context, DefineError, State};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which agent a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Plain,
    Switch,
    Nested,
}

/// What one run measured.
pub struct Outcome {
    pub plain: Duration,
    pub switch: Duration,
    pub nested: Duration,
    pub count: u64,
}

struct Tick;

struct Ticker {
    variant: Variant,
    left: u64,
    handled: u64,
    hooks: u64,
    started: Option<Instant>,
    out: Arc<Mutex<Option<(Duration, u64, u64)>>>,
}

impl Ticker {
    fn tick(&mut self, ctx: &mut Context<'_, Self>, next: Option<&State>) {
        self.handled += 1;
        if let Some(st) = next
            && ctx.change_state(st).is_err()
        {
            return ctx.stop_environment(); // counted as a failure: `handled` falls short
        }
        self.left -= 1;
        if self.left > 0 {
            ctx.send_self(Tick);
        } else {
            let elapsed = self.started.map(|s| s.elapsed()).unwrap_or_default();
            *self.out.lock().unwrap() = Some((elapsed, self.handled, self.hooks));
            ctx.stop_environment();
        }
    }
}

fn hooks(ctx: &mut Context<'_, Ticker>, st: &State) -> Result<(), DefineError> {
    ctx.in_state(st)
        .on_enter(|me: &mut Ticker, _: &mut Context<'_, Ticker>| me.hooks += 1)?
        .on_exit(|me: &mut Ticker, _: &mut Context<'_, Ticker>| me.hooks += 1)?;
    Ok(())
}

impl Agent for Ticker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        match self.variant {
            Variant::Plain => {
                ctx.on(|me: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| me.tick(ctx, None))?;
            }
            Variant::Switch | Variant::Nested => {
                let a = ctx.new_state("a")?;
                let b = ctx.new_state("b")?;
                let (to_a, to_b) = if self.variant == Variant::Nested {
                    let a1 = ctx.new_substate(&a, "a1")?;
                    let a11 = ctx.new_substate(&a1, "a11")?;
                    let b1 = ctx.new_substate(&b, "b1")?;
                    let b11 = ctx.new_substate(&b1, "b11")?;
                    for st in [a, a1, a11, b, b1, b11] {
                        hooks(ctx, &st)?;
                    }
                    (a11, b11)
                } else {
                    (a, b)
                };
                ctx.in_state(&a).on(
                    move |me: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| {
                        me.tick(ctx, Some(&to_b))
                    },
                )?;
                ctx.in_state(&b).on(
                    move |me: &mut Self, _: &Tick, ctx: &mut Context<'_, Self>| {
                        me.tick(ctx, Some(&to_a))
                    },
                )?;
                ctx.change_state(&to_a)?;
            }
        }
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.hooks = 0;
        self.started = Some(Instant::now());
        ctx.send_self(Tick);
    }
}

fn run_variant(variant: Variant, count: u64) -> Result<Duration, String> {
    let out = Arc::new(Mutex::new(None));
    let out2 = out.clone();
    cohort::launch(move |env| {
        let mut coop = env.new_coop();
        coop.add(Ticker {
            variant,
            left: count,
            handled: 0,
            hooks: 0,
            started: None,
            out: out2,
        });
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let (elapsed, handled, hooks) = out
        .lock()
        .unwrap()
        .take()
        .ok_or(format!("{variant:?}: the agent never finished"))?;
    if handled != count {
        return Err(format!("{variant:?}: handled {handled} of {count} signals"));
    }
    // Six hooks per switch (three exits, three entries); the last switch's hooks run after
    // the time is taken.
    let expected_hooks = if variant == Variant::Nested {
        6 * (count - 1)
    } else {
        0
    };
    if hooks != expected_hooks {
        return Err(format!(
            "{variant:?}: {hooks} hooks ran, expected {expected_hooks}"
        ));
    }
    Ok(elapsed)
}

/// One run: the three variants back to back, `count` signals each.
pub fn run_once(count: u64) -> Result<Outcome, String> {
    if count == 0 {
        return Err("--count must be at least 1".into());
    }
    Ok(Outcome {
        plain: run_variant(Variant::Plain, count)?,
        switch: run_variant(Variant::Switch, count)?,
        nested: run_variant(Variant::Nested, count)?,
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_handles_every_signal() {
        let o = crate::watchdog::within(20, || run_once(1_000)).unwrap();
        assert_eq!(o.count, 1_000);
    }

    #[test]
    fn zero_count_is_refused() {
        assert!(run_once(0).is_err());
    }
}
