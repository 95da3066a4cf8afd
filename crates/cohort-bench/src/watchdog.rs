//! Runs test bodies under a time limit, so a hang fails the test instead of CI.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// Runs `f` on a thread; panics if it does not finish within `secs` seconds, and passes on
/// its panic if it panics.
pub fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let t = thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(RecvTimeoutError::Disconnected) => match t.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => unreachable!("the body ended without a result or a panic"),
        },
        Err(RecvTimeoutError::Timeout) => {
            panic!("watchdog: the test did not finish within {secs} s")
        }
    }
}
