//! Flood floors: a plain thread writes integers as fast as it can to a consumer thread that
//! adds them up, through a crossbeam channel (an unbounded queue with blocking receive, the
//! usual choice) or a busy-polled single-producer single-consumer ring (the fastest
//! hand-off, two cores spinning); and the message-chain pipeline, writer -> forwarder ->
//! reader, through two crossbeam channels.

use super::one_thread::{check, triangle};
use super::spsc;
use super::start_line::StartLine;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// What a flood measured.
pub struct Flood {
    /// From the first send to the consumer's check.
    pub elapsed: Duration,
    /// The writer's own loop.
    pub send: Duration,
}

/// The queue between writer and consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// `crossbeam_channel::unbounded`, blocking receive.
    Channel,
    /// [`spsc::ring`] of this many slots, both sides busy-polling.
    Ring(usize),
}

/// Slots of the flood ring: large enough that the writer rarely finds it full, small enough
/// to stay in the second-level cache.
pub const RING_SLOTS: usize = 1 << 14;

/// The calling thread sends 1..=`count` to a consumer thread through `queue`, once the
/// consumer runs; the consumer's count and sum are checked.
pub fn flood(count: u64, queue: Queue) -> Result<Flood, String> {
    let start;
    let send;
    let line = Arc::new(StartLine::default());
    let consumer = match queue {
        Queue::Channel => {
            let (tx, rx) = crossbeam_channel::unbounded::<u64>();
            let line2 = line.clone();
            let consumer = thread::spawn(move || {
                line2.ready_and_wait();
                let (mut n, mut sum) = (0u64, 0u64);
                while n < count {
                    let Ok(v) = rx.recv() else { break };
                    n += 1;
                    sum = sum.wrapping_add(v);
                }
                (n, sum, Instant::now())
            });
            start = line.start(1);
            for v in 1..=count {
                tx.send(v).map_err(|_| "the consumer left early")?;
            }
            send = start.elapsed();
            consumer
        }
        Queue::Ring(slots) => {
            let (mut tx, mut rx) = spsc::ring::<u64>(slots);
            let line2 = line.clone();
            let consumer = thread::spawn(move || {
                line2.ready_and_wait();
                let (mut n, mut sum) = (0u64, 0u64);
                while n < count {
                    sum = sum.wrapping_add(rx.pop_spin());
                    n += 1;
                }
                (n, sum, Instant::now())
            });
            start = line.start(1);
            for v in 1..=count {
                tx.push_spin(v);
            }
            send = start.elapsed();
            consumer
        }
    };
    let (n, sum, at) = consumer.join().map_err(|_| "the consumer panicked")?;
    check("messages", n, count)?;
    check("as the sum", sum, triangle(count))?;
    Ok(Flood {
        elapsed: at.saturating_duration_since(start),
        send,
    })
}

/// The chain pipeline: a writer thread sends 1..=`count` to a forwarder thread, which passes
/// each on through a second channel (bounded to `capacity` unless 0) to the calling thread;
/// the time from the first send (once both threads run) to the last receive, the sum checked.
pub fn pipeline(count: u64, capacity: usize) -> Result<Duration, String> {
    let (tx, rx) = crossbeam_channel::unbounded::<u64>();
    let (out_tx, out_rx) = if capacity == 0 {
        crossbeam_channel::unbounded::<u64>()
    } else {
        crossbeam_channel::bounded::<u64>(capacity)
    };
    let line = Arc::new(StartLine::default());
    let forwarder_line = line.clone();
    let forwarder = thread::spawn(move || {
        forwarder_line.ready_and_wait();
        for v in rx {
            if out_tx.send(v).is_err() {
                break;
            }
        }
    });
    let writer_line = line.clone();
    let writer = thread::spawn(move || {
        writer_line.ready_and_wait();
        for v in 1..=count {
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let start = line.start(2);
    let (mut n, mut sum) = (0u64, 0u64);
    while n < count {
        let Ok(v) = out_rx.recv() else { break };
        n += 1;
        sum = sum.wrapping_add(v);
    }
    let end = Instant::now();
    writer.join().map_err(|_| "the writer panicked")?;
    forwarder.join().map_err(|_| "the forwarder panicked")?;
    check("messages", n, count)?;
    check("as the sum", sum, triangle(count))?;
    Ok(end.saturating_duration_since(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_arrives() {
        crate::watchdog::within(60, || {
            flood(10_000, Queue::Channel).unwrap();
            flood(10_000, Queue::Ring(64)).unwrap();
            pipeline(10_000, 0).unwrap();
            pipeline(10_000, 16).unwrap();
        });
    }
}
