//! Helpers shared by the integration tests: a watchdog for every test that starts threads,
//! probes that forward messages from agents to the test thread, an echo agent, counters, and
//! a dead-letter recorder.
//!
//! Each test binary uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod dispatchers;
pub mod echo;
pub mod order;
pub mod self_feeder;

use cohort::{
    Agent, Context, DeadLetter, DefineError, DeliveryFailure, EnvironmentBuilder, Mbox, WrappedEnv,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The time limit of one test body (scaled up under valgrind, see [`scale`]).
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// True when the test binary runs under valgrind (CI's memcheck step): everything is 20 to
/// 50 times slower there, so time limits grow and message counts shrink.
pub fn under_valgrind() -> bool {
    std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("vgpreload"))
}

/// Gives up the CPU under valgrind, and does nothing elsewhere. Valgrind runs one thread at a
/// time and kept a test thread waiting for over a minute behind an agent busy sending to
/// itself; such an agent calls this once per message so the test thread gets its turn.
pub fn yield_under_valgrind() {
    static UNDER_VALGRIND: OnceLock<bool> = OnceLock::new();
    if *UNDER_VALGRIND.get_or_init(under_valgrind) {
        std::thread::yield_now();
    }
}

/// True (after saying so on stderr) when a test that depends on how threads are scheduled
/// should skip: under valgrind, which runs one thread at a time.
pub fn skip_scheduling_dependent() -> bool {
    let skip = under_valgrind();
    if skip {
        eprintln!("skipped under valgrind: scheduling-dependent");
    }
    skip
}

/// Multiplier for time limits: 1, or 15 under valgrind (CI gives each binary 600 s there).
pub fn scale() -> u32 {
    if under_valgrind() { 15 } else { 1 }
}

/// A message count: `n` normally, `n / 10` (at least 1) under valgrind.
pub fn count(n: usize) -> usize {
    if under_valgrind() { (n / 10).max(1) } else { n }
}

/// The name libtest gives the test `name` of module `module` (pass `module_path!()`): the
/// module path without the crate, for a test that runs one test of its own binary in a child
/// process (`--exact`).
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_owned(),
    }
}

/// Runs `body` on its own thread and waits at most `timeout` (times [`scale`]) for it: the
/// test kit's [`cohort::testing::watchdog`], with the longer limit valgrind needs.
pub fn watchdog<T: Send + 'static>(
    timeout: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    cohort::testing::watchdog(timeout * scale(), body)
}

/// Receives one value, failing the test with `what` if nothing arrives within [`TIMEOUT`].
#[track_caller]
pub fn recv<T>(rx: &Receiver<T>, what: &str) -> T {
    match rx.recv_timeout(TIMEOUT * scale()) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}"),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("waiting for {what}: every sender is gone")
        }
    }
}

/// Receives `n` values in arrival order.
#[track_caller]
pub fn recv_n<T>(rx: &Receiver<T>, n: usize, what: &str) -> Vec<T> {
    (0..n).map(|_| recv(rx, what)).collect()
}

/// A shared counter.
#[derive(Clone, Default, Debug)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// An agent that forwards every `M` it receives (by clone) to a channel.
pub struct Forward<M> {
    tx: Sender<M>,
}

impl<M: Clone + Send + 'static> Agent for Forward<M> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &M, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(m.clone());
        })?;
        Ok(())
    }
}

/// A probe: a separate environment with one agent that forwards every `M` to the test.
///
/// It lives in its own environment so that stopping the environment under test (which
/// deregisters every cooperation in it) cannot turn the probe's notifications into dead
/// letters.
pub struct Probe<M> {
    pub mbox: Mbox,
    pub rx: Receiver<M>,
    env: WrappedEnv,
}

impl<M: Clone + Send + 'static> Probe<M> {
    pub fn new() -> Self {
        let env = cohort::Environment::builder()
            .start()
            .expect("start the probe environment");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_name("probe");
        let mbox = coop.add(Forward { tx }).mbox();
        env.register_coop(coop).expect("register the probe");
        Self { mbox, rx, env }
    }

    #[track_caller]
    pub fn recv(&self, what: &str) -> M {
        recv(&self.rx, what)
    }

    #[track_caller]
    pub fn recv_n(&self, n: usize, what: &str) -> Vec<M> {
        recv_n(&self.rx, n, what)
    }

    /// True if nothing more has arrived so far (looks only at what the probe already
    /// forwarded; call it after the environment under test has stopped).
    pub fn nothing_more(&self) -> bool {
        self.rx.try_recv().is_err()
    }

    /// Stops the probe environment and joins its threads.
    pub fn shutdown(self) {
        self.env.stop_and_wait();
    }
}

impl<M: Clone + Send + 'static> Default for Probe<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// Every dead letter an environment reported to its hook, in order.
#[derive(Clone, Default)]
pub struct DeadLetters(Arc<Mutex<Vec<(&'static str, DeliveryFailure)>>>);

impl DeadLetters {
    /// A builder whose dead-letter hook records into the returned log.
    pub fn builder() -> (EnvironmentBuilder, Self) {
        let log = Self::default();
        let sink = log.clone();
        let builder = cohort::Environment::builder().dead_letter_hook(move |d: &DeadLetter| {
            sink.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((d.message_type, d.reason))
        });
        (builder, log)
    }

    pub fn all(&self) -> Vec<(&'static str, DeliveryFailure)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The recorded dead letters of message type `M` (as named by `type_name`).
    pub fn of<M: ?Sized>(&self) -> Vec<DeliveryFailure> {
        let name = std::any::type_name::<M>();
        self.all()
            .into_iter()
            .filter(|(t, _)| *t == name)
            .map(|(_, r)| r)
            .collect()
    }
}

/// Blocks an agent inside a handler until the test opens the gate: the way to keep a
/// dispatcher busy (so that messages pile up in its queue) without sleeping.
pub struct Gate {
    entered: Sender<()>,
    open: Receiver<()>,
}

/// The test's side of a [`Gate`].
pub struct GateControl {
    entered: Receiver<()>,
    open: Sender<()>,
}

pub fn gate() -> (Gate, GateControl) {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (open_tx, open_rx) = mpsc::channel();
    (
        Gate {
            entered: entered_tx,
            open: open_rx,
        },
        GateControl {
            entered: entered_rx,
            open: open_tx,
        },
    )
}

impl Gate {
    /// Called by the agent: tells the test it is blocked, then waits for the gate to open.
    pub fn block(&self) {
        let _ = self.entered.send(());
        self.open
            .recv_timeout(TIMEOUT * scale())
            .expect("the test never opened the gate");
    }
}

impl GateControl {
    /// Waits until the agent is blocked in the gate.
    #[track_caller]
    pub fn wait_entered(&self) {
        recv(&self.entered, "the agent to block in the gate");
    }

    pub fn open(&self) {
        self.open.send(()).expect("the gated agent is gone");
    }
}

/// Message that makes a [`Blocker`] block in its gate.
#[derive(Debug, Clone, Copy)]
pub struct Block;

/// An agent that blocks its worker thread in a gate when it receives [`Block`].
pub struct Blocker {
    pub gate: Gate,
}

impl Agent for Blocker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Block, _: &mut Context<'_, Self>| me.gate.block())?;
        Ok(())
    }
}

/// An agent with no handler at all (a valid mailbox that accepts nothing).
pub struct Idle;
impl Agent for Idle {}

/// Waits (yielding) until `cond` holds: for state that becomes true right after an event the
/// test already observed (e.g. the cooperation count drops just after an agent's value is
/// dropped). Runs inside a watchdog, which bounds it.
pub fn wait_until(cond: impl Fn() -> bool) {
    while !cond() {
        std::thread::yield_now();
    }
}

/// The names of this process's live threads that start with `prefix`, read from
/// `/proc/self/task/*/comm` (Linux; the kernel keeps the first 15 bytes of a name, so keep
/// the prefix shorter than that).
pub fn threads_named(prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return names;
    };
    for task in tasks.flatten() {
        // A task that exits between the listing and the read is simply skipped.
        if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
            let comm = comm.trim_end();
            if comm.starts_with(prefix) {
                names.push(comm.to_owned());
            }
        }
    }
    names.sort();
    names
}

/// Polls (yielding) until `cond` holds or `limit` has passed; returns whether it held. For
/// state the kernel updates just after an event the test observed (a joined thread leaves
/// `/proc/self/task` right after `join` returns).
pub fn poll_until(limit: Duration, cond: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit * scale();
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::yield_now();
    }
}

/// A gate the test opens once: every handler waiting on it goes on.
#[derive(Default)]
pub struct Latch {
    open: Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Latch {
    /// Waits until the gate is open (or the scaled test time limit has passed: a test that
    /// never opens it fails on its watchdog, and the worker goes on eventually).
    pub fn wait(&self) {
        let open = self.open.lock().unwrap();
        let timeout = TIMEOUT * scale();
        let _ = self.cv.wait_timeout_while(open, timeout, |open| !*open);
    }

    /// Opens the gate.
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}
