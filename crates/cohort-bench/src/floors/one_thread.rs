//! One-thread floors: the scenario's agents as plain state, its messages as a plain enum in
//! one `VecDeque`, handled by a `match` in a loop (what a one-thread dispatcher does, with no
//! type erasure, no allocation per message and no mailbox per agent).

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Ping-pong: `round_trips` ping/pong pairs through one queue; the time from the first ping
/// to the last pong.
pub fn ping_pong(round_trips: u64) -> Result<Duration, String> {
    enum Msg {
        Ping,
        Pong,
    }
    let mut queue = VecDeque::with_capacity(4);
    let (mut left, mut pings) = (black_box(round_trips), 0u64);
    let start = Instant::now();
    queue.push_back(Msg::Ping);
    while let Some(m) = queue.pop_front() {
        match m {
            Msg::Ping => {
                pings += 1;
                queue.push_back(Msg::Pong);
            }
            Msg::Pong => {
                left -= 1;
                if left > 0 {
                    queue.push_back(Msg::Ping);
                }
            }
        }
    }
    let elapsed = start.elapsed();
    check("pings", black_box(pings), round_trips)?;
    Ok(elapsed)
}

/// A ring of `agents`, token `k` starting at agent `k` and making `tokens[k]` hops (the
/// ThreadRing with one token, the ParallelThreadRing with many); every agent counts what it
/// receives, and the counts must add up to the hops.
pub fn ring(agents: u64, tokens: &[u64]) -> Result<Duration, String> {
    struct Hop {
        to: u32,
        left: u64,
    }
    let n = usize::try_from(agents).map_err(|e| e.to_string())?;
    let mut received = vec![0u64; n];
    let mut queue = VecDeque::with_capacity(tokens.len());
    let start = Instant::now();
    for (k, &t) in tokens.iter().enumerate() {
        let to = ((k + 1) % n) as u32;
        queue.push_back(Hop { to, left: t - 1 });
    }
    while let Some(h) = queue.pop_front() {
        let at = h.to as usize;
        received[at] += 1;
        if h.left > 0 {
            let to = if at + 1 == n { 0 } else { at as u32 + 1 };
            queue.push_back(Hop {
                to,
                left: h.left - 1,
            });
        }
    }
    let elapsed = start.elapsed();
    check(
        "hops",
        black_box(&received).iter().sum(),
        tokens.iter().sum(),
    )?;
    Ok(elapsed)
}

/// ProducerConsumer: `shares[p]` values 1..=n from producer `p`, `burst` per turn, the
/// producers taking turns with the consumer through one queue; the consumer's count and sum
/// are checked.
pub fn producer_consumer(shares: &[u64], burst: u64) -> Result<Duration, String> {
    enum Msg {
        Continue(usize),
        Item(u64),
    }
    let mut next: Vec<u64> = vec![1; shares.len()];
    let mut queue = VecDeque::with_capacity(burst as usize + shares.len());
    let (mut count, mut sum) = (0u64, 0u64);
    let start = Instant::now();
    for p in 0..shares.len() {
        queue.push_back(Msg::Continue(p));
    }
    while let Some(m) = queue.pop_front() {
        match m {
            Msg::Continue(p) => {
                let end = shares[p].min(next[p] + burst - 1);
                for v in next[p]..=end {
                    queue.push_back(Msg::Item(v));
                }
                next[p] = end + 1;
                if next[p] <= shares[p] {
                    queue.push_back(Msg::Continue(p));
                }
            }
            Msg::Item(v) => {
                count += 1;
                sum = sum.wrapping_add(v);
            }
        }
    }
    let elapsed = start.elapsed();
    check("messages", black_box(count), shares.iter().sum())?;
    let expected = shares
        .iter()
        .fold(0u64, |a, &n| a.wrapping_add(triangle(n)));
    check("sum", sum, expected)?;
    Ok(elapsed)
}

/// The state-switch scenario's three variants, timed back to back: a self-sent signal
/// handled `count` times without states, switching between two states, and switching
/// between two leaves at depth 2 with six enter/exit hooks per switch.
pub struct StateSwitch {
    pub plain: Duration,
    pub switch: Duration,
    pub nested: Duration,
}

/// Runs the three state-switch loops (see [`StateSwitch`]).
pub fn state_switch(count: u64) -> Result<StateSwitch, String> {
    #[derive(Clone, Copy)]
    enum State {
        A,
        B,
    }
    struct Signal;
    let count = black_box(count);
    // `hooks` 0 runs no hook: the plain and switch loops share the nested one's code path
    // shape without its counters.
    let run = |states: bool, hooks: u64| -> Result<Duration, String> {
        let mut queue = VecDeque::with_capacity(4);
        let (mut state, mut handled, mut in_a, mut hooked) = (State::A, 0u64, 0u64, 0u64);
        let start = Instant::now();
        queue.push_back(Signal);
        while let Some(Signal) = queue.pop_front() {
            handled += 1;
            if states {
                state = match state {
                    State::A => {
                        in_a += 1;
                        State::B
                    }
                    State::B => State::A,
                };
                hooked += hooks;
            }
            if handled < count {
                queue.push_back(Signal);
            }
        }
        let elapsed = start.elapsed();
        check("signals", black_box(handled), count)?;
        if states {
            check("signals in state a", in_a, count.div_ceil(2))?;
            check("hooks run", hooked, hooks * count)?;
        }
        Ok(elapsed)
    };
    Ok(StateSwitch {
        plain: run(false, 0)?,
        switch: run(true, 0)?,
        nested: run(true, 6)?,
    })
}

/// 0 + 1 + ... + n, wrapping (the scenarios' checked sums).
pub fn triangle(n: u64) -> u64 {
    if n.is_multiple_of(2) {
        (n / 2).wrapping_mul(n.wrapping_add(1))
    } else {
        n.wrapping_mul(n.div_ceil(2))
    }
}

/// An error naming what was counted wrong.
pub fn check(what: &str, got: u64, expected: u64) -> Result<(), String> {
    if got == expected {
        Ok(())
    } else {
        Err(format!("floor counted {got} {what}, expected {expected}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_floor_checks_its_result() {
        ping_pong(1_000).unwrap();
        ring(503, &[5_000]).unwrap();
        ring(2, &[3, 1]).unwrap();
        producer_consumer(&[1_000, 999], 7).unwrap();
        state_switch(1_001).unwrap();
        assert_eq!(triangle(4), 10);
        assert!(check("x", 1, 2).unwrap_err().contains("expected 2"));
    }
}
