//! Two-thread floors: ping-pong between two threads through two single-producer
//! single-consumer rings (one each way), either busy-polled (the fastest hand-off there is,
//! at the price of two cores spinning) or spinning a while and then parking until the other
//! thread unparks it (what a runtime that must not burn idle cores can at best do).

use super::one_thread::check;
use super::spsc::{self, Consumer, Producer};
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How a thread waits for its next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Polls its ring without end.
    Busy,
    /// Polls `SPIN` times, then parks until the sender unparks it.
    SpinThenPark,
}

/// Polls before parking: a few microseconds, longer than a round trip between two running
/// threads, so parking happens only when the other side was descheduled or is slow.
const SPIN: u32 = 2_000;

/// A thread that may park, and the flag by which a sender knows it must unpark it.
#[derive(Default)]
struct Sleeper {
    sleeping: AtomicBool,
    thread: OnceLock<Thread>,
}

impl Sleeper {
    /// Takes a value from `rx`, waiting as `wait` says.
    fn take(&self, rx: &mut Consumer<u64>, wait: Wait) -> u64 {
        if wait == Wait::Busy {
            return rx.pop_spin();
        }
        loop {
            for _ in 0..SPIN {
                if let Some(v) = rx.pop() {
                    return v;
                }
                std::hint::spin_loop();
            }
            self.sleeping.store(true, Ordering::Relaxed);
            // Pairs with the sender's fence: either it sees `sleeping` or we see its value.
            fence(Ordering::SeqCst);
            if let Some(v) = rx.pop() {
                self.sleeping.store(false, Ordering::Relaxed);
                return v;
            }
            thread::park();
            self.sleeping.store(false, Ordering::Relaxed);
        }
    }

    /// Wakes this sleeper if it went to sleep; called by the other thread after a push.
    fn wake(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.swap(false, Ordering::Relaxed)
            && let Some(t) = self.thread.get()
        {
            t.unpark();
        }
    }
}

fn give(tx: &mut Producer<u64>, v: u64, to: &Sleeper, wait: Wait) {
    tx.push_spin(v);
    if wait == Wait::SpinThenPark {
        to.wake();
    }
}

/// Ping-pong: the calling thread sends `round_trips` numbered pings to a second thread, each
/// after the previous pong came back with the same number; the time from the first ping to
/// the last pong.
pub fn ping_pong(round_trips: u64, wait: Wait) -> Result<Duration, String> {
    let (mut ping_tx, mut ping_rx) = spsc::ring::<u64>(2);
    let (mut pong_tx, mut pong_rx) = spsc::ring::<u64>(2);
    let pinger = Arc::new(Sleeper::default());
    let ponger = Arc::new(Sleeper::default());
    let _ = pinger.thread.set(thread::current());
    let (pinger2, ponger2) = (pinger.clone(), ponger.clone());
    let echo = thread::spawn(move || {
        let _ = ponger2.thread.set(thread::current());
        for _ in 0..round_trips {
            let v = ponger2.take(&mut ping_rx, wait);
            give(&mut pong_tx, v, &pinger2, wait);
        }
    });
    // The echo thread registers before it first waits; a ping sent earlier waits in the ring.
    let start = Instant::now();
    let mut bad = None;
    for i in 1..=round_trips {
        give(&mut ping_tx, i, &ponger, wait);
        let v = pinger.take(&mut pong_rx, wait);
        if v != i && bad.is_none() {
            bad = Some((v, i));
        }
    }
    let elapsed = start.elapsed();
    echo.join().map_err(|_| "the echo thread panicked")?;
    if let Some((v, i)) = bad {
        check("as a pong number", v, i)?;
    }
    Ok(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_waits_complete_every_round_trip() {
        crate::watchdog::within(60, || {
            ping_pong(200, Wait::Busy).unwrap();
            ping_pong(200, Wait::SpinThenPark).unwrap();
        });
    }
}
