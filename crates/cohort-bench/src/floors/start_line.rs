//! [`StartLine`]: the threads of a multi-thread floor line up, running, before its clock
//! starts, so a floor times its work and not a new thread's first trip onto a core (on a VM
//! that trip can take milliseconds, as long as a short floor's whole run), just as a
//! runtime's worker threads are running before a scenario's first message.

use super::spsc::relax;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// Where a floor's threads wait, running, for the clock to start.
#[derive(Default)]
pub struct StartLine {
    ready: AtomicUsize,
    go: AtomicBool,
}

impl StartLine {
    /// Called by a floor thread before its work: says it runs, then waits for the start.
    pub fn ready_and_wait(&self) {
        self.ready.fetch_add(1, Ordering::AcqRel);
        wait_until(|| self.go.load(Ordering::Acquire));
    }

    /// Called by the thread that keeps the time: waits until `threads` threads are ready,
    /// starts them, and returns the start.
    pub fn start(&self, threads: usize) -> Instant {
        wait_until(|| self.ready.load(Ordering::Acquire) >= threads);
        let start = Instant::now();
        self.go.store(true, Ordering::Release);
        start
    }
}

/// Polls `done` as the floors' busy-polling sides do (yielding the core after a while).
fn wait_until(done: impl Fn() -> bool) {
    let mut polls = 0u32;
    while !done() {
        relax(&mut polls);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_starts_once_every_thread_is_ready_and_none_starts_before() {
        crate::watchdog::within(60, || {
            let line = StartLine::default();
            let started = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for _ in 0..3 {
                    s.spawn(|| {
                        line.ready_and_wait();
                        started.fetch_add(1, Ordering::Relaxed);
                    });
                }
                assert_eq!(
                    started.load(Ordering::Relaxed),
                    0,
                    "a thread ran before the start"
                );
                let _ = line.start(3);
            });
            assert_eq!(started.load(Ordering::Relaxed), 3);
        });
    }
}
