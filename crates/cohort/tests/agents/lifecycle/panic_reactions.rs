//! Panic reactions: each of the four, their inheritance (agent over coop over environment),
//! and panics in `start`; the default reaction and `Ignore` on every dispatcher kind.

use crate::common;

use cohort::{
    Agent, Context, CoopDeregistered, DefineError, DeregReason, Environment, PanicReaction,
    WrappedEnv,
};
use common::dispatchers;
use common::{Counter, Probe, TIMEOUT, watchdog};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// Makes a [`Volatile`] panic.
#[derive(Debug, Clone, Copy)]
struct Boom;

/// Asks a [`Volatile`] for a reply.
#[derive(Debug, Clone, Copy)]
struct Ping;

/// What a [`Volatile`] does in `start`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnStart {
    Nothing,
    Panic,
    /// Sends itself `Boom` then `n` pings (the local path keeps that order).
    BoomThenPings(u32),
}

/// Panics on `Boom`; counts and answers pings; counts its `finish`.
struct Volatile {
    on_start: OnStart,
    pings: Counter,
    finished: Counter,
    replies: Option<Sender<()>>,
}

impl Volatile {
    fn new(on_start: OnStart) -> Self {
        Self {
            on_start,
            pings: Counter::new(),
            finished: Counter::new(),
            replies: None,
        }
    }

    fn replying(mut self, tx: Sender<()>) -> Self {
        self.replies = Some(tx);
        self
    }
}

impl Agent for Volatile {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_: &mut Self, _: &Boom, _: &mut Context<'_, Self>| {
            panic!("[expected] boom");
        })?;
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {
            me.pings.inc();
            if let Some(tx) = &me.replies {
                let _ = tx.send(());
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        match self.on_start {
            OnStart::Nothing => {}
            OnStart::Panic => panic!("[expected] boom in start"),
            OnStart::BoomThenPings(n) => {
                let me = ctx.self_mbox();
                me.send(Boom);
                for _ in 0..n {
                    me.send(Ping);
                }
            }
        }
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.finished.inc();
    }
}

/// An environment (with the given default reaction) and a probe for its coops' ends.
fn setup(default: Option<PanicReaction>) -> (WrappedEnv, Probe<CoopDeregistered>) {
    let probe = Probe::new();
    let mut builder = Environment::builder();
    if let Some(r) = default {
        builder = builder.panic_reaction(r);
    }
    (builder.start().unwrap(), probe)
}

/// On every dispatcher kind (each runs handlers inside its own worker loop).
#[test]
fn deregister_coop_is_the_default() {
    dispatchers::on_every_kind(|kind| {
        let probe: Probe<CoopDeregistered> = Probe::new();
        let agent = Volatile::new(OnStart::BoomThenPings(2));
        let (pings, finished) = (agent.pings.clone(), agent.finished.clone());
        let env_slot: Arc<Mutex<Option<Environment>>> = Arc::default();
        // `launch`: the coop deregistered by the panic is the last, so launch returns.
        cohort::launch(|env| {
            *env_slot.lock().unwrap() = Some(env.clone());
            let mut coop = env.new_coop();
            coop.set_name("volatile")
                .set_binder(kind.binder(env, "volatile"))
                .notify_deregistered(probe.mbox.clone());
            coop.add(agent);
            env.register_coop(coop)?;
            Ok(())
        })
        .unwrap();
        let env = env_slot.lock().unwrap().take().unwrap();
        let d = probe.recv("the volatile coop's CoopDeregistered");
        assert_eq!(d.reason, DeregReason::Panic);
        assert_eq!(d.name.as_deref(), Some("volatile"));
        assert_eq!(env.panics(), 1);
        // The pings queued behind the panicking message were pending when deregistration
        // began: they are handled before `finish`.
        assert_eq!(pings.get(), 2);
        assert_eq!(finished.get(), 1);
        assert_eq!(env.dead_letters(), 0);
    });
}

/// On every dispatcher kind.
#[test]
fn ignore_keeps_the_agent_handling_messages() {
    dispatchers::on_every_kind(|kind| {
        let (env, probe) = setup(Some(PanicReaction::Ignore));
        let (tx, rx) = mpsc::channel();
        let agent = Volatile::new(OnStart::Nothing).replying(tx);
        let pings = agent.pings.clone();
        let mut coop = env.new_coop();
        coop.set_binder(kind.binder(&env, "volatile"))
            .notify_deregistered(probe.mbox.clone());
        let mbox = coop.add(agent).mbox();
        let handle = env.register_coop(coop).unwrap();

        for round in 1..=3u64 {
            mbox.send(Boom);
            mbox.send(Ping);
            common::recv(&rx, "a reply after an ignored panic");
            assert_eq!(env.panics(), round);
        }
        assert_eq!(pings.get(), 3);
        assert!(!handle.is_gone());
        assert!(!env.is_stopping());
        assert_eq!(env.coop_count(), 1);
        env.stop_and_wait();
        assert_eq!(
            probe.recv("CoopDeregistered at shutdown").reason,
            DeregReason::Shutdown
        );
    });
}

#[test]
fn shutdown_environment_stops_everything() {
    watchdog(TIMEOUT, || {
        let (env, probe) = setup(Some(PanicReaction::ShutdownEnvironment));
        let mut coop = env.new_coop();
        coop.set_name("volatile")
            .notify_deregistered(probe.mbox.clone());
        let volatile = coop.add(Volatile::new(OnStart::Nothing)).mbox();
        env.register_coop(coop).unwrap();
        let mut coop = env.new_coop();
        coop.set_name("bystander")
            .notify_deregistered(probe.mbox.clone());
        coop.add(common::Idle);
        env.register_coop(coop).unwrap();

        volatile.send(Boom);
        // Nobody calls stop(): the panic does.
        env.wait();
        assert!(env.is_stopping());
        assert_eq!(env.panics(), 1);
        let mut ends: Vec<(String, DeregReason)> = probe
            .recv_n(2, "two CoopDeregistered")
            .into_iter()
            .map(|d| (d.name.unwrap(), d.reason))
            .collect();
        ends.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            ends,
            vec![
                ("bystander".to_owned(), DeregReason::Shutdown),
                ("volatile".to_owned(), DeregReason::Shutdown),
            ]
        );
    });
}

/// Selects the child mode of [`abort_kills_the_process`].
const ABORT_CHILD: &str = "COHORT_TEST_PANIC_ABORT_CHILD";
const ABORT_MARKER: &str = "abort child: sending Boom";

/// Child mode: an agent with reaction `Abort` panics. The process must die of SIGABRT before
/// the reply to the ping sent right after can come back.
fn abort_child() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder()
            .panic_reaction(PanicReaction::Ignore)
            .start()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_panic_reaction(PanicReaction::Ignore);
        let h = coop.add(Volatile::new(OnStart::Nothing).replying(tx));
        // Agent level beats the coop's and the environment's `Ignore`.
        coop.set_agent_panic_reaction(&h, PanicReaction::Abort);
        env.register_coop(coop).unwrap();
        eprintln!("{ABORT_MARKER}");
        h.mbox().send(Boom);
        h.mbox().send(Ping);
        let _ = rx.recv_timeout(TIMEOUT);
        panic!("the process survived a panic with reaction Abort");
    });
}

#[test]
fn abort_kills_the_process() {
    if std::env::var_os(ABORT_CHILD).is_some() {
        abort_child();
        return;
    }
    watchdog(TIMEOUT, || {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                common::test_path(module_path!(), "abort_kills_the_process").as_str(),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ABORT_CHILD, "1")
            .env("RUST_BACKTRACE", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run the test binary in child mode");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stderr.contains(ABORT_MARKER),
            "the child did not reach the panic.\nstatus: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains("[expected] boom"),
            "the child did not panic in the handler.\nstderr:\n{stderr}"
        );
        assert!(
            !stderr.contains("survived"),
            "the child survived the panic.\nstderr:\n{stderr}"
        );
        assert!(!out.status.success(), "status: {:?}", out.status);
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            const SIGABRT: i32 = 6;
            assert_eq!(
                out.status.signal(),
                Some(SIGABRT),
                "the child must be killed by SIGABRT; status: {:?}\nstderr:\n{stderr}",
                out.status
            );
        }
    });
}

/// Sends `Boom` then `Ping` to `mbox` and waits for the reply on `rx`.
fn boom_then_ping(mbox: &cohort::Mbox, rx: &Receiver<()>, what: &str) {
    mbox.send(Boom);
    mbox.send(Ping);
    common::recv(rx, what);
}

/// Environment default `ShutdownEnvironment`; coop `C` says `DeregisterCoop`, and its agent
/// `a` says `Ignore` (agent `b` inherits the coop's); coop `E` inherits the environment's.
#[test]
fn agent_reaction_overrides_coop_which_overrides_environment() {
    watchdog(TIMEOUT, || {
        let (env, probe) = setup(Some(PanicReaction::ShutdownEnvironment));
        let (tx, rx) = mpsc::channel();

        let mut coop = env.new_coop();
        coop.set_name("C")
            .set_panic_reaction(PanicReaction::DeregisterCoop)
            .notify_deregistered(probe.mbox.clone());
        let a = coop.add(Volatile::new(OnStart::Nothing).replying(tx.clone()));
        coop.set_agent_panic_reaction(&a, PanicReaction::Ignore);
        let b = coop.add(Volatile::new(OnStart::Nothing));
        let c = env.register_coop(coop).unwrap();

        let mut coop = env.new_coop();
        coop.set_name("E").notify_deregistered(probe.mbox.clone());
        let e = coop.add(Volatile::new(OnStart::Nothing)).mbox();
        env.register_coop(coop).unwrap();

        // a: agent-level Ignore.
        boom_then_ping(&a.mbox(), &rx, "a's reply after its ignored panic");
        assert_eq!(env.panics(), 1);
        assert!(!c.is_gone() && !env.is_stopping());

        // b: the coop's DeregisterCoop, not the environment's ShutdownEnvironment.
        b.mbox().send(Boom);
        let d = probe.recv("C's CoopDeregistered");
        assert_eq!(
            (d.name.as_deref(), d.reason),
            (Some("C"), DeregReason::Panic)
        );
        assert_eq!(env.panics(), 2);
        assert!(!env.is_stopping());

        // e: the environment's ShutdownEnvironment.
        e.send(Boom);
        env.wait();
        assert_eq!(env.panics(), 3);
        let d = probe.recv("E's CoopDeregistered");
        assert_eq!(
            (d.name.as_deref(), d.reason),
            (Some("E"), DeregReason::Shutdown)
        );
    });
}

#[test]
fn coop_reaction_overrides_the_default() {
    watchdog(TIMEOUT, || {
        // Default environment reaction (DeregisterCoop), coop says Ignore.
        let (env, probe) = setup(None);
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_panic_reaction(PanicReaction::Ignore)
            .notify_deregistered(probe.mbox.clone());
        let ignoring = coop
            .add(Volatile::new(OnStart::Nothing).replying(tx.clone()))
            .mbox();
        let handle = env.register_coop(coop).unwrap();
        boom_then_ping(&ignoring, &rx, "a reply after an ignored panic");
        assert!(!handle.is_gone());

        // Coop says Ignore, the agent says DeregisterCoop.
        let mut coop = env.new_coop();
        coop.set_panic_reaction(PanicReaction::Ignore)
            .set_name("strict")
            .notify_deregistered(probe.mbox.clone());
        let strict = coop.add(Volatile::new(OnStart::Nothing));
        coop.set_agent_panic_reaction(&strict, PanicReaction::DeregisterCoop);
        env.register_coop(coop).unwrap();
        strict.mbox().send(Boom);
        let d = probe.recv("the strict coop's CoopDeregistered");
        assert_eq!(
            (d.name.as_deref(), d.reason),
            (Some("strict"), DeregReason::Panic)
        );
        assert_eq!(env.panics(), 2);
        assert!(!handle.is_gone());
        env.stop_and_wait();
    });
}

#[test]
fn panic_in_start_deregisters_the_coop_by_default() {
    watchdog(TIMEOUT, || {
        let (env, probe) = setup(None);
        let agent = Volatile::new(OnStart::Panic);
        let finished = agent.finished.clone();
        let mut coop = env.new_coop();
        coop.notify_deregistered(probe.mbox.clone());
        coop.add(agent);
        let handle = env.register_coop(coop).unwrap();
        let d = probe.recv("CoopDeregistered after a panic in start");
        assert_eq!(d.id, handle.id());
        assert_eq!(d.reason, DeregReason::Panic);
        assert_eq!(env.panics(), 1);
        assert_eq!(finished.get(), 1, "an agent that started gets its finish");
        env.stop_and_wait();
    });
}

#[test]
fn panic_in_start_is_ignored_when_asked() {
    watchdog(TIMEOUT, || {
        let (env, _probe) = setup(Some(PanicReaction::Ignore));
        let (tx, rx) = mpsc::channel();
        let agent = Volatile::new(OnStart::Panic).replying(tx);
        let mut coop = env.new_coop();
        let mbox = coop.add(agent).mbox();
        let handle = env.register_coop(coop).unwrap();
        mbox.send(Ping);
        common::recv(&rx, "a reply after a panic in start");
        assert_eq!(env.panics(), 1);
        assert!(!handle.is_gone());
        env.stop_and_wait();
    });
}
