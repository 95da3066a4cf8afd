//! A wake-up signal one waiter can wait on while several chains signal it: what lets
//! `select` sleep on many chains at once with std's `Mutex` + `Condvar`.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// A generation counter: chains bump it (under their own lock) when something changed; the
/// waiter reads it before looking at the chains and sleeps only while it is unchanged, so no
/// change between the look and the sleep is lost.
pub(crate) struct Notify {
    state: Mutex<Gen>,
    cv: Condvar,
}

struct Gen {
    generation: u64,
    /// The waiter is inside `wait_past`: only then is the condition variable notified (a
    /// notify is a system call even with nobody waiting).
    sleeping: bool,
}

impl Notify {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(Gen {
                generation: 0,
                sleeping: false,
            }),
            cv: Condvar::new(),
        })
    }

    /// The current generation.
    pub(crate) fn generation(&self) -> u64 {
        self.lock().generation
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Gen> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Something changed: wake the waiter.
    pub(crate) fn signal(&self) {
        let mut g = self.lock();
        g.generation += 1;
        if g.sleeping {
            self.cv.notify_all();
        }
    }

    /// Sleeps until the generation moves past `seen` or `deadline` passes (`None`: no limit).
    /// Returns false on timeout.
    pub(crate) fn wait_past(&self, seen: u64, deadline: Option<Instant>) -> bool {
        // A handler that blocks on a chain ends its turn's deferred work first (what it
        // waits for may depend on it).
        crate::dispatcher::turn_end::end_turn();
        let mut g = self.lock();
        let mut in_time = true;
        g.sleeping = true;
        while g.generation == seen {
            match deadline {
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        in_time = false;
                        break;
                    }
                    g = self
                        .cv
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        g.sleeping = false;
        in_time
    }
}
