//! What every peer port shares: the command line, the expected results, the timing marks and
//! the JSON line each run prints.
//!
//! A port binary is called as `peer-<framework> <scenario> [--flag N]...` and prints one line:
//! `{"framework":"actix","scenario":"skynet","elapsed_s":1.23,"messages":1111111,"ok":true}`
//! (with `"ok":false,"error":"..."` instead when the result is wrong). The exit status is 0 when
//! the result was checked correct, 1 when it was wrong, 2 on bad usage.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The scenarios every port runs, by their command-line names.
pub const SCENARIOS: [&str; 11] = [
    "ping-pong-one-thread",
    "ping-pong-two-threads",
    "skynet",
    "thread-ring",
    "parallel-thread-ring",
    "counting-actor",
    "fan-out",
    "self-send",
    "async-ask-one-thread",
    "async-ask-two-threads",
    "async-ask-thread-per-actor",
];

/// A comparison scenario (see cohort's crates/cohort-bench/src/scenarios/ for each topology).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Two actors exchange signals on one thread; `count` round trips.
    PingPongOneThread,
    /// The same with the two actors on two threads.
    PingPongTwoThreads,
    /// A tree of actors with `leaves` leaves, branching 10; each leaf sends its ordinal up.
    Skynet,
    /// One token makes `hops` hops round a ring of `agents` actors.
    ThreadRing,
    /// `tokens` tokens make `hops` hops in all round a ring of `agents` actors.
    ParallelThreadRing,
    /// A plain thread sends `count` numbers to one counting actor.
    CountingActor,
    /// One producer sends `messages` numbers to each of `workers` actors.
    FanOut,
    /// `workers` actors each send themselves `message_count` signals, one in flight.
    SelfSend,
    /// One actor asks another `count` times, one ask at a time, awaiting each reply in the
    /// framework's own ask (a reply future); both on one thread.
    AsyncAskOneThread,
    /// The same on two threads that the framework's runtime shares out (a 2-worker tokio
    /// runtime; actix, which has none, puts the answerer on an arbiter of its own).
    AsyncAskTwoThreads,
    /// The same with the answerer on a thread of its own (not ported to ractor, which cannot
    /// place an actor on a thread).
    AsyncAskThreadPerActor,
}

impl Scenario {
    /// The scenario named `name` on the command line.
    pub fn parse(name: &str) -> Option<Self> {
        let all = [
            Self::PingPongOneThread,
            Self::PingPongTwoThreads,
            Self::Skynet,
            Self::ThreadRing,
            Self::ParallelThreadRing,
            Self::CountingActor,
            Self::FanOut,
            Self::SelfSend,
            Self::AsyncAskOneThread,
            Self::AsyncAskTwoThreads,
            Self::AsyncAskThreadPerActor,
        ];
        SCENARIOS.iter().position(|&n| n == name).map(|i| all[i])
    }

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        SCENARIOS[self as usize]
    }
}

/// The sizes of a run (each a `--flag N`; defaults are the seeds' full sizes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    /// Ping-pong round trips, or the messages of CountingActor.
    pub count: u64,
    /// Skynet's leaves (a power of `branching`).
    pub leaves: u64,
    /// Skynet's children per node.
    pub branching: u64,
    /// Actors in the ring.
    pub agents: u64,
    /// Hops in all (ThreadRing and ParallelThreadRing).
    pub hops: u64,
    /// Tokens of ParallelThreadRing.
    pub tokens: u64,
    /// Workers of fan-out (default 100) and self-send (default 50).
    pub workers: u64,
    /// Messages the fan-out producer sends to each worker.
    pub messages: u64,
    /// Signals each self-send worker handles.
    pub message_count: u64,
    /// Signals each self-send worker sends itself at start.
    pub start_batch: u64,
    /// Async ask: 1 times each round trip (the latency rows), 0 reads no clock per round
    /// trip (the throughput rows).
    pub timed: u64,
}

impl Sizes {
    fn defaults(s: Scenario) -> Self {
        Self {
            count: match s {
                Scenario::CountingActor => 3_000_000,
                Scenario::AsyncAskOneThread
                | Scenario::AsyncAskTwoThreads
                | Scenario::AsyncAskThreadPerActor => 200_000,
                _ => 1_000_000,
            },
            leaves: 1_000_000,
            branching: 10,
            agents: 503,
            hops: 10_000_000,
            tokens: 503,
            workers: if s == Scenario::SelfSend { 50 } else { 100 },
            messages: 100_000,
            message_count: 1_000_000,
            start_batch: 1,
            timed: 1,
        }
    }

    /// The messages a run of `s` handles in all (what its rate is computed from).
    pub fn messages_of(&self, s: Scenario) -> u64 {
        match s {
            Scenario::PingPongOneThread | Scenario::PingPongTwoThreads => 2 * self.count,
            Scenario::Skynet => skynet_actors(self.leaves, self.branching),
            Scenario::ThreadRing | Scenario::ParallelThreadRing => self.hops,
            Scenario::CountingActor => self.count,
            Scenario::FanOut => self.workers * self.messages,
            Scenario::SelfSend => self.workers * self.message_count,
            Scenario::AsyncAskOneThread
            | Scenario::AsyncAskTwoThreads
            | Scenario::AsyncAskThreadPerActor => self.count,
        }
    }

    fn validate(&self, s: Scenario) -> Result<(), String> {
        let positive = [
            ("count", self.count),
            ("agents", self.agents),
            ("hops", self.hops),
            ("tokens", self.tokens),
            ("workers", self.workers),
            ("messages", self.messages),
            ("message-count", self.message_count),
            ("start-batch", self.start_batch),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("--{name} must be at least 1"));
        }
        match s {
            Scenario::Skynet => {
                if self.branching < 2 {
                    return Err("--branching must be at least 2".into());
                }
                let mut n = self.leaves;
                while n > 1 && n.is_multiple_of(self.branching) {
                    n /= self.branching;
                }
                if n != 1 || self.leaves < self.branching {
                    return Err(format!(
                        "--leaves ({}) must be a power of --branching ({})",
                        self.leaves, self.branching
                    ));
                }
            }
            Scenario::ThreadRing if self.agents < 2 => {
                return Err("--agents must be at least 2".into());
            }
            Scenario::ParallelThreadRing => {
                if self.tokens > self.agents {
                    return Err("--tokens must be at most --agents".into());
                }
                split_hops(self.hops, self.tokens)?;
            }
            Scenario::SelfSend if self.start_batch > self.message_count => {
                return Err("--start-batch must be at most --message-count".into());
            }
            _ => {}
        }
        Ok(())
    }
}

/// What one checked run measured.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The measured time (what it spans is documented per scenario in the port's README).
    pub elapsed: Duration,
    /// The messages handled (checked against [`Sizes::messages_of`]).
    pub messages: u64,
}

/// The actors of a skynet tree: leaves + leaves / b + ... + 1.
pub fn skynet_actors(leaves: u64, branching: u64) -> u64 {
    let (mut n, mut total) = (leaves, 0);
    while n >= 1 {
        total += n;
        if n == 1 {
            break;
        }
        n /= branching;
    }
    total
}

/// 0 + 1 + ... + (leaves - 1): skynet's result (499999500000 for a million leaves).
pub fn skynet_sum(leaves: u64) -> u64 {
    leaves * (leaves - 1) / 2
}

/// 1 + 2 + ... + n, wrapping (CountingActor's checked total).
pub fn counting_sum(n: u64) -> u64 {
    let (a, b) = if n.is_multiple_of(2) {
        (n / 2, n.wrapping_add(1))
    } else {
        (n, n.div_ceil(2))
    };
    a.wrapping_mul(b)
}

/// ParallelThreadRing's hop split, as cohort's: `tokens - 1` tokens of ceil(hops / tokens),
/// the last the rest; the most even split where that leaves the last token nothing.
pub fn split_hops(hops: u64, tokens: u64) -> Result<Vec<u64>, String> {
    if tokens == 0 || hops < tokens {
        return Err(format!(
            "--hops ({hops}) must be at least --tokens ({tokens}) and --tokens at least 1"
        ));
    }
    let each = hops.div_ceil(tokens);
    Ok(
        match hops.checked_sub(each * (tokens - 1)).filter(|&l| l > 0) {
            Some(last) => {
                let mut v = vec![each; tokens as usize - 1];
                v.push(last);
                v
            }
            None => (0..tokens)
                .map(|k| hops / tokens + u64::from(k < hops % tokens))
                .collect(),
        },
    )
}

/// The start and end of a measured span, marked from any thread (the first mark wins).
#[derive(Debug, Default)]
pub struct Marks {
    start: OnceLock<Instant>,
    end: OnceLock<Instant>,
}

impl Marks {
    /// Marks the start (only the first call counts).
    pub fn start(&self) {
        self.start.get_or_init(Instant::now);
    }

    /// Marks the end (only the first call counts).
    pub fn end(&self) {
        self.end.get_or_init(Instant::now);
    }

    /// The marked span, or an error naming the missing mark.
    pub fn elapsed(&self) -> Result<Duration, String> {
        match (self.start.get(), self.end.get()) {
            (Some(s), Some(e)) => Ok(e.saturating_duration_since(*s)),
            (None, _) => Err("the run never marked its start".into()),
            (_, None) => Err("the run never finished".into()),
        }
    }
}

/// The latency of each round trip of a run, in nanoseconds, kept for the JSON line's
/// `p50_ns` and `p99_ns` (set once, by the scenarios that time each round trip).
static LATENCY: OnceLock<(u64, u64)> = OnceLock::new();

/// Records the run's round-trip latencies (nanoseconds, any order) for its JSON line.
pub fn record_latencies(mut ns: Vec<u64>) {
    if ns.is_empty() {
        return;
    }
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len()) - 1];
    let _ = LATENCY.set((at(0.5), at(0.99)));
}

/// What the asker of an async-ask run measured: the span of its asks, each round trip's
/// latency in nanoseconds, and the sum of the replies.
#[derive(Debug, Default)]
pub struct AskRun {
    /// Whether each round trip is timed (`--timed 1`).
    pub timed: bool,
    /// From before the first ask to after the last reply.
    pub elapsed: Duration,
    /// One per round trip.
    pub latencies_ns: Vec<u64>,
    /// The replies added up.
    pub sum: u64,
}

impl AskRun {
    /// A run that times each round trip when `timed` (its vector sized for `count`).
    pub fn new(count: u64, timed: bool) -> Self {
        Self {
            timed,
            latencies_ns: Vec::with_capacity(if timed { count as usize } else { 0 }),
            ..Default::default()
        }
    }

    /// A round trip's start: the clock when this run times round trips.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        self.timed.then(Instant::now)
    }

    /// A round trip's end: its latency kept when it was timed.
    #[inline]
    pub fn stop(&mut self, started: Option<Instant>) {
        if let Some(t) = started {
            self.latencies_ns.push(t.elapsed().as_nanos() as u64);
        }
    }
}

/// The question of ask `i` and its expected reply: asks `0..count` are answered with twice
/// the question, so the replies add up to `count * (count - 1)`.
pub fn ask_reply(question: u64) -> u64 {
    2 * question
}

/// Checks an async-ask run of `count` asks, records its latencies for the JSON line, and
/// gives its outcome (one message per round trip).
pub fn ask_outcome(count: u64, run: AskRun) -> Result<Outcome, String> {
    check("sum of the replies", run.sum, count * (count - 1))?;
    let expected = if run.timed { count } else { 0 };
    check("round trips timed", run.latencies_ns.len() as u64, expected)?;
    record_latencies(run.latencies_ns);
    Ok(Outcome {
        elapsed: run.elapsed,
        messages: count,
    })
}

/// Checks a result: `Err` with both values when they differ.
pub fn check(what: &str, got: u64, expected: u64) -> Result<(), String> {
    if got == expected {
        Ok(())
    } else {
        Err(format!("wrong {what}: {got}, expected {expected}"))
    }
}

fn parse_args(args: &[String]) -> Result<(Scenario, Sizes), String> {
    let name = args.first().ok_or_else(usage)?;
    let scenario =
        Scenario::parse(name).ok_or_else(|| format!("unknown scenario {name:?}\n{}", usage()))?;
    let mut sizes = Sizes::defaults(scenario);
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n: u64 = value
            .replace('_', "")
            .parse()
            .map_err(|_| format!("{flag} takes a whole number, not {value:?}"))?;
        let slot = match flag.as_str() {
            "--count" => &mut sizes.count,
            "--leaves" => &mut sizes.leaves,
            "--branching" => &mut sizes.branching,
            "--agents" => &mut sizes.agents,
            "--hops" => &mut sizes.hops,
            "--tokens" => &mut sizes.tokens,
            "--workers" => &mut sizes.workers,
            "--messages" => &mut sizes.messages,
            "--message-count" => &mut sizes.message_count,
            "--start-batch" => &mut sizes.start_batch,
            "--timed" => &mut sizes.timed,
            _ => return Err(format!("unknown flag {flag}\n{}", usage())),
        };
        *slot = n;
    }
    sizes.validate(scenario)?;
    Ok((scenario, sizes))
}

fn usage() -> String {
    format!(
        "usage: <scenario> [--count N] [--leaves N] [--branching N] [--agents N] [--hops N] \
         [--tokens N] [--workers N] [--messages N] [--message-count N] [--start-batch N] [--timed 0|1]\n\
         scenarios: {}",
        SCENARIOS.join(", ")
    )
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The JSON line of one run.
pub fn json_line(framework: &str, scenario: Scenario, result: &Result<Outcome, String>) -> String {
    let head = format!(
        "{{\"framework\":{},\"scenario\":{}",
        json_string(framework),
        json_string(scenario.name())
    );
    match result {
        Ok(o) => {
            let latency = LATENCY
                .get()
                .map(|(p50, p99)| format!(",\"p50_ns\":{p50},\"p99_ns\":{p99}"))
                .unwrap_or_default();
            format!(
                "{head},\"elapsed_s\":{},\"messages\":{}{latency},\"ok\":true}}",
                o.elapsed.as_secs_f64(),
                o.messages
            )
        }
        Err(e) => format!("{head},\"ok\":false,\"error\":{}}}", json_string(e)),
    }
}

/// A port's `main`: parses the command line, runs the scenario once with `run`, checks the
/// message count, prints the JSON line and exits (0 ok, 1 wrong result, 2 bad usage).
pub fn main(framework: &str, run: impl FnOnce(Scenario, &Sizes) -> Result<Outcome, String>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (scenario, sizes) = match parse_args(&args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("peer-{framework}: {e}");
            std::process::exit(2);
        }
    };
    let result = run(scenario, &sizes)
        .and_then(|o| check("message count", o.messages, sizes.messages_of(scenario)).map(|()| o));
    println!("{}", json_line(framework, scenario, &result));
    std::process::exit(if result.is_ok() { 0 } else { 1 });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn sums_and_sizes() {
        assert_eq!(skynet_sum(1_000_000), 499_999_500_000);
        assert_eq!(skynet_actors(1_000_000, 10), 1_111_111);
        assert_eq!(counting_sum(4), 10);
        assert_eq!(split_hops(50_000_000, 503).unwrap()[502], 99_192);
        assert_eq!(split_hops(20_000, 503).unwrap().iter().sum::<u64>(), 20_000);
    }

    #[test]
    fn parses_and_rejects() {
        let (s, z) = parse_args(&args("skynet --leaves 1000")).unwrap();
        assert_eq!((s, z.leaves), (Scenario::Skynet, 1000));
        assert!(parse_args(&args("skynet --leaves 999")).is_err());
        assert!(parse_args(&args("nope")).is_err());
        assert!(parse_args(&args("fan-out --workers 0")).is_err());
        assert!(parse_args(&args("fan-out --bogus 1")).is_err());
    }

    #[test]
    fn json_lines() {
        let ok = Ok(Outcome {
            elapsed: Duration::from_millis(1500),
            messages: 7,
        });
        assert_eq!(
            json_line("x", Scenario::FanOut, &ok),
            r#"{"framework":"x","scenario":"fan-out","elapsed_s":1.5,"messages":7,"ok":true}"#
        );
        let bad = Err("wrong \"sum\"".to_string());
        assert!(json_line("x", Scenario::Skynet, &bad).ends_with(r#""error":"wrong \"sum\""}"#));
    }
}
