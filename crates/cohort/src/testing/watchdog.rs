//! A time limit for a test body that might hang.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// Runs `body` on a thread of its own and waits at most `timeout` for it, so that a test
/// that hangs (a deadlock, a lost message, an environment that never stops) fails with a
/// clear message instead of hanging the whole suite.
///
/// A panic of the body is passed on unchanged, so `assert!` messages show as usual. A body
/// that overruns is left running (a thread cannot be killed) and the calling test panics.
///
/// ```
/// use cohort::testing::watchdog;
/// use std::time::Duration;
///
/// let sum = watchdog(Duration::from_secs(10), || {
///     let env = cohort::Environment::builder().start().unwrap();
///     env.stop();
///     env.wait();
///     1 + 1
/// });
/// assert_eq!(sum, 2);
/// ```
pub fn watchdog<T: Send + 'static>(
    timeout: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let name = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_owned();
    let spawned = std::thread::Builder::new()
        .name(format!("{name} (body)"))
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        panic!("watchdog: could not start the body thread of `{name}`: {e}");
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(RecvTimeoutError::Timeout) => panic!(
            "watchdog: test `{name}` did not finish within {timeout:?}: something hangs \
             (a deadlock, a lost message or an environment that never stops)"
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("watchdog: the body thread of `{name}` ended without reporting a result")
        }
    }
}
