//! The park/unpark protocol between one worker thread and the threads that give it work.
//!
//! A worker with nothing to do spins for a while (the caller's business), then calls
//! [`Wakeup::sleep`]; a producer that has just published work calls [`Wakeup::notify`].
//! The protocol is Dekker's: the worker announces `sleeping` then re-checks for work, the
//! producer publishes work then checks `sleeping`, each with a `SeqCst` fence in between, so
//! at least one of them sees the other and no wake-up is lost. `std::thread::park` keeps an
//! unpark token, so an unpark that lands before the park is not lost either.
//! The loom model at the end of this file checks exactly this (`RUSTFLAGS="--cfg loom"`).

use crate::sync::{AtomicBool, Mutex, Thread, current_thread, fence, park};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// Wakes one parked worker thread.
#[derive(Debug)]
pub(crate) struct Wakeup {
    sleeping: AtomicBool,
    thread: Mutex<Option<Thread>>,
}

impl Default for Wakeup {
    fn default() -> Self {
        Self::new()
    }
}

impl Wakeup {
    /// A wake-up with no worker registered yet.
    pub(crate) fn new() -> Self {
        Self {
            sleeping: AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }

    /// Registers the calling thread as the worker that [`Wakeup::notify`] unparks.
    pub(crate) fn register_current(&self) {
        *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(current_thread());
    }

    /// Called by a producer after it has published work: wakes the worker if it sleeps.
    /// Costs a fence and a load when the worker is awake.
    #[inline]
    pub(crate) fn notify(&self) {
        fence(SeqCst);
        if self.sleeping.load(Relaxed) && self.sleeping.swap(false, SeqCst) {
            self.unpark();
        }
    }

    /// As [`Wakeup::notify`] without its fence, for a caller that fenced already (a pool
    /// checking several workers after one fence). Returns true if the worker was asleep.
    #[inline]
    pub(crate) fn notify_fenced(&self) -> bool {
        if self.sleeping.load(Relaxed) && self.sleeping.swap(false, SeqCst) {
            self.unpark();
            return true;
        }
        false
    }

    /// Wakes the worker unconditionally (shutdown, close).
    pub(crate) fn force(&self) {
        self.sleeping.store(false, SeqCst);
        self.unpark();
    }

    #[cold]
    fn unpark(&self) {
        if let Some(t) = self
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.unpark();
        }
    }

    /// As [`Wakeup::sleep`], but parks for at most `timeout`.
    #[cfg(not(loom))]
    pub(crate) fn sleep_timeout(&self, timeout: std::time::Duration, has_work: impl Fn() -> bool) {
        release_thread_caches();
        self.sleeping.store(true, Relaxed);
        fence(SeqCst);
        if !has_work() {
            std::thread::park_timeout(timeout);
        }
        self.sleeping.store(false, Relaxed);
    }

    /// Under loom (no timed park): as [`Wakeup::sleep`].
    #[cfg(loom)]
    pub(crate) fn sleep_timeout(&self, _timeout: std::time::Duration, has_work: impl Fn() -> bool) {
        self.sleep(has_work)
    }

    /// Called by the worker when it found no work: parks unless `has_work` turns true after
    /// the worker announced that it sleeps. Returns on a notify (or spuriously); the caller
    /// re-checks for work.
    pub(crate) fn sleep(&self, has_work: impl Fn() -> bool) {
        release_thread_caches();
        self.sleeping.store(true, Relaxed);
        fence(SeqCst);
        if !has_work() {
            park();
        }
        self.sleeping.store(false, Relaxed);
    }
}

/// What a worker keeps only while it is busy (the subscriber tables of the multi-consumer
/// mailboxes it sent to) goes before it parks.
#[inline]
fn release_thread_caches() {
    #[cfg(not(loom))]
    crate::named::release_thread_tables();
}

#[cfg(all(test, loom))]
mod loom_model {
    use super::Wakeup;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::{Acquire, Release};

    /// `producers` threads each publish one item and notify; a worker thread sleeps until it
    /// has seen them all. A lost wake-up leaves the worker parked forever, which loom reports.
    /// (The worker is a spawned thread: loom cannot model an unpark aimed at a thread blocked
    /// in `join`, which std allows.)
    fn check(producers: usize) {
        loom::model(move || {
            let wake = Arc::new(Wakeup::new());
            let work = Arc::new(AtomicUsize::new(0));
            let registered = Arc::new(AtomicUsize::new(0));
            let worker = {
                let (wake, work, registered) = (wake.clone(), work.clone(), registered.clone());
                loom::thread::spawn(move || {
                    wake.register_current();
                    registered.store(1, Release);
                    while work.load(Acquire) < producers {
                        wake.sleep(|| work.load(Acquire) >= producers);
                    }
                })
            };
            // Producers start once the worker is registered (as in the runtime, where the
            // worker registers before its queue is handed out).
            while registered.load(Acquire) == 0 {
                loom::thread::yield_now();
            }
            let senders: Vec<_> = (0..producers)
                .map(|_| {
                    let (wake, work) = (wake.clone(), work.clone());
                    loom::thread::spawn(move || {
                        work.fetch_add(1, Release);
                        wake.notify();
                    })
                })
                .collect();
            for s in senders {
                s.join().unwrap();
            }
            worker.join().unwrap();
        });
    }

    #[test]
    fn no_lost_wakeup() {
        check(1);
    }

    #[test]
    fn no_lost_wakeup_two_producers() {
        check(2);
    }
}
