//! State time limits: entering a state with a time limit starts a timer that sends the agent
//! a [`StateTimeout`]; leaving the state drops the timer (cancelling it) and bumps the
//! state's epoch, so a time-out already queued is recognised as stale and ignored.

use super::machine::TimerSlot;
use crate::env::Environment;
use crate::mbox::Mbox;
use std::time::Duration;

/// The message a state's time limit sends to its agent's direct mailbox.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StateTimeout {
    pub(crate) state: u16,
    /// The state's epoch when the timer started.
    pub(crate) epoch: u32,
}

/// Starts the timer of a time limit: `msg` reaches `to` after `delay` unless the returned
/// slot is dropped first.
pub(crate) fn start(env: &Environment, to: &Mbox, delay: Duration, msg: StateTimeout) -> TimerSlot {
    let _ = env;
    // TEMPORARY until the timers branch lands: a thread per pending time limit.
    let cancelled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = cancelled.clone();
    let to = to.clone();
    let t = std::thread::spawn(move || {
        let until = std::time::Instant::now() + delay;
        loop {
            if flag.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            let now = std::time::Instant::now();
            if now >= until {
                return to.send(msg);
            }
            std::thread::park_timeout(until - now);
        }
    });
    struct Cancel(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::Thread,
    );
    impl Drop for Cancel {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Release);
            self.1.unpark();
        }
    }
    Box::new(Cancel(cancelled, t.thread().clone()))
}
