//! Loom model of a dedicated worker's wake-up: no notify is slept through.

use crate::queue::wakeup::Wakeup;
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
