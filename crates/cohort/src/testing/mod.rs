//! A test kit for your agents: run them deterministically on the test thread, with virtual
//! time, and check what they did.
//!
//! A [`TestEnv`] is an environment whose default dispatcher has no thread (no worker thread
//! is started at all): nothing runs until the test steps it ([`TestEnv::step`],
//! [`TestEnv::run_until_quiet`]). Its timers (delayed and periodic messages, state time
//! limits) follow a virtual clock that only [`TestEnv::advance`] moves. So a scenario is a plain sequence: send, run until quiet,
//! check; advance the clock, check again. Same input, same run, every time.
//!
//! The checks:
//! - [`TestEnv::expect_handled`]: an agent handled a message of some type;
//! - [`TestEnv::agent_state`] / [`TestEnv::expect_state`]: the state it is in now;
//! - a [`Probe`] ([`TestEnv::probe`], [`TestEnv::probe_on`]) collects messages sent to it
//!   or published on a mailbox, and [`Probe::expect_message`] waits for one in virtual time.
//!
//! ```
//! use cohort::testing::TestEnv;
//! use cohort::{Agent, Context, DefineError, Mbox};
//! use std::time::Duration;
//!
//! struct Ping;
//! #[derive(Clone, Debug, PartialEq)]
//! struct Pong(u32);
//!
//! /// Answers a `Ping` with a `Pong`, one second later.
//! struct Slow { reply_to: Mbox, n: u32 }
//! impl Agent for Slow {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         ctx.on(|me: &mut Self, _: &Ping, ctx| {
//!             me.n += 1;
//!             ctx.send_delayed(&me.reply_to, Duration::from_secs(1), Pong(me.n));
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! let t = TestEnv::new();
//! let replies = t.probe::<Pong>().unwrap();
//! let mut coop = t.new_coop();
//! let slow = coop.add(Slow { reply_to: replies.mbox(), n: 0 });
//! t.register(coop).unwrap();
//!
//! t.send(&slow.mbox(), Ping);
//! t.run_until_quiet().unwrap();
//! t.expect_handled::<Ping>(&slow.mbox()).unwrap();
//! // Not within half a second of virtual time...
//! assert!(replies.expect_message(Duration::from_millis(500)).is_err());
//! // ...but within the next second (the test does not sleep).
//! assert_eq!(replies.expect_message(Duration::from_secs(1)).unwrap(), Pong(1));
//! assert_eq!(t.now(), Duration::from_secs(1));
//! ```
//!
//! A `TestEnv` is `!Send`: its virtual clock and its queue belong to the test thread.
//!
//! ```compile_fail
//! let t = cohort::testing::TestEnv::new();
//! std::thread::spawn(move || t.run_until_quiet()); // `TestEnv` cannot be sent
//! ```

mod error;
pub mod ledger;
mod probe;
mod watchdog;

pub use error::TestError;
pub use probe::Probe;
pub use watchdog::watchdog;

use crate::dispatcher::Binder;
use crate::dispatcher::test_thread::TestThread;
use crate::error::RegisterError;
use crate::mailbox::Mbox;
use crate::runtime::coop::{Coop, CoopHandle};
use crate::runtime::env::{Environment, WrappedEnv};
use crate::trace::{MessageTracing, TraceStep};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The default step limit of [`TestEnv::run_until_quiet`].
pub const DEFAULT_STEP_LIMIT: usize = 100_000;

/// One handled message: the agent (its direct mailbox's id) and the message's type name.
type HandledLog = Arc<Mutex<Vec<(crate::MboxId, &'static str)>>>;

/// A test environment: agents run on the test thread when it steps them, timers follow a
/// virtual clock. See the [module docs](crate::testing).
pub struct TestEnv {
    inner: Rc<Inner>,
}

struct Inner {
    env: Option<WrappedEnv>,
    core: Arc<TestThread>,
    binder: Binder,
    handled: HandledLog,
    step_limit: std::cell::Cell<usize>,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    /// A test environment at virtual time zero, with no cooperation.
    ///
    /// Its default dispatcher is the test dispatcher: no worker thread is started, and
    /// cooperations the agents register themselves run on the test thread too.
    pub fn new() -> Self {
        let handled: HandledLog = Arc::default();
        let log = handled.clone();
        let core = TestThread::new();
        let env = Environment::builder()
            .autoshutdown(false)
            .default_dispatcher(core.clone())
            .message_tracing(MessageTracing::to_fn(move |e| {
                if let (TraceStep::Handled, Some(agent)) = (e.step, e.agent) {
                    log.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((agent, e.message_type));
                }
            }))
            .start()
            .expect("the test environment starts");
        env.shared().timers.use_manual_clock();
        Self {
            inner: Rc::new(Inner {
                binder: env.default_binder(),
                env: Some(env),
                core,
                handled,
                step_limit: std::cell::Cell::new(DEFAULT_STEP_LIMIT),
            }),
        }
    }

    /// The environment (for named mailboxes, statistics, dead letters ...).
    pub fn environment(&self) -> &Environment {
        self.inner.env()
    }

    /// The binder of the test dispatcher, the environment's default one (every cooperation
    /// registered with [`register`](Self::register) gets it).
    pub fn binder(&self) -> Binder {
        self.inner.binder.clone()
    }

    /// A new cooperation, bound to the test dispatcher.
    pub fn new_coop(&self) -> Coop {
        let mut coop = self.environment().new_coop();
        coop.set_binder(self.binder());
        coop
    }

    /// Registers `coop` on the test dispatcher (replacing its cooperation-wide binder; an
    /// agent added with its own binder keeps it, and runs on that dispatcher's threads).
    /// Its agents are defined now; they start on the next [`step`](Self::step).
    pub fn register(&self, mut coop: Coop) -> Result<CoopHandle, RegisterError> {
        coop.set_binder(self.binder());
        self.environment().register_coop(coop)
    }

    /// Sends `msg` to `to` (it is handled on a later step).
    pub fn send<M: Send + Sync + 'static>(&self, to: &Mbox, msg: M) {
        to.send(msg)
    }

    /// Sets the step limit of [`run_until_quiet`](Self::run_until_quiet). Default:
    /// [`DEFAULT_STEP_LIMIT`].
    pub fn set_step_limit(&self, steps: usize) {
        self.inner.step_limit.set(steps);
    }

    /// Runs one demand (a message, a start, a finish ...); false if there was none.
    pub fn step(&self) -> bool {
        self.inner.core.step()
    }

    /// Runs demands until none is left; returns how many ran. More than the step limit:
    /// [`TestError::NotQuiet`] (the rest stays queued).
    pub fn run_until_quiet(&self) -> Result<usize, TestError> {
        self.inner.run_until_quiet()
    }

    /// The virtual time: zero at the start, moved only by [`advance`](Self::advance).
    pub fn now(&self) -> Duration {
        self.environment().shared().timers.virtual_now()
    }

    /// Moves the virtual clock `by` forward: every timer due meanwhile fires at its own
    /// instant, in order, and the agents run until quiet after each (so a timer they start
    /// meanwhile fires too if it is due by then). Returns the steps run.
    pub fn advance(&self, by: Duration) -> Result<usize, TestError> {
        self.inner
            .advance_to(self.now().saturating_add(by), |_| false)
    }

    /// Checks that the agent of direct mailbox `agent` has handled a message of type `M`
    /// (or `Mutable<M>`) since this was last checked for it, and forgets that record (so a
    /// second check needs a second message). Call after the agent ran.
    pub fn expect_handled<M: 'static>(&self, agent: &Mbox) -> Result<(), TestError> {
        let id = agent.id();
        let ty = std::any::type_name::<M>();
        let mutable = std::any::type_name::<crate::Mutable<M>>();
        let mut log = self.inner.handled.lock().unwrap_or_else(|e| e.into_inner());
        match log
            .iter()
            .position(|&(a, t)| a == id && (t == ty || t == mutable))
        {
            Some(i) => {
                log.remove(i);
                Ok(())
            }
            None => Err(TestError::NotHandled {
                message_type: ty,
                agent: format!("{agent:?}"),
            }),
        }
    }

    /// The states the agent of direct mailbox `agent` is in, innermost first (its current
    /// state, then that state's parents); `["<default>"]` for an agent without states.
    /// `None` for a mailbox that is not the direct mailbox of an agent of this test
    /// dispatcher.
    pub fn agent_state(&self, agent: &Mbox) -> Option<Vec<String>> {
        self.inner.core.state_path(agent.as_direct()?)
    }

    /// Checks that the agent of direct mailbox `agent` is in the state named `state` (its
    /// current state or one of that state's parents).
    pub fn expect_state(&self, agent: &Mbox, state: &str) -> Result<(), TestError> {
        let path = self.agent_state(agent).unwrap_or_default();
        if path.iter().any(|s| s == state) {
            Ok(())
        } else {
            Err(TestError::WrongState {
                expected: state.to_string(),
                actual: path.join(" < "),
            })
        }
    }

    /// Every message handled since the last call: (agent's direct mailbox id, message type),
    /// in order.
    pub fn take_handled(&self) -> Vec<(crate::MboxId, &'static str)> {
        std::mem::take(&mut *self.inner.handled.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs the agents until quiet and returns whether `coop` is gone. A cooperation already
    /// gone: `Ok` at once. Still registered once quiet: [`TestError::CoopNotGone`] (nothing
    /// would change without a message or the clock, so this never blocks).
    pub fn wait_gone(&self, coop: &CoopHandle) -> Result<(), TestError> {
        if coop.is_gone() {
            return Ok(());
        }
        self.run_until_quiet()?;
        if coop.is_gone() {
            Ok(())
        } else {
            Err(TestError::CoopNotGone(coop.id()))
        }
    }
}

impl Inner {
    fn env(&self) -> &Environment {
        self.env.as_ref().expect("set until drop")
    }

    fn run_until_quiet(&self) -> Result<usize, TestError> {
        let limit = self.step_limit.get();
        let mut steps = 0;
        while steps < limit {
            if !self.core.step() {
                return Ok(steps);
            }
            steps += 1;
        }
        Err(TestError::NotQuiet { steps })
    }

    /// Advances to `target`, one timer deadline at a time, running the agents until quiet
    /// after each, and stops early (at that deadline) once `done` says so.
    fn advance_to(
        &self,
        target: Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> Result<usize, TestError> {
        let timers = &self.env().shared().timers;
        let mut steps = self.run_until_quiet()?;
        loop {
            if done(self) {
                return Ok(steps);
            }
            match timers.next_deadline() {
                Some(at) if at <= target => timers.advance_to(at),
                _ => break,
            }
            steps += self.run_until_quiet()?;
        }
        timers.advance_to(target);
        Ok(steps + self.run_until_quiet()?)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let env = self.env.take().expect("set until drop");
        env.stop();
        // The agents finish on this thread: run their last demands here.
        let mut left = self.step_limit.get().max(DEFAULT_STEP_LIMIT);
        while left > 0 && self.core.step() {
            left -= 1;
        }
        if left == 0 {
            // Still busy: waiting would hang, so leak what is left rather than block.
            tracing::error!("test environment dropped while its agents were still busy");
            std::mem::forget(env);
            return;
        }
        drop(env);
    }
}
