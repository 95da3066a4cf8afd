//! Traps a newcomer hit, removed: a dropped delayed-timer id still fires, waiting for a
//! cooperation to be gone, what the dead-letter hook sees, the type names in errors, and
//! publishes that reach an agent whose cooperation is still registering.
//!
//! No test sleeps to synchronise: each waits for messages (with the watchdog's limit), and
//! "nothing arrived" is proven with a sentinel that must arrive after it.

use crate::common;

use common::{Probe, TIMEOUT, watchdog};
use std::future::Future;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Timer(u32),
    Sentinel,
}

#[test]
fn a_dropped_timer_id_still_fires() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let probe = Probe::<Msg>::new();
        // The pattern that used to cancel at once: the id is dropped on this line.
        let _ = env.send_delayed(&probe.mbox, Duration::from_millis(1), Msg::Timer(1));
        env.send_delayed(&probe.mbox, Duration::from_millis(2), Msg::Timer(2));
        assert_eq!(probe.recv("the first timer"), Msg::Timer(1));
        assert_eq!(probe.recv("the second timer"), Msg::Timer(2));
        // Asked for, a guard still cancels on drop; a later sentinel proves nothing fired.
        let guard = env
            .send_delayed(&probe.mbox, Duration::from_millis(200), Msg::Timer(3))
            .cancel_on_drop();
        assert_eq!(env.timer_count(), 1);
        drop(guard);
        assert_eq!(env.timer_count(), 0);
        env.send_delayed(&probe.mbox, Duration::from_millis(300), Msg::Sentinel);
        assert_eq!(probe.recv("the sentinel"), Msg::Sentinel);
        assert!(probe.nothing_more());
        assert_eq!(env.dead_letters(), 0);
        probe.shutdown();
    });
}

/// Asks the agent to wait for its own cooperation (with this handle) and report.
struct WaitFor(cohort::CoopHandle);

/// Waits, in a handler, for the cooperation it is given, and reports the outcome.
struct Waiter {
    tx: std::sync::mpsc::Sender<Result<(), cohort::CoopWaitError>>,
}

impl cohort::Agent for Waiter {
    fn define(&mut self, ctx: &mut cohort::Context<'_, Self>) -> Result<(), cohort::DefineError> {
        ctx.on(|me, w: &WaitFor, _| {
            let _ = me.tx.send(w.0.wait_gone(Duration::from_secs(3600)));
        })?;
        Ok(())
    }
}

#[test]
fn waiting_for_a_cooperation_to_be_gone() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut coop = env.new_coop();
        let waiter = coop.add(Waiter { tx }).mbox();
        let handle = env.register_coop(coop).unwrap();
        // Nobody deregisters it: a timeout, typed.
        assert_eq!(
            handle.wait_gone(Duration::from_millis(1)),
            Err(cohort::CoopWaitError::Timeout(Duration::from_millis(1)))
        );
        // From a handler of its own agent: an error at once, not a hang.
        waiter.send(WaitFor(handle.clone()));
        assert_eq!(
            common::recv(&rx, "the handler's outcome"),
            Err(cohort::CoopWaitError::WouldDeadlock)
        );
        // A future, polled by hand with a waker that reports to a channel.
        let (woke_tx, woke_rx) = std::sync::mpsc::channel();
        let waker = std::task::Waker::from(std::sync::Arc::new(ChannelWaker(
            std::sync::Mutex::new(woke_tx),
        )));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut gone = std::pin::pin!(handle.gone());
        assert!(gone.as_mut().poll(&mut cx).is_pending());
        handle.deregister(cohort::DeregReason::Normal);
        common::recv(&woke_rx, "the future's wake-up");
        assert!(gone.as_mut().poll(&mut cx).is_ready());
        assert!(handle.is_gone());
        // Already gone: at once, Ok (with any timeout, even zero).
        assert_eq!(handle.wait_gone(Duration::ZERO), Ok(()));
        assert!(std::pin::pin!(handle.gone()).poll(&mut cx).is_ready());
    });
}

/// Waits from a thread that runs none of the cooperation's agents: it returns once gone.
#[test]
fn waiting_from_another_thread_returns_once_gone() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.add(common::Idle);
        let handle = env.register_coop(coop).unwrap();
        let waiting = {
            let handle = handle.clone();
            std::thread::spawn(move || handle.wait_gone(Duration::from_secs(3600)))
        };
        handle.deregister(cohort::DeregReason::Normal);
        assert_eq!(waiting.join().unwrap(), Ok(()));
        assert!(handle.is_gone());
    });
}

struct ChannelWaker(std::sync::Mutex<std::sync::mpsc::Sender<()>>);

impl std::task::Wake for ChannelWaker {
    fn wake(self: std::sync::Arc<Self>) {
        let _ = self.0.lock().unwrap().send(());
    }
}

/// Subscribes to mutable `u8` on a multi-consumer mailbox: refused in `define`.
struct MutableOnNamed;

impl cohort::Agent for MutableOnNamed {
    fn define(&mut self, ctx: &mut cohort::Context<'_, Self>) -> Result<(), cohort::DefineError> {
        let named = ctx.environment().named_mbox("traps");
        ctx.subscribe_mut(&named, |_, _: u8, _| {})?;
        Ok(())
    }
}

#[test]
fn errors_name_the_public_mutable_type() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let mut coop = env.new_coop();
        coop.add(MutableOnNamed);
        let err = env.register_coop(coop).unwrap_err().to_string();
        assert!(err.contains("`cohort::Mutable<u8>`"), "{err}");
        assert!(!err.contains("cohort::message"), "{err}");
        assert_eq!(
            std::any::type_name::<cohort::Mutable<u8>>(),
            "cohort::Mutable<u8>"
        );
    });
}

#[test]
fn the_dead_letter_hook_sees_the_mailbox_the_agent_and_the_message() {
    watchdog(TIMEOUT, || {
        type Seen = (
            cohort::DeliveryFailure,
            Option<cohort::MboxId>,
            Option<cohort::MboxId>,
            Option<u64>,
        );
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Seen>::new()));
        let sink = seen.clone();
        let env = cohort::Environment::builder()
            .dead_letter_hook(move |d| {
                let value = d.message.and_then(|m| m.downcast_ref::<u64>()).copied();
                sink.lock()
                    .unwrap()
                    .push((d.reason, d.mbox, d.agent, value));
            })
            .start()
            .unwrap();
        let mut coop = env.new_coop();
        let mbox = coop.add(common::Idle).mbox();
        let handle = env.register_coop(coop).unwrap();
        handle.deregister(cohort::DeregReason::Normal);
        handle.wait_gone(Duration::from_secs(3600)).unwrap();
        mbox.send(7u64);
        assert_eq!(
            seen.lock().unwrap().clone(),
            vec![(
                cohort::DeliveryFailure::ReceiverGone,
                Some(mbox.id()),
                Some(mbox.id()),
                Some(7)
            )]
        );
    });
}
