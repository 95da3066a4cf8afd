//! Floors for independent agents on a pool of N threads: the agents split into N equal
//! shares, each thread running its share as the one-thread floor does (one `VecDeque`, a
//! loop), with nothing shared between threads but the start and the join. A pool can do no
//! better than this split, since the agents never talk to each other.

use super::one_thread::check;
use super::start_line::StartLine;
use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

/// Self-send: `workers` agents, each sending itself `start_batch` signals and then one per
/// handled signal until it has sent `message_count`, on `threads` threads; every worker's
/// handled count is checked. The time from the start, once every thread runs, to the last
/// join.
pub fn self_send(
    workers: u64,
    message_count: u64,
    start_batch: u64,
    threads: usize,
) -> Result<Duration, String> {
    let (elapsed, results) = on_threads(&split(workers as usize, threads), |n| {
        self_send_share(n, message_count, start_batch)
    });
    results.into_iter().collect::<Result<(), String>>()?;
    Ok(elapsed)
}

/// Runs `share(n)` for each share `n` on a thread of its own, all started together once
/// every thread runs: the time from that start to the last join, and each share's result.
fn on_threads<R: Send>(
    shares: &[usize],
    share: impl Fn(usize) -> Result<R, String> + Sync,
) -> (Duration, Vec<Result<R, String>>) {
    let line = StartLine::default();
    let (start, results) = std::thread::scope(|s| {
        let handles: Vec<_> = shares
            .iter()
            .map(|&n| {
                let (line, share) = (&line, &share);
                s.spawn(move || {
                    line.ready_and_wait();
                    share(n)
                })
            })
            .collect();
        let start = line.start(handles.len());
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a floor thread panicked".into()))
            })
            .collect();
        (start, results)
    });
    (start.elapsed(), results)
}

fn self_send_share(workers: usize, message_count: u64, start_batch: u64) -> Result<(), String> {
    /// A signal to worker `.0`.
    struct Signal(u32);
    let mut sent = vec![0u64; workers];
    let mut handled = vec![0u64; workers];
    let batch = start_batch.clamp(1, message_count);
    let mut queue = VecDeque::with_capacity(workers * batch as usize);
    for (w, s) in sent.iter_mut().enumerate() {
        for _ in 0..batch {
            queue.push_back(Signal(w as u32));
        }
        *s = batch;
    }
    while let Some(Signal(w)) = queue.pop_front() {
        let w = w as usize;
        handled[w] += 1;
        if sent[w] < message_count {
            sent[w] += 1;
            queue.push_back(Signal(w as u32));
        }
    }
    for h in black_box(&handled) {
        check("signals handled by a worker", *h, message_count)?;
    }
    Ok(())
}

/// 1:N: `messages` numbers delivered to each of `workers` queues (one per subscriber), on
/// `threads` threads each serving its share of the subscribers; each worker's sum is checked.
/// Returns the time from the first delivery to the last worker's check.
pub fn fan_out(workers: u32, messages: u32, threads: usize) -> Result<Duration, String> {
    let (elapsed, results) = on_threads(&split(workers as usize, threads), |n| {
        fan_out_share(n, messages)
    });
    results.into_iter().collect::<Result<(), String>>()?;
    Ok(elapsed)
}

fn fan_out_share(workers: usize, messages: u32) -> Result<(), String> {
    let mut queues: Vec<VecDeque<u32>> = (0..workers)
        .map(|_| VecDeque::with_capacity(messages as usize))
        .collect();
    for i in 0..black_box(messages) {
        for q in &mut queues {
            q.push_back(i);
        }
    }
    let expected = u64::from(messages) * u64::from(messages.saturating_sub(1)) / 2;
    for q in &mut queues {
        let sum: u64 = q.drain(..).map(u64::from).sum();
        check("sum of a worker", black_box(sum), expected)?;
    }
    Ok(())
}

/// `n` items in `parts` shares as equal as possible (no empty share when `n >= parts`).
fn split(n: usize, parts: usize) -> Vec<usize> {
    let parts = parts.clamp(1, n.max(1));
    (0..parts)
        .map(|p| n / parts + usize::from(p < n % parts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_sums() {
        assert_eq!(split(5, 2), vec![3, 2]);
        assert_eq!(split(1, 4), vec![1]);
        self_send(5, 100, 3, 2).unwrap();
        self_send(3, 2, 100, 1).unwrap();
        fan_out(5, 100, 2).unwrap();
    }
}
