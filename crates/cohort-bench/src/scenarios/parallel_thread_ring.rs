//! ParallelThreadRing (theron-performance.txt, ParallelThreadRing): the ThreadRing's ring of
//! 503 agents with 503 tokens travelling at once, token `k` starting at agent `k`. The total
//! hop count is split among the tokens as Theron does: every token but the last makes
//! ceil(hops / tokens) hops, the last the rest (50,000,000 over 503: 502 x 99,404 + 99,192;
//! where that leaves the last token nothing, the most even split).
//! Measures the cost of many agents sending at the same time (contention on queues, the
//! pool's run queue, memory): hops / s.

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use super::thread_ring::{self, Outcome};

/// Theron's hop split: `tokens - 1` tokens of ceil(hops / tokens) hops, the last the rest.
/// When that leaves the last token nothing (e.g. 20,000 hops over 503 tokens: 502 x 40 >
/// 20,000), the most even split instead: hops % tokens tokens of one hop more than the rest.
pub fn split(hops: u64, tokens: u64) -> Result<Vec<u64>, String> {
    if tokens == 0 {
        return Err("--tokens must be at least 1".into());
    }
    if hops < tokens {
        return Err(format!(
            "--hops ({hops}) must be at least --tokens ({tokens}): every token makes a hop"
        ));
    }
    let each = hops.div_ceil(tokens);
    match hops.checked_sub(each * (tokens - 1)).filter(|&l| l > 0) {
        Some(last) => {
            let mut v = vec![each; tokens as usize - 1];
            v.push(last);
            Ok(v)
        }
        None => Ok((0..tokens)
            .map(|k| hops / tokens + u64::from(k < hops % tokens))
            .collect()),
    }
}

/// Checks the parameters.
pub fn validate(agents: u64, tokens: u64, hops: u64) -> Result<Vec<u64>, String> {
    thread_ring::validate(agents, hops)?;
    if tokens > agents {
        return Err(format!(
            "--tokens ({tokens}) must be at most --agents ({agents}): one token starts at each agent"
        ));
    }
    split(hops, tokens)
}

/// Runs one ParallelThreadRing.
pub fn run_once(
    agents: u64,
    tokens: u64,
    hops: u64,
    placement: Placement,
) -> Result<Outcome, String> {
    let split = validate(agents, tokens, hops)?;
    thread_ring::run_ring(agents, &split, placement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theron_split() {
        let s = split(50_000_000, 503).unwrap();
        assert_eq!(s.len(), 503);
        assert!(s[..502].iter().all(|&h| h == 99_404));
        assert_eq!(s[502], 99_192);
        assert_eq!(split(10, 1).unwrap(), vec![10]);
        assert_eq!(split(10, 4).unwrap(), vec![3, 3, 3, 1]);
        assert_eq!(split(5, 4).unwrap(), vec![2, 1, 1, 1]);
        let s = split(20_000, 503).unwrap();
        assert_eq!(s.iter().sum::<u64>(), 20_000);
        assert!(s.iter().all(|&h| h == 39 || h == 40));
        assert!(split(3, 4).is_err());
        assert!(split(3, 0).is_err());
    }

    #[test]
    fn counts_every_hop() {
        for p in [
            Placement::of(Dispatcher::OneThread),
            Placement::of(Dispatcher::ThreadPool).fifo(super::super::FifoArg::Individual),
            Placement::of(Dispatcher::WorkStealing),
        ] {
            let o = crate::watchdog::within(20, move || run_once(503, 503, 20_000, p)).unwrap();
            assert_eq!(o.hops, 20_000);
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        let p = Placement::of(Dispatcher::OneThread);
        assert!(run_once(1, 1, 10, p).unwrap_err().contains("--agents"));
        assert!(run_once(503, 0, 1_000, p).unwrap_err().contains("--tokens"));
        assert!(run_once(10, 11, 1_000, p).unwrap_err().contains("--tokens"));
        assert!(run_once(503, 503, 0, p).unwrap_err().contains("--hops"));
        assert!(run_once(503, 503, 100, p).unwrap_err().contains("--hops"));
        assert!(run_once(503, 503, 502, p).unwrap_err().contains("--hops"));
    }
}
