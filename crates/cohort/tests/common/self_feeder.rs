//! An agent that keeps its queue's local half full with its own sends, and the check that a
//! message from a plain thread still reaches it (`dispatchers/max_demands.rs`,
//! `dispatchers/prio.rs`).

use cohort::{Agent, Binder, Context, DefineError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};

/// One of the self-sender's own demands.
#[derive(Debug, Clone, Copy)]
struct Loop;

/// Sent from the test thread while the self-sender's local half is full.
#[derive(Debug, Clone, Copy)]
struct Halt;

/// How many demands of its own the self-sender keeps queued.
pub const IN_FLIGHT: usize = 8;

/// The most demands the self-sender runs after the send of `Halt` returned before it gives
/// up: a dispatcher moves remote demands in within a few turns or batches; this is far above.
pub const LIMIT: usize = 100_000;

/// Keeps `IN_FLIGHT` demands of its own queued, so its local half is never empty, until it
/// receives `Halt` from outside, or gives up after `LIMIT` demands run once `halt_sent` is set
/// (the test thread sets it when its send of `Halt` has returned, so the count does not
/// depend on when that thread gets to run).
struct SelfFeeder {
    ran: usize,
    ran_after_halt_sent: usize,
    halt_sent: Arc<AtomicBool>,
    halted: bool,
    running: Sender<()>,
    done: Sender<(bool, usize)>,
}

impl Agent for SelfFeeder {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Loop, ctx: &mut Context<'_, Self>| {
            if me.halted {
                return;
            }
            me.ran += 1;
            if me.ran == 1000 {
                let _ = me.running.send(());
            }
            super::yield_under_valgrind();
            if me.halt_sent.load(Ordering::Acquire) {
                me.ran_after_halt_sent += 1;
                if me.ran_after_halt_sent == LIMIT {
                    me.halted = true;
                    let _ = me.done.send((false, me.ran_after_halt_sent));
                    return;
                }
            }
            ctx.send_self(Loop);
        })?;
        ctx.on(|me: &mut Self, _: &Halt, _: &mut Context<'_, Self>| {
            if !me.halted {
                me.halted = true;
                let _ = me.done.send((true, me.ran_after_halt_sent));
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for _ in 0..IN_FLIGHT {
            ctx.send_self(Loop);
        }
    }
}

/// Registers a self-sender with `binder`, sends it `Halt` from this thread once it runs, and
/// returns whether `Halt` was handled and how many demands the agent ran after the send
/// returned (`LIMIT` when it gave up).
pub fn halt_from_outside(env: &cohort::Environment, binder: Binder) -> (bool, usize) {
    let (running_tx, running) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let halt_sent = Arc::new(AtomicBool::new(false));
    let mut coop = env.new_coop();
    let feeder = coop
        .add_with_binder(
            SelfFeeder {
                ran: 0,
                ran_after_halt_sent: 0,
                halt_sent: halt_sent.clone(),
                halted: false,
                running: running_tx,
                done: done_tx,
            },
            binder,
        )
        .mbox();
    env.register_coop(coop).unwrap();
    super::recv(&running, "the self-sender to run");
    feeder.send(Halt);
    halt_sent.store(true, Ordering::Release);
    super::recv(&done, "the self-sender to stop")
}
