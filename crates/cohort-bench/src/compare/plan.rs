//! The compared scenarios: for each, the cohort-bench command that runs it on cohort and the
//! peer command line (peers/rust/common/src/lib.rs and peers/caf/main.cpp parse it), at the
//! same sizes and on the same number of threads.

/// One compared scenario at one size.
#[derive(Debug, Clone)]
pub struct Case {
    /// The peer binaries' scenario name.
    pub id: &'static str,
    /// What runs where, in words.
    pub title: &'static str,
    /// cohort-bench's arguments for one run of it on cohort (`--runs 1 --json` is added).
    pub cohort: Vec<String>,
    /// The peers' arguments (scenario name first).
    pub peer: Vec<String>,
    /// Messages handled in one run (rates are computed from it).
    pub messages: u64,
    /// What it measures and who runs it.
    pub kind: Kind,
}

/// What a case measures and which frameworks run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// In one process, every framework: the run's elapsed time (shown as messages / s).
    Local,
    /// Two processes on loopback, cohort and the peers with a remote port: the round's
    /// elapsed time (shown as messages / s).
    Remote,
    /// Two processes, one ping in flight: the round trip's median (lower is better).
    RoundTripP50,
    /// In one process, cohort and the Rust peers: asks one at a time, the run's elapsed time
    /// (shown as round trips / s).
    Ask,
    /// The same asks: one run's round-trip latency at a percentile (50 or 99; lower is
    /// better).
    Latency(u8),
}

/// The sizes of a comparison.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    ping_pong: u64,
    ping_pong_threads: u64,
    leaves: u64,
    hops: u64,
    counting: u64,
    fan_out: (u64, u64),
    self_send: (u64, u64),
    asks: u64,
}

/// `--quick`: every case in seconds per framework (skynet keeps its million leaves).
const QUICK: Sizes = Sizes {
    ping_pong: 200_000,
    ping_pong_threads: 20_000,
    leaves: 1_000_000,
    hops: 1_000_000,
    counting: 1_000_000,
    fan_out: (100, 20_000),
    self_send: (50, 100_000),
    asks: 50_000,
};

/// The default: the sizes of the source benchmarks.
const FULL: Sizes = Sizes {
    ping_pong: 1_000_000,
    ping_pong_threads: 100_000,
    leaves: 1_000_000,
    hops: 10_000_000,
    counting: 3_000_000,
    fan_out: (100, 100_000),
    self_send: (50, 1_000_000),
    asks: 200_000,
};

/// CI's smoke size: every port runs every scenario, correct result checked.
const TINY: Sizes = Sizes {
    ping_pong: 1_000,
    ping_pong_threads: 100,
    leaves: 1_000,
    hops: 10_000,
    counting: 10_000,
    fan_out: (10, 100),
    self_send: (5, 1_000),
    asks: 100,
};

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Which sizes to compare at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// The sizes of the source benchmarks.
    Full,
    /// Reduced sizes (`--quick`).
    Quick,
    /// Tiny sizes: a correctness smoke test, never a measurement (`--tiny`).
    Tiny,
}

/// Every compared case at `size`.
pub fn cases(size: Size) -> Vec<Case> {
    let z = match size {
        Size::Full => FULL,
        Size::Quick => QUICK,
        Size::Tiny => TINY,
    };
    let n = |v: u64| v.to_string();
    let (pp, ppt, leaves, hops, count) = (
        n(z.ping_pong),
        n(z.ping_pong_threads),
        n(z.leaves),
        n(z.hops),
        n(z.counting),
    );
    let (fw, fm) = (n(z.fan_out.0), n(z.fan_out.1));
    let (sw, sm) = (n(z.self_send.0), n(z.self_send.1));
    let tree = {
        let (mut l, mut t) = (z.leaves, 0);
        while l >= 1 {
            t += l;
            if l == 1 {
                break;
            }
            l /= 10;
        }
        t
    };
    let mut out = vec![
        Case {
            id: "ping-pong-one-thread",
            title: "ping-pong, both actors on one thread",
            cohort: args(&["ping-pong", "--dispatcher", "one-thread", "--count", &pp]),
            peer: args(&["ping-pong-one-thread", "--count", &pp]),
            messages: 2 * z.ping_pong,
            kind: Kind::Local,
        },
        Case {
            id: "ping-pong-two-threads",
            title: "ping-pong, a thread per actor",
            cohort: args(&["ping-pong", "--dispatcher", "active-obj", "--count", &ppt]),
            peer: args(&["ping-pong-two-threads", "--count", &ppt]),
            messages: 2 * z.ping_pong_threads,
            kind: Kind::Local,
        },
        Case {
            id: "skynet",
            title: "skynet, branching 10, one thread, teardown included",
            cohort: args(&["skynet", "--dispatcher", "one-thread", "--leaves", &leaves]),
            peer: args(&["skynet", "--leaves", &leaves]),
            messages: tree,
            kind: Kind::Local,
        },
        Case {
            id: "thread-ring",
            title: "ThreadRing, 503 actors, one token, one thread",
            cohort: args(&["thread-ring", "--dispatcher", "one-thread", "--hops", &hops]),
            peer: args(&["thread-ring", "--hops", &hops]),
            messages: z.hops,
            kind: Kind::Local,
        },
        Case {
            id: "parallel-thread-ring",
            title: "ParallelThreadRing, 503 actors, 503 tokens, one thread",
            cohort: args(&[
                "parallel-thread-ring",
                "--dispatcher",
                "one-thread",
                "--hops",
                &hops,
            ]),
            peer: args(&["parallel-thread-ring", "--hops", &hops]),
            messages: z.hops,
            kind: Kind::Local,
        },
        Case {
            id: "counting-actor",
            title: "CountingActor, a plain thread floods one actor",
            cohort: args(&["counting-actor", "--count", &count]),
            peer: args(&["counting-actor", "--count", &count]),
            messages: z.counting,
            kind: Kind::Local,
        },
        Case {
            id: "fan-out",
            title: "1:N, producer thread + workers' thread",
            cohort: args(&["fan-out", "--workers", &fw, "--messages", &fm]),
            peer: args(&["fan-out", "--workers", &fw, "--messages", &fm]),
            messages: z.fan_out.0 * z.fan_out.1,
            kind: Kind::Local,
        },
        Case {
            id: "self-send",
            title: "self-send bulk, 2 threads",
            // cohort's fastest setting for a bulk of self-sends (docs/BENCHMARKS.md,
            // self-send grids): work_stealing, up to 100 demands per turn. The suite's
            // `self-send` default (thread_pool, max_demands_at_once 4) reproduces the article's setting.
            cohort: args(&[
                "self-send",
                "--dispatcher",
                "work-stealing",
                "--max-demands",
                "100",
                "--workers",
                &sw,
                "--message-count",
                &sm,
            ]),
            peer: args(&["self-send", "--workers", &sw, "--message-count", &sm]),
            messages: z.self_send.0 * z.self_send.1,
            kind: Kind::Local,
        },
    ];
    out.extend(ask_cases(z.asks));
    out
}

/// The async-ask rows: one actor asks another, one ask at a time, the reply coming back as
/// an event (cohort's `Context::request`) or a reply future awaited in the asker's handler
/// (the peers' `ask`, `call!`, `ResponseFuture`); no timeout on any side. Round trips per
/// second (a run that reads no clock per round trip), then the p50 and p99 round trip (a
/// run each, every round trip timed), for each layout: one thread; two threads that
/// the runtime shares out (cohort's `thread_pool`, the peers' 2-worker tokio runtime); the
/// answerer on a thread of its own.
fn ask_cases(asks: u64) -> Vec<Case> {
    /// A layout's rows: round trips/s, p50, p99 (ids and titles).
    macro_rules! rows {
        ($id:literal, $what:literal) => {
            [
                (Kind::Ask, $id, concat!("async ask, ", $what)),
                (
                    Kind::Latency(50),
                    concat!($id, "-p50"),
                    concat!("async ask p50, ", $what),
                ),
                (
                    Kind::Latency(99),
                    concat!($id, "-p99"),
                    concat!("async ask p99, ", $what),
                ),
            ]
        };
    }
    /// Threads and layout of `cohort-bench async-ask`, then the layout's rows.
    type Layout = (
        &'static str,
        &'static str,
        [(Kind, &'static str, &'static str); 3],
    );
    const LAYOUTS: [Layout; 3] = [
        (
            "1",
            "dedicated",
            rows!("async-ask-one-thread", "one thread"),
        ),
        (
            "2",
            "pool",
            rows!(
                "async-ask-two-threads",
                "two threads the runtime shares out"
            ),
        ),
        (
            "2",
            "dedicated",
            rows!(
                "async-ask-thread-per-actor",
                "the answerer on a thread of its own"
            ),
        ),
    ];
    let count = asks.to_string();
    let mut out = Vec::new();
    for (threads, layout, rows) in LAYOUTS {
        let cohort = args(&[
            "async-ask",
            "--threads",
            threads,
            "--layout",
            layout,
            "--count",
            &count,
            "--timeout-ms",
            "0",
        ]);
        let peer = args(&[rows[0].1, "--count", &count]);
        for (kind, id, title) in rows {
            // The throughput row reads no clock per round trip on any side (two reads are
            // a large share of a one-thread ask); the latency rows time every round trip.
            let (mut cohort, mut peer) = (cohort.clone(), peer.clone());
            if kind == Kind::Ask {
                cohort.push("--untimed".into());
                peer.extend(args(&["--timed", "0"]));
            }
            out.push(Case {
                id,
                title,
                cohort,
                peer,
                messages: asks,
                kind,
            });
        }
    }
    out
}

/// Whether `framework` has a port of case `id` (ractor cannot place an actor on a thread of
/// its own).
pub fn ported(framework: &str, id: &str) -> bool {
    !(framework == "ractor" && id.starts_with("async-ask-thread-per-actor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_has_every_case() {
        for size in [Size::Full, Size::Quick, Size::Tiny] {
            let c = cases(size);
            assert_eq!(c.len(), 17);
            assert!(
                c.iter()
                    .all(|c| c.id.starts_with(&c.peer[0]) && c.messages > 0)
            );
        }
        assert!(!ported("ractor", "async-ask-thread-per-actor-p99"));
        assert!(
            ported("ractor", "async-ask-two-threads")
                && ported("kameo", "async-ask-thread-per-actor")
        );
        let full = cases(Size::Full);
        assert_eq!(full[2].messages, 1_111_111);
        assert_eq!(full[6].messages, 10_000_000);
        assert_eq!(full[7].messages, 50_000_000);
    }

    /// The ask's throughput rows read no clock per round trip on any side; its latency rows
    /// time every round trip on every side (a row that timed one side only would compare
    /// the clock, not the asks).
    #[test]
    fn ask_throughput_rows_run_untimed_on_every_side() {
        let asks = ask_cases(1_000);
        assert_eq!(asks.len(), 9);
        for c in &asks {
            let cohort_untimed = c.cohort.iter().any(|a| a == "--untimed");
            let peer_untimed = c.peer.windows(2).any(|w| w[0] == "--timed" && w[1] == "0");
            let throughput = c.kind == Kind::Ask;
            assert_eq!(
                (cohort_untimed, peer_untimed),
                (throughput, throughput),
                "{}",
                c.id
            );
        }
    }
}
