//! The pipeline's agents (caf-latency-benchmarks.txt, "Benchmark actor", "Executor actor"):
//! stages that know their previous and next stage and pass a message forth (and back), and
//! the collector, which takes what the last stage measured and, in serial mode, sends the
//! next message when the previous one has arrived.

use super::payload::{Payload, PayloadKind};
use super::{Mode, Tracking};
use cohort::{Agent, Context, DefineError, Mbox};
use hdrhistogram::Histogram;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Cross-time classes (the CAF benchmark's XTIMES columns).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CrossTimes {
    /// (nanoseconds, hops) from a detached stage to a pooled one.
    pub detached_send: (u64, u64),
    /// (nanoseconds, hops) from a pooled stage to a detached one.
    pub detached_receive: (u64, u64),
    /// (nanoseconds, hops) between pooled stages.
    pub not_detached: (u64, u64),
}

impl CrossTimes {
    fn add(&mut self, other: &CrossTimes) {
        for (a, b) in [
            (&mut self.detached_send, other.detached_send),
            (&mut self.detached_receive, other.detached_receive),
            (&mut self.not_detached, other.not_detached),
        ] {
            a.0 += b.0;
            a.1 += b.1;
        }
    }

    /// The mean of each class in nanoseconds (NaN where no hop was of that class).
    pub fn means(&self) -> [f64; 3] {
        [self.detached_send, self.detached_receive, self.not_detached].map(|(ns, n)| {
            if n == 0 {
                f64::NAN
            } else {
                ns as f64 / n as f64
            }
        })
    }
}

/// A message's cross-time record: when and from what kind of stage it was last sent, and the
/// sums so far (no allocation per hop).
#[derive(Debug, Clone, Default)]
pub struct Track {
    last: Option<(Instant, bool)>,
    sums: CrossTimes,
}

impl Track {
    fn arrive(&mut self, detached: bool) {
        if let Some((at, from_detached)) = self.last.take() {
            let ns = at.elapsed().as_nanos() as u64;
            let class = match (from_detached, detached) {
                (true, _) => &mut self.sums.detached_send,
                (false, true) => &mut self.sums.detached_receive,
                (false, false) => &mut self.sums.not_detached,
            };
            class.0 += ns;
            class.1 += 1;
        }
    }

    fn depart(&mut self, detached: bool) {
        self.last = Some((Instant::now(), detached));
    }
}

/// A pipeline message.
#[derive(Debug, Clone)]
pub struct Hop {
    pub sent: Instant,
    pub back: bool,
    pub payload: Payload,
    pub track: Option<Track>,
}

/// What the pipeline messages look like.
#[derive(Debug, Clone, Copy)]
pub struct MessageShape {
    pub payload: PayloadKind,
    pub string_length: usize,
    pub vector_size: usize,
    pub tracking: Tracking,
}

impl MessageShape {
    /// Message `sequence`, stamped now.
    pub fn make(&self, sequence: u64) -> Hop {
        let payload = Payload::make(self.payload, sequence, self.string_length, self.vector_size);
        Hop {
            sent: Instant::now(),
            back: false,
            payload,
            track: (self.tracking == Tracking::Xtimes).then(Track::default),
        }
    }
}

/// What the last stage reports to the collector.
pub struct Arrived {
    latency: Duration,
    at: Instant,
    intact: bool,
    track: Option<CrossTimes>,
}

/// The generator's last word: how many messages it sent, and when its first and last bursts
/// went out.
pub struct Expect {
    pub sent: u64,
    pub first: Instant,
    pub last: Instant,
}

/// One pipeline stage.
pub struct Stage {
    pub detached: bool,
    pub prev: Option<Mbox>,
    pub next: Option<Mbox>,
    pub collector: Mbox,
    pub forth_and_back: bool,
    pub computing: Duration,
    pub copy: bool,
    pub shape: MessageShape,
}

/// Busy work for `d` (the CAF benchmark's actor computing time).
fn compute(d: Duration) {
    if d.is_zero() {
        return;
    }
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}

impl Stage {
    fn on_hop(&mut self, mut hop: Hop, _: &mut Context<'_, Self>) {
        if let Some(t) = &mut hop.track {
            t.arrive(self.detached);
        }
        compute(self.computing);
        let target = if hop.back {
            self.prev.as_ref()
        } else if let Some(next) = &self.next {
            Some(next)
        } else if self.forth_and_back && self.prev.is_some() {
            hop.back = true;
            self.prev.as_ref()
        } else {
            None
        };
        match target {
            Some(to) => {
                if let Some(t) = &mut hop.track {
                    t.depart(self.detached);
                }
                let hop = if self.copy { hop.clone() } else { hop };
                let _ = to.send_mut(hop);
            }
            None => {
                let at = Instant::now();
                let intact = hop
                    .payload
                    .is_intact(self.shape.string_length, self.shape.vector_size);
                let _ = self.collector.send_mut(Arrived {
                    latency: at.saturating_duration_since(hop.sent),
                    at,
                    intact,
                    track: hop.track.map(|t| t.sums),
                });
            }
        }
    }
}

impl Agent for Stage {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_mut(Self::on_hop)?;
        Ok(())
    }
}

/// What the collector gathered over a run.
pub struct Collected {
    pub histogram: Histogram<u64>,
    pub received: u64,
    pub damaged: u64,
    pub first: Option<Instant>,
    pub last: Option<Instant>,
    pub cross: CrossTimes,
    /// Parallel mode: the generator's report.
    pub expect: Option<Expect>,
    /// Serial mode: when the first message went out and how many were sent.
    pub serial: Option<(Instant, u64)>,
}

/// Collects what the last stages measured; in serial mode, also the executor.
pub struct Collector {
    pub mode: Mode,
    pub heads: Vec<Mbox>,
    pub shape: MessageShape,
    pub duration: Duration,
    pub started: Option<Instant>,
    pub sent: u64,
    pub data: Option<Collected>,
    pub out: Arc<Mutex<Option<Collected>>>,
}

impl Collector {
    /// A collector for `heads`, reporting into `out`.
    pub fn new(
        mode: Mode,
        heads: Vec<Mbox>,
        shape: MessageShape,
        duration: Duration,
        out: Arc<Mutex<Option<Collected>>>,
    ) -> Self {
        Self {
            mode,
            heads,
            shape,
            duration,
            started: None,
            sent: 0,
            data: Some(Collected {
                histogram: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                    .expect("valid histogram bounds"),
                received: 0,
                damaged: 0,
                first: None,
                last: None,
                cross: CrossTimes::default(),
                expect: None,
                serial: None,
            }),
            out,
        }
    }

    fn send_next(&mut self) {
        let hop = self.shape.make(self.sent);
        // With several chains, serial mode visits their heads in turn.
        let head = &self.heads[(self.sent % self.heads.len() as u64) as usize];
        self.sent += 1;
        let _ = head.send_mut(hop);
    }

    fn finish(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(mut d) = self.data.take() {
            if let Some(s) = self.started {
                d.serial = Some((s, self.sent));
            }
            *self.out.lock().unwrap() = Some(d);
        }
        ctx.stop_environment();
    }

    fn parallel_done(&self) -> bool {
        self.data
            .as_ref()
            .is_some_and(|d| d.expect.as_ref().is_some_and(|e| e.sent == d.received))
    }

    fn on_arrived(&mut self, a: Arrived, ctx: &mut Context<'_, Self>) {
        let Some(d) = &mut self.data else { return };
        d.histogram
            .saturating_record((a.latency.as_nanos() as u64).max(1));
        d.received += 1;
        d.damaged += u64::from(!a.intact);
        d.first.get_or_insert(a.at);
        d.last = Some(a.at);
        if let Some(t) = &a.track {
            d.cross.add(t);
        }
        match self.mode {
            Mode::Serial => {
                let elapsed = self.started.map(|s| s.elapsed()).unwrap_or_default();
                if elapsed >= self.duration {
                    self.finish(ctx);
                } else {
                    self.send_next();
                }
            }
            Mode::Parallel => {
                if self.parallel_done() {
                    self.finish(ctx);
                }
            }
        }
    }

    fn on_expect(&mut self, e: Expect, ctx: &mut Context<'_, Self>) {
        if let Some(d) = &mut self.data {
            d.expect = Some(e);
        }
        if self.parallel_done() {
            self.finish(ctx);
        }
    }
}

impl Agent for Collector {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_mut(Self::on_arrived)?;
        ctx.on_mut(Self::on_expect)?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        if self.mode == Mode::Serial {
            self.started = Some(Instant::now());
            self.send_next();
        }
    }
}
