//! Turn ends (`cohort::dispatcher::turn_end`): a hook deferred by handlers runs on their
//! worker after them, once per turn however many handlers deferred it; a thread that ends no
//! turns refuses the deferral; a panicking hook leaves the worker running; a handler that
//! blocks on a message chain runs its turn's hooks first.
//!
//! Set-up: an agent blocked in a gate while `BACKLOG` messages are queued for it, so that its
//! worker then runs them in as few turns as its dispatcher allows.

use crate::common;

use cohort::dispatcher::turn_end::{TurnEnd, defer};
use cohort::{Agent, Context, DefineError, Environment};
use common::dispatchers::{Kind, on_every_kind};
use common::{Gate, TIMEOUT, gate, recv, watchdog};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// Messages queued behind the gated one.
const BACKLOG: usize = 32;

/// Counts its runs; reports each with the number of handlers that had run by then.
struct Hook {
    handled: Arc<AtomicUsize>,
    runs: AtomicUsize,
    threads: Mutex<Vec<ThreadId>>,
    report: Mutex<Sender<usize>>,
    panics: AtomicBool,
}

impl Hook {
    /// A hook that has not run, reading `handled` at each run; it panics if `panics`.
    fn new(handled: Arc<AtomicUsize>, report: Sender<usize>, panics: bool) -> Arc<Self> {
        Arc::new(Hook {
            handled,
            runs: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
            report: Mutex::new(report),
            panics: AtomicBool::new(panics),
        })
    }
}

impl TurnEnd for Hook {
    fn turn_ended(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        let _ = self
            .report
            .lock()
            .unwrap()
            .send(self.handled.load(Ordering::SeqCst));
        if self.panics.load(Ordering::SeqCst) {
            panic!("a hook that panics (expected by the test)");
        }
    }
}

/// Blocks in its gate on the first message, defers the hook in every handler.
struct Deferring {
    gate: Option<Gate>,
    hook: Arc<Hook>,
    handled: Arc<AtomicUsize>,
    threads: Arc<Mutex<Vec<ThreadId>>>,
    deferred: Sender<bool>,
}

/// One message for [`Deferring`].
#[derive(Debug, Clone, Copy)]
struct Work;

impl Agent for Deferring {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Work, _: &mut Context<'_, Self>| {
            if let Some(g) = me.gate.take() {
                g.block();
            }
            me.threads.lock().unwrap().push(std::thread::current().id());
            let _ = me.deferred.send(defer(&me.hook));
            me.handled.fetch_add(1, Ordering::SeqCst);
        })?;
        Ok(())
    }
}

/// What one run of the set-up saw.
struct Seen {
    hook: Arc<Hook>,
    handler_threads: Vec<ThreadId>,
}

/// Runs the set-up on `kind`: the gated message, then the backlog; returns once a hook run
/// saw every handler done.
fn run_backlog(kind: Kind, panics: bool) -> Seen {
    let env = Environment::builder().start().unwrap();
    let handled = Arc::new(AtomicUsize::new(0));
    let (report_tx, report_rx) = mpsc::channel();
    let hook = Hook::new(handled.clone(), report_tx, panics);
    let (g, control) = gate();
    let (deferred_tx, deferred_rx) = mpsc::channel();
    let threads = Arc::new(Mutex::new(Vec::new()));
    let mut coop = env.new_coop();
    coop.set_binder(kind.binder(&env, "turn-end"));
    let mbox = coop
        .add(Deferring {
            gate: Some(g),
            hook: hook.clone(),
            handled: handled.clone(),
            threads: threads.clone(),
            deferred: deferred_tx,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    mbox.send(Work);
    control.wait_entered();
    for _ in 0..BACKLOG {
        mbox.send(Work);
    }
    control.open();
    for _ in 0..=BACKLOG {
        assert!(
            recv(&deferred_rx, "a handler's deferral"),
            "a worker of {kind:?} refused a deferral: it ends no turns"
        );
    }
    // A hook run follows the last handler.
    while recv(&report_rx, "a hook run") < BACKLOG + 1 {}
    env.stop_and_wait();
    let handler_threads = threads.lock().unwrap().clone();
    Seen {
        hook,
        handler_threads,
    }
}

#[test]
fn a_deferred_hook_runs_after_its_handlers_once_per_turn_on_every_dispatcher() {
    on_every_kind(|kind| {
        let seen = run_backlog(kind, false);
        let runs = seen.hook.runs.load(Ordering::SeqCst);
        // Deferred by 33 handlers, run far fewer times: once per turn, and a turn runs a
        // backlog's demands together (a pool's queue turn 4 of them, so at most one run for
        // the gated handler and one per 4 of the backlog).
        assert!(
            (1..=1 + BACKLOG / 4).contains(&runs),
            "{kind:?}: {runs} hook runs for {} handlers",
            BACKLOG + 1
        );
        if kind == Kind::OneThread {
            // The whole backlog is under `LOCAL_BATCH`: it runs in the gated handler's turn
            // (a handler run straight from its slot is followed by what was written while it
            // ran) or, when the gated demand came in a batch of its own, in the next turn.
            assert!(
                runs <= 2,
                "one_thread: {runs} hook runs, more than the gated turn and one after it"
            );
        }
        for t in seen.hook.threads.lock().unwrap().iter() {
            assert!(
                seen.handler_threads.contains(t),
                "{kind:?}: a hook ran on a thread that ran none of the handlers"
            );
        }
    });
}

#[test]
fn a_panicking_hook_leaves_the_worker_running() {
    on_every_kind(|kind| {
        let seen = run_backlog(kind, true);
        assert!(seen.hook.runs.load(Ordering::SeqCst) >= 1, "{kind:?}");
    });
}

#[test]
fn a_thread_that_ends_no_turns_refuses_a_deferral() {
    watchdog(TIMEOUT, || {
        let (report_tx, _report_rx) = mpsc::channel();
        let hook = Hook::new(Arc::new(AtomicUsize::new(0)), report_tx, false);
        assert!(!defer(&hook), "the test's thread ends no turns");
        let h = hook.clone();
        let from_plain_thread = std::thread::spawn(move || defer(&h)).join().unwrap();
        assert!(!from_plain_thread, "a plain thread ends no turns");
        assert_eq!(hook.runs.load(Ordering::SeqCst), 0);
    });
}

/// A custom mailbox that hands what it gets to `chain` only when the sending worker's turn
/// ends (at once on a thread that ends no turns).
struct Relay {
    hook: Arc<RelayHook>,
}

/// What [`Relay`] holds until the turn ends.
struct RelayHook {
    held: Mutex<Vec<u64>>,
    chain: cohort::Mbox,
}

impl TurnEnd for RelayHook {
    fn turn_ended(&self) {
        for n in self.held.lock().unwrap().drain(..) {
            self.chain.send(n);
        }
    }
}

impl cohort::CustomMbox for Relay {
    fn deliver(&self, msg: cohort::AnyMessage) {
        if let Some(n) = msg.downcast_ref::<u64>() {
            self.hook.held.lock().unwrap().push(*n);
            if !defer(&self.hook) {
                self.hook.turn_ended();
            }
        }
    }
}

/// Sends to the relay, then blocks on the chain the relay feeds.
struct ChainWaiter {
    relay: cohort::Mbox,
    chain: cohort::mchain::Mchain,
    got: Sender<Vec<u64>>,
}

impl Agent for ChainWaiter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Work, _: &mut Context<'_, Self>| {
            me.relay.send(7u64);
            let mut got = Vec::new();
            cohort::mchain::receive(
                cohort::mchain::from(&me.chain)
                    .handle_n(1)
                    .empty_timeout(TIMEOUT / 2),
                &mut cohort::mchain::Handlers::new().on(|n: &u64| got.push(*n)),
            );
            let _ = me.got.send(got);
        })?;
        Ok(())
    }
}

#[test]
fn a_handler_blocked_on_a_chain_runs_its_turns_hooks_first() {
    // The relay's hook feeds the chain the handler waits on: without the wait running the
    // turn's hooks first, the handler would wait out its timeout with nothing.
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let chain = env
            .create_mchain(cohort::mchain::MchainParams::unbounded())
            .unwrap();
        let relay = cohort::Mbox::custom(Relay {
            hook: Arc::new(RelayHook {
                held: Mutex::new(Vec::new()),
                chain: chain.as_mbox(),
            }),
        });
        let (got_tx, got_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let waiter = coop
            .add(ChainWaiter {
                relay,
                chain: chain.clone(),
                got: got_tx,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        waiter.send(Work);
        assert_eq!(recv(&got_rx, "what the handler received"), vec![7]);
        env.stop_and_wait();
    });
}
