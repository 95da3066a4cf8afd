//! The CAF-style latency pipeline (caf-latency-benchmarks.txt): chains of agents that pass a
//! message from head to tail (and back, with forth-and-back); the last stage takes the stop
//! time. Serial mode sends the next message when the previous one has arrived; parallel mode
//! has a rate generator (this thread) send at a given rate, one by one or in square-wave
//! batches, to the chain heads in round-robin or random order. Payload none or complex; a
//! per-stage computing time; one stage per chain may run detached (its own thread); latency
//! (head to tail) or cross-times (per hop, by detached or not) tracking; CPU and memory use.

mod payload;
mod pipeline;
mod schedule;

pub use payload::PayloadKind;
pub use pipeline::CrossTimes;
pub use schedule::SendingOrder;

use super::Placement;
use crate::usage::{Sampler, Usage};
use cohort::{ActiveObjBuilder, Environment, Mbox};
use hdrhistogram::Histogram;
use pipeline::{Collected, Collector, Expect, MessageShape, Stage};
use schedule::{HeadPicker, Schedule};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The CAF benchmark's benchmark type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The next message leaves when the previous one has arrived.
    Serial,
    /// Messages leave at a given rate.
    Parallel,
}

/// The CAF benchmark's tracking type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tracking {
    /// Head-to-tail latency only.
    Latency,
    /// Also each hop's latency, by whether a detached stage sent or received it.
    Xtimes,
}

/// The most agents a run may create (chains x stages).
pub const MAX_AGENTS: usize = 1_000_000;
/// The largest string or vector of a complex payload.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 20;
/// The highest rate the generator accepts (messages / s).
pub const MAX_RATE: f64 = 1e8;

/// One pipeline run's parameters.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub mode: Mode,
    pub actors: usize,
    pub chains: usize,
    pub rate: f64,
    pub order: SendingOrder,
    pub batch: u64,
    pub duration: Duration,
    pub payload: PayloadKind,
    pub string_length: usize,
    pub vector_size: usize,
    pub copy: bool,
    pub computing: Duration,
    pub detach: Option<usize>,
    pub forth_and_back: bool,
    pub tracking: Tracking,
    pub placement: Placement,
}

impl Config {
    /// Checks the parameters before anything starts.
    pub fn validate(&self) -> Result<(), String> {
        if self.actors == 0 {
            return Err("--actors must be at least 1".into());
        }
        if self.chains == 0 {
            return Err("--chains must be at least 1".into());
        }
        if self.actors.saturating_mul(self.chains) > MAX_AGENTS {
            return Err(format!(
                "--actors x --chains is {}: at most {MAX_AGENTS} agents",
                self.actors.saturating_mul(self.chains)
            ));
        }
        if !(self.rate.is_finite() && self.rate > 0.0 && self.rate <= MAX_RATE) {
            return Err(format!(
                "--rate must be above 0 and at most {MAX_RATE} messages/s (got {})",
                self.rate
            ));
        }
        if self.duration.is_zero() {
            return Err("--duration must be above 0".into());
        }
        if self.string_length > MAX_PAYLOAD_BYTES || self.vector_size > MAX_PAYLOAD_BYTES {
            return Err(format!(
                "--string-length and --vector-size must be at most {MAX_PAYLOAD_BYTES} bytes"
            ));
        }
        if let Some(d) = self.detach
            && d >= self.actors
        {
            return Err(format!(
                "--detach must name a stage in 0..{} (got {d})",
                self.actors
            ));
        }
        self.placement.validate()
    }
}

/// What one run measured, in the CAF benchmark's terms.
pub struct Outcome {
    /// Head-to-tail latencies (ns).
    pub latency: Histogram<u64>,
    /// Messages the last stages received.
    pub received: u64,
    /// Parallel: the generator's achieved rate (messages / s).
    pub sender_rate: f64,
    /// Parallel: the rate at which the collector received (messages / s); serial: messages
    /// the executor received per second.
    pub receiver_rate: f64,
    /// Serial: run time / (messages x stages), the CAF benchmark's gross latency.
    pub gross_latency: Duration,
    /// Per-hop latency by class (tracking xtimes).
    pub cross: Option<CrossTimes>,
    pub usage: Usage,
}

impl Outcome {
    /// The mean head-to-tail latency (ns).
    pub fn mean_ns(&self) -> f64 {
        self.latency.mean()
    }
}

/// Builds the chains; returns their heads and the collector's mailbox.
fn build(
    env: &Environment,
    cfg: &Config,
    shape: MessageShape,
    out: Arc<Mutex<Option<Collected>>>,
) -> Result<(Vec<Mbox>, Mbox), String> {
    let pool = cfg.placement.binder(env)?;
    let own_threads = ActiveObjBuilder::new()
        .build(env)
        .map_err(|e| e.to_string())?
        .binder();
    let mut coop = env.new_coop();
    coop.reserve(cfg.actors * cfg.chains + 1);
    // The collector first (its mailbox is every tail's target), on a thread of its own; its
    // heads are filled in once the chains exist.
    let collector = coop.add_with_binder(
        Collector::new(cfg.mode, Vec::new(), shape, cfg.duration, out),
        own_threads.clone(),
    );
    let collector_mbox = collector.mbox();
    let mut heads = Vec::with_capacity(cfg.chains);
    for _ in 0..cfg.chains {
        // Built tail first, so each stage knows its next; `prev` links are set after.
        let mut next: Option<Mbox> = None;
        let mut handles = Vec::with_capacity(cfg.actors);
        for i in (0..cfg.actors).rev() {
            let detached = cfg.detach == Some(i);
            let stage = Stage {
                detached,
                prev: None,
                next: next.clone(),
                collector: collector_mbox.clone(),
                forth_and_back: cfg.forth_and_back,
                computing: cfg.computing,
                copy: cfg.copy,
                shape,
            };
            let binder = if detached {
                own_threads.clone()
            } else {
                pool.clone()
            };
            let h = coop.add_with_binder(stage, binder);
            next = Some(h.mbox());
            handles.push(h);
        }
        handles.reverse();
        for i in 1..cfg.actors {
            let prev = handles[i - 1].mbox();
            coop.agent_mut(&handles[i]).prev = Some(prev);
        }
        heads.push(handles[0].mbox());
    }
    coop.agent_mut(&collector).heads = heads.clone();
    env.register_coop(coop).map_err(|e| e.to_string())?;
    Ok((heads, collector_mbox))
}

/// The generator: bursts at the schedule's times until `duration`, to the heads; returns
/// what it sent.
fn generate(cfg: &Config, heads: &[Mbox], shape: MessageShape) -> Expect {
    let schedule = Schedule::new(cfg.rate, cfg.batch);
    let bursts = schedule.bursts(cfg.duration);
    let mut picker = HeadPicker::new(cfg.order, heads.len());
    let t0 = Instant::now();
    let (mut first, mut last) = (t0, t0);
    let mut sent = 0u64;
    for k in 0..bursts {
        let due = t0 + schedule.due(k);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        last = Instant::now();
        if k == 0 {
            first = last;
        }
        for _ in 0..schedule.burst {
            let _ = heads[picker.pick()].send_mut(shape.make(sent));
            sent += 1;
        }
    }
    Expect { sent, first, last }
}

/// (n - burst) / span: the rate between the first and last burst, or NaN for one burst.
fn rate_over(n: u64, burst: u64, first: Instant, last: Instant) -> f64 {
    let span = last.saturating_duration_since(first).as_secs_f64();
    if n <= burst || span == 0.0 {
        f64::NAN
    } else {
        (n - burst) as f64 / span
    }
}

/// Runs one pipeline.
pub fn run_once(cfg: &Config) -> Result<Outcome, String> {
    cfg.validate()?;
    let shape = MessageShape {
        payload: cfg.payload,
        string_length: cfg.string_length,
        vector_size: cfg.vector_size,
        tracking: cfg.tracking,
    };
    let out = Arc::new(Mutex::new(None));
    let env = Environment::builder()
        .start()
        .map_err(|e| format!("environment: {e}"))?;
    let sampler = Sampler::start();
    let (heads, collector) = match build(&env, cfg, shape, out.clone()) {
        Ok(c) => c,
        Err(e) => {
            env.stop();
            env.wait();
            return Err(e);
        }
    };
    if cfg.mode == Mode::Parallel {
        let expect = generate(cfg, &heads, shape);
        let _ = collector.send_mut(expect);
    }
    drop((heads, collector));
    env.wait();
    let usage = sampler.finish();
    drop(env);
    let d = out
        .lock()
        .unwrap()
        .take()
        .ok_or("the pipeline stopped without reporting")?;
    summarise(cfg, d, usage)
}

/// Checks what the collector gathered and turns it into the CAF benchmark's figures.
fn summarise(cfg: &Config, d: Collected, usage: Usage) -> Result<Outcome, String> {
    if d.damaged > 0 {
        return Err(format!(
            "{} of {} payloads arrived damaged",
            d.damaged, d.received
        ));
    }
    let (first, last) = match (d.first, d.last) {
        (Some(f), Some(l)) => (f, l),
        _ => return Err("no message reached the end of a chain".into()),
    };
    let (sender_rate, receiver_rate, gross_latency) = match cfg.mode {
        Mode::Parallel => {
            let e = d.expect.as_ref().ok_or("the generator never reported")?;
            if e.sent != d.received {
                return Err(format!(
                    "the generator sent {} messages, {} arrived",
                    e.sent, d.received
                ));
            }
            let burst = Schedule::new(cfg.rate, cfg.batch).burst;
            (
                rate_over(e.sent, burst, e.first, e.last),
                rate_over(d.received, burst, first, last),
                Duration::ZERO,
            )
        }
        Mode::Serial => {
            let (started, sent) = d.serial.ok_or("the executor never started")?;
            if sent != d.received {
                return Err(format!(
                    "the executor sent {sent} messages, {} arrived",
                    d.received
                ));
            }
            let run = last.saturating_duration_since(started);
            let rate = d.received as f64 / run.as_secs_f64();
            let gross = run.div_f64((d.received as f64) * cfg.actors as f64);
            (rate, rate, gross)
        }
    };
    Ok(Outcome {
        latency: d.histogram,
        received: d.received,
        sender_rate,
        receiver_rate,
        gross_latency,
        cross: (cfg.tracking == Tracking::Xtimes).then_some(d.cross),
        usage,
    })
}

/// The CAF benchmark's parameters: 12 stages, one chain, 1,000 messages / s to the heads in
/// round-robin for 100 s, no payload (its example run); a complex payload has a 16-character
/// string and a 500-byte vector (its configuration file).
pub const CAF_RUN: Config = Config {
    mode: Mode::Parallel,
    actors: 12,
    chains: 1,
    rate: 1000.0,
    order: SendingOrder::RoundRobin,
    batch: 0,
    duration: Duration::from_secs(100),
    payload: PayloadKind::None,
    string_length: 16,
    vector_size: 500,
    copy: false,
    computing: Duration::ZERO,
    detach: None,
    forth_and_back: false,
    tracking: Tracking::Latency,
    placement: Placement {
        dispatcher: super::Dispatcher::WorkStealing,
        threads: 2,
        fifo: None,
        max_demands: 4,
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::Dispatcher;

    fn small(mode: Mode) -> Config {
        Config {
            mode,
            actors: 4,
            duration: Duration::from_millis(100),
            rate: 2000.0,
            ..CAF_RUN
        }
    }

    #[test]
    fn serial_pipeline_delivers_every_message() {
        let cfg = Config {
            chains: 2,
            ..small(Mode::Serial)
        };
        let o = crate::watchdog::within(20, move || run_once(&cfg)).unwrap();
        assert!(o.received > 0);
        assert_eq!(o.latency.len(), o.received);
        assert!(o.receiver_rate > 0.0);
        assert!(o.gross_latency > Duration::ZERO);
    }

    #[test]
    fn parallel_pipeline_delivers_what_the_generator_sent() {
        let cfg = Config {
            chains: 3,
            order: SendingOrder::Random,
            batch: 10,
            payload: PayloadKind::Complex,
            tracking: Tracking::Xtimes,
            detach: Some(2),
            forth_and_back: true,
            ..small(Mode::Parallel)
        };
        let o = crate::watchdog::within(20, move || run_once(&cfg)).unwrap();
        // 100 ms at 2,000 / s in bursts of 10: 20 bursts.
        assert_eq!(o.received, 200);
        let cross = o.cross.unwrap();
        // Forth and back over 4 stages, the third detached: 6 hops, 2 into and 2 out of it.
        assert_eq!(cross.detached_receive.1, 2 * 200);
        assert_eq!(cross.detached_send.1, 2 * 200);
        assert_eq!(cross.not_detached.1, 2 * 200);
    }

    #[test]
    fn copying_payloads_on_one_thread_works() {
        let cfg = Config {
            copy: true,
            payload: PayloadKind::Complex,
            placement: Placement::of(Dispatcher::OneThread),
            ..small(Mode::Parallel)
        };
        let o = crate::watchdog::within(20, move || run_once(&cfg)).unwrap();
        assert_eq!(o.received, 200);
    }

    #[test]
    fn impossible_parameters_are_refused() {
        for (cfg, flag) in [
            (
                Config {
                    actors: 0,
                    ..CAF_RUN
                },
                "--actors",
            ),
            (
                Config {
                    chains: 0,
                    ..CAF_RUN
                },
                "--chains",
            ),
            (
                Config {
                    rate: 0.0,
                    ..CAF_RUN
                },
                "--rate",
            ),
            (
                Config {
                    detach: Some(12),
                    ..CAF_RUN
                },
                "--detach",
            ),
            (
                Config {
                    vector_size: usize::MAX,
                    ..CAF_RUN
                },
                "--vector-size",
            ),
            (
                Config {
                    duration: Duration::ZERO,
                    ..CAF_RUN
                },
                "--duration",
            ),
        ] {
            let e = run_once(&cfg).err().unwrap();
            assert!(e.contains(flag), "{e}");
        }
    }
}
