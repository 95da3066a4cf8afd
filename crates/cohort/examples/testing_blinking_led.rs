//! Testing an agent with `cohort::testing`: the blinking LED of `blinking_led.rs`, checked
//! state by state with virtual time (the whole run takes microseconds, and is the same every
//! time).
//!
//! `cargo run -p cohort --example testing_blinking_led`
//!
//! What it shows:
//! - `TestEnv`: cooperations run on the test thread when the test steps them;
//! - `advance`: the virtual clock fires the states' time limits, in order, without sleeping;
//! - `expect_handled`, `expect_state` / `agent_state`: what the agent did and where it is;
//! - a `Probe` on a named mailbox, with `expect_message` waiting in virtual time.
//!
//! In a real project these checks live in `#[test]` functions; here they print what they
//! check.

use cohort::testing::TestEnv;
use cohort::{Agent, Context, DefineError, History, Mbox};
use std::time::Duration;

/// Switches the LED on or off.
struct Toggle;

/// Published on the `led` named mailbox each time the LED goes dark or lit.
#[derive(Clone, Debug, PartialEq)]
enum Light {
    Lit,
    Dark,
}

/// The agent under test: `off` <- Toggle -> `blinking` (shallow history, 700 ms time
/// limit back to `off`), made of `lit` and `dark` (150 ms each).
struct Led {
    out: Mbox,
}

impl Agent for Led {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let off = ctx.new_state("off")?;
        let blinking = ctx.new_state("blinking")?;
        let lit = ctx.new_substate(&blinking, "lit")?;
        let dark = ctx.new_substate(&blinking, "dark")?;

        ctx.in_state(&off)
            .on(move |_, _: &Toggle, ctx| ctx.change_state(&blinking).expect("own state"))?;
        ctx.in_state(&blinking)
            .history(History::Shallow)?
            .time_limit(Duration::from_millis(700), &off)?
            .on(move |_, _: &Toggle, ctx| ctx.change_state(&off).expect("own state"))?;
        ctx.in_state(&lit)
            .time_limit(Duration::from_millis(150), &dark)?
            .on_enter(|me, _| me.out.send(Light::Lit))?;
        ctx.in_state(&dark)
            .time_limit(Duration::from_millis(150), &lit)?
            .on_enter(|me, _| me.out.send(Light::Dark))?;
        ctx.change_state(&off)?;
        Ok(())
    }
}

/// Prints a check and panics if it fails.
fn check<E: std::fmt::Debug>(what: &str, result: Result<(), E>) {
    match result {
        Ok(()) => println!("ok    {what}"),
        Err(e) => panic!("FAILED {what}: {e:?}"),
    }
}

fn main() {
    let t = TestEnv::new();
    let led_out = t.environment().named_mbox("led");
    let lights = t.probe_on::<Light>(&led_out).expect("the probe registers");
    let mut coop = t.new_coop();
    let led = coop.add(Led { out: led_out }).mbox();
    t.register(coop).expect("the LED registers");
    t.run_until_quiet().expect("quiet after start");
    check("starts in `off`", t.expect_state(&led, "off"));

    t.send(&led, Toggle);
    t.run_until_quiet().expect("quiet");
    check("handled the Toggle", t.expect_handled::<Toggle>(&led));
    check("toggled on: `blinking`", t.expect_state(&led, "blinking"));
    check(
        "... in its first substate `lit`",
        t.expect_state(&led, "lit"),
    );
    let first = lights.try_take();
    check("published Lit", expect_eq(first, Some(Light::Lit)));

    let dark = lights.expect_message(Duration::from_secs(1));
    check("went dark ...", expect_eq(dark.ok(), Some(Light::Dark)));
    check(
        "... after exactly 150 ms of virtual time",
        expect_eq(t.now(), Duration::from_millis(150)),
    );
    check("now in `dark`", t.expect_state(&led, "dark"));

    t.advance(Duration::from_millis(70)).expect("quiet"); // 220 ms
    t.send(&led, Toggle);
    t.run_until_quiet().expect("quiet");
    check("toggled off at 220 ms: `off`", t.expect_state(&led, "off"));
    t.advance(Duration::from_millis(80)).expect("quiet"); // 300 ms
    check("no blinking while off", expect_eq(lights.len(), 0));

    t.send(&led, Toggle);
    t.run_until_quiet().expect("quiet");
    check(
        "history: back on in `dark`, not `lit`",
        t.expect_state(&led, "dark"),
    );
    let _ = lights.try_take(); // the Dark of re-entering `dark`

    // 700 ms later the `blinking` time limit switches the LED off by itself; meanwhile it
    // blinked every 150 ms.
    t.advance(Duration::from_millis(699)).expect("quiet");
    check("still blinking at 999 ms", t.expect_state(&led, "blinking"));
    check("blinked 4 times meanwhile", expect_eq(lights.len(), 4));
    t.advance(Duration::from_millis(1)).expect("quiet");
    check("off by itself at 1000 ms", t.expect_state(&led, "off"));
    println!(
        "state path now: {:?}",
        t.agent_state(&led).unwrap_or_default()
    );
    println!("done: testing_blinking_led");
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("got {got:?}, expected {want:?}"))
    }
}
