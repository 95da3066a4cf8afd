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

/// Untimed round trips before the clock starts, for at least this long: a new thread often
/// starts on its parent's core, and until the scheduler moves it the two threads take turns
/// there, each hand-off a context switch (up to about ten milliseconds on the reference VM,
/// as long as a short floor's whole run); a runtime's threads are running before a scenario's
/// first message.
const WARM_UP: Duration = Duration::from_millis(20);

/// What the pinger sends the echo thread to end it (the pings count from 1).
const STOP: u64 = u64::MAX;

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
/// after the previous pong came back with the same number; the time from the first timed
/// ping (after [`WARM_UP`]) to the last pong.
pub fn ping_pong(round_trips: u64, wait: Wait) -> Result<Duration, String> {
    let (mut ping_tx, mut ping_rx) = spsc::ring::<u64>(2);
    let (mut pong_tx, mut pong_rx) = spsc::ring::<u64>(2);
    let pinger = Arc::new(Sleeper::default());
    let ponger = Arc::new(Sleeper::default());
    let _ = pinger.thread.set(thread::current());
    let (pinger2, ponger2) = (pinger.clone(), ponger.clone());
    let echo = thread::spawn(move || {
        let _ = ponger2.thread.set(thread::current());
        loop {
            let v = ponger2.take(&mut ping_rx, wait);
            if v == STOP {
                break;
            }
            give(&mut pong_tx, v, &pinger2, wait);
        }
    });
    // The echo thread registers before it first waits; a ping sent earlier waits in the ring.
    let mut bad = None;
    let mut round_trip = |i: u64| {
        give(&mut ping_tx, i, &ponger, wait);
        let v = pinger.take(&mut pong_rx, wait);
        if v != i && bad.is_none() {
            bad = Some((v, i));
        }
    };
    let warm_up = Instant::now();
    let mut i = 0;
    while i % 1024 != 0 || warm_up.elapsed() < WARM_UP {
        i += 1;
        round_trip(i);
    }
    let start = Instant::now();
    for i in i + 1..=i + round_trips {
        round_trip(i);
    }
    let elapsed = start.elapsed();
    give(&mut ping_tx, STOP, &ponger, wait);
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
