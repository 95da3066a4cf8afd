//! The `latency` subcommand: the CAF-style latency pipeline's flags (the CAF benchmark's parameters as
//! defaults), its records, and its result file with the CAF benchmark's columns.

use super::push_sample;
use crate::machine::Machine;
use crate::report::Record;
use crate::scenarios::Placement;
use crate::scenarios::latency::{
    self, CAF_RUN, Config, Mode, Outcome, PayloadKind, SendingOrder, Tracking,
};
use clap::Args;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Flags of the latency pipeline (caf-latency-benchmarks.txt; defaults: its example run).
#[derive(Args, Clone)]
pub struct LatencyArgs {
    /// Serial (next message when the previous arrived) or parallel (messages at --rate).
    #[arg(long, value_enum, default_value_t = CAF_RUN.mode)]
    pub mode: Mode,
    /// Agents per chain (the CAF benchmark's pipeline_actors).
    #[arg(long, short = 'N', default_value_t = CAF_RUN.actors)]
    pub actors: usize,
    /// Chains (the generator or, in serial mode, the executor visits their heads).
    #[arg(long, default_value_t = CAF_RUN.chains)]
    pub chains: usize,
    /// Messages per second the generator sends (parallel mode).
    #[arg(long, short = 'r', default_value_t = CAF_RUN.rate)]
    pub rate: f64,
    /// How the generator picks a chain head.
    #[arg(long = "sending-order", value_enum, default_value_t = CAF_RUN.order)]
    pub order: SendingOrder,
    /// Messages per burst: above 1, the generator sends square-wave bursts (same mean rate).
    #[arg(long = "batch-size", default_value_t = CAF_RUN.batch)]
    pub batch: u64,
    /// Seconds the run lasts.
    #[arg(long, short = 'd', default_value_t = CAF_RUN.duration.as_secs_f64())]
    pub duration: f64,
    /// Payload of the messages.
    #[arg(long, short = 'P', value_enum, default_value_t = CAF_RUN.payload)]
    pub payload: PayloadKind,
    /// Characters of a complex payload's string.
    #[arg(long = "string-length", default_value_t = CAF_RUN.string_length)]
    pub string_length: usize,
    /// Bytes of a complex payload's vector.
    #[arg(long = "vector-size", default_value_t = CAF_RUN.vector_size)]
    pub vector_size: usize,
    /// Copy the message at every stage instead of moving it (the CAF benchmark's copy_msg).
    #[arg(long)]
    pub copy: bool,
    /// Busy work per stage and message, in nanoseconds (the CAF benchmark's actor_computing_time).
    #[arg(long = "computing-ns", default_value_t = 0)]
    pub computing_ns: u64,
    /// Index (0..N-1) of the stage of each chain that runs on a thread of its own.
    #[arg(long)]
    pub detach: Option<usize>,
    /// Messages go head to tail and back to the head.
    #[arg(long = "forth-and-back")]
    pub forth_and_back: bool,
    /// Head-to-tail latency, or also per-hop cross times.
    #[arg(long, short = 'K', value_enum, default_value_t = CAF_RUN.tracking)]
    pub tracking: Tracking,
    /// Appends one line per run to this file, semicolon-separated, with the CAF benchmark's columns.
    #[arg(long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub placement: Placement,
}

impl LatencyArgs {
    /// The run's configuration.
    pub fn config(&self) -> Result<Config, String> {
        if !(self.duration.is_finite() && self.duration > 0.0 && self.duration < 1e7) {
            return Err(format!(
                "--duration must be a number of seconds above 0 (got {})",
                self.duration
            ));
        }
        Ok(Config {
            mode: self.mode,
            actors: self.actors,
            chains: self.chains,
            rate: self.rate,
            order: self.order,
            batch: self.batch,
            duration: Duration::from_secs_f64(self.duration),
            payload: self.payload,
            string_length: self.string_length,
            vector_size: self.vector_size,
            copy: self.copy,
            computing: Duration::from_nanos(self.computing_ns),
            detach: self.detach,
            forth_and_back: self.forth_and_back,
            tracking: self.tracking,
            placement: self.placement,
        })
    }

    /// The CAF benchmark's run with other sizes, for the suites.
    pub fn caf_run(mode: Mode, duration: f64) -> Self {
        Self {
            mode,
            actors: CAF_RUN.actors,
            chains: CAF_RUN.chains,
            rate: CAF_RUN.rate,
            order: CAF_RUN.order,
            batch: CAF_RUN.batch,
            duration,
            payload: CAF_RUN.payload,
            string_length: CAF_RUN.string_length,
            vector_size: CAF_RUN.vector_size,
            copy: false,
            computing_ns: 0,
            detach: None,
            forth_and_back: false,
            tracking: CAF_RUN.tracking,
            output: None,
            placement: CAF_RUN.placement,
        }
    }

    /// The variant in words.
    pub fn label(&self) -> String {
        let mut s = format!(
            "{:?}, {} x {} agents, {}",
            self.mode,
            self.chains,
            self.actors,
            self.placement.label()
        )
        .to_lowercase();
        if self.mode == Mode::Parallel {
            s += &format!(", {} msg/s", self.rate);
            if self.batch > 1 {
                s += &format!(" in bursts of {}", self.batch);
            }
        }
        if self.payload == PayloadKind::Complex {
            s += &format!(
                ", complex payload {}+{} B{}",
                self.string_length,
                self.vector_size,
                if self.copy { " copied" } else { "" }
            );
        }
        if self.computing_ns > 0 {
            s += &format!(", {} ns work", self.computing_ns);
        }
        if let Some(d) = self.detach {
            s += &format!(", stage {d} detached");
        }
        if self.forth_and_back {
            s += ", forth and back";
        }
        if self.tracking == Tracking::Xtimes {
            s += ", cross times";
        }
        s
    }

    fn params(&self) -> Map<String, Value> {
        let mut p = json!({
            "mode": format!("{:?}", self.mode).to_lowercase(),
            "actors": self.actors,
            "chains": self.chains,
            "rate": self.rate,
            "sending_order": format!("{:?}", self.order).to_lowercase(),
            "batch_size": self.batch,
            "duration_s": self.duration,
            "payload": format!("{:?}", self.payload).to_lowercase(),
            "string_length": self.string_length,
            "vector_size": self.vector_size,
            "copy": self.copy,
            "computing_ns": self.computing_ns,
            "detach": self.detach,
            "forth_and_back": self.forth_and_back,
            "tracking": format!("{:?}", self.tracking).to_lowercase(),
        });
        if let (Value::Object(m), Value::Object(d)) = (&mut p, self.placement.params()) {
            m.extend(d);
        }
        match p {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// The CAF benchmark's columns (semicolon-separated) for `mode`, with the cross-time ones if tracked.
pub fn caf_header(mode: Mode, tracking: Tracking) -> String {
    let mut h = match mode {
        Mode::Serial => "number of actors;net latency (us);gross latency (us);\
                         message rate (msg/sec);cpu usage ave;ram usage ave (MB)"
            .to_string(),
        Mode::Parallel => "number of actors;sender message rate (msg/s);\
                           percentage sender error;all actor latency (us);\
                           pipeline actor latency (us);receiver message rate (msg/s);\
                           percentage receiver error;cpu usage ave;ram usage ave (MB)"
            .to_string(),
    };
    if tracking == Tracking::Xtimes {
        h += ";detached_send;detached_receive;not_detached";
    }
    h
}

fn error_pct(requested: f64, got: f64) -> f64 {
    (got - requested).abs() / requested * 100.0
}

/// One line of the CAF benchmark's file for a run.
pub fn caf_line(a: &LatencyArgs, o: &Outcome) -> String {
    let us = |ns: f64| ns / 1e3;
    let mb = o.usage.ram_bytes / 1e6;
    let stages = a.actors as f64;
    let mut line = match a.mode {
        Mode::Serial => format!(
            "{};{:.3};{:.3};{:.3};{:.1};{:.1}",
            a.actors,
            us(o.mean_ns() / stages),
            us(o.gross_latency.as_nanos() as f64),
            o.receiver_rate,
            o.usage.cpu_percent,
            mb
        ),
        Mode::Parallel => format!(
            "{};{:.3};{:.5};{:.3};{:.3};{:.3};{:.5};{:.1};{:.1}",
            a.actors,
            o.sender_rate,
            error_pct(a.rate, o.sender_rate),
            us(o.mean_ns()),
            us(o.mean_ns() / stages),
            o.receiver_rate,
            error_pct(a.rate, o.receiver_rate),
            o.usage.cpu_percent,
            mb
        ),
    };
    if let Some(c) = &o.cross {
        let [s, r, n] = c.means().map(us);
        line += &format!(";{s:.3};{r:.3};{n:.3}");
    }
    line
}

fn append(path: &PathBuf, header: &str, lines: &[String]) -> Result<(), String> {
    let fresh = std::fs::metadata(path)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("--output {}: {e}", path.display()))?;
    let mut text = String::new();
    if fresh {
        text += header;
        text.push('\n');
    }
    for l in lines {
        text += l;
        text.push('\n');
    }
    f.write_all(text.as_bytes())
        .map_err(|e| format!("--output {}: {e}", path.display()))
}

/// Runs the pipeline `runs` times; one record per metric (median, min-max).
pub fn records(a: &LatencyArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "latency";
    let variant = a.label();
    let p = a.params();
    let cfg = match a.config() {
        Ok(c) => c,
        Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
    };
    let mut metrics: Vec<(&'static str, Vec<f64>)> = Vec::new();
    let mut lines = Vec::new();
    for _ in 0..runs.max(1) {
        let o = match latency::run_once(&cfg) {
            Ok(o) => o,
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        };
        lines.push(caf_line(a, &o));
        for (metric, v) in samples(a, &o) {
            push_sample(&mut metrics, metric, v);
        }
    }
    let mut out: Vec<Record> = metrics
        .iter()
        .filter(|(_, vs)| vs.iter().all(|v| !v.is_nan()))
        .map(|(metric, vs)| Record::from_samples(scenario, &variant, &p, metric, vs, machine))
        .collect();
    if let Some(path) = &a.output
        && let Err(e) = append(path, &caf_header(a.mode, a.tracking), &lines)
    {
        out.push(Record::failed(scenario, &variant, &p, e, machine));
    }
    out
}

/// The metrics of one run.
fn samples(a: &LatencyArgs, o: &Outcome) -> Vec<(&'static str, f64)> {
    let h = &o.latency;
    let mut v = vec![
        ("latency_ns_mean", o.mean_ns()),
        ("latency_ns_per_actor", o.mean_ns() / a.actors as f64),
        ("latency_ns_p50", h.value_at_quantile(0.5) as f64),
        ("latency_ns_p90", h.value_at_quantile(0.9) as f64),
        ("latency_ns_p99", h.value_at_quantile(0.99) as f64),
        ("latency_ns_p999", h.value_at_quantile(0.999) as f64),
        ("latency_ns_max", h.max() as f64),
        ("received_messages_per_s", o.receiver_rate),
    ];
    match a.mode {
        Mode::Parallel => {
            v.push(("sender_messages_per_s", o.sender_rate));
            v.push(("sender_error_pct", error_pct(a.rate, o.sender_rate)));
            v.push(("receiver_error_pct", error_pct(a.rate, o.receiver_rate)));
        }
        Mode::Serial => {
            v.push(("gross_latency_ns", o.gross_latency.as_nanos() as f64));
        }
    }
    v.push(("cpu_usage_pct", o.usage.cpu_percent));
    v.push(("ram_usage_bytes", o.usage.ram_bytes));
    if let Some(c) = &o.cross {
        let [s, r, n] = c.means();
        v.push(("xtime_ns_detached_send", s));
        v.push(("xtime_ns_detached_receive", r));
        v.push(("xtime_ns_not_detached", n));
    }
    v.push(("messages", o.received as f64));
    v
}

/// `quick`: the CAF benchmark's parallel run for 1 s and its serial run for 0.5 s (a tenth of
/// that when `tiny`).
pub fn quick_runs(tiny: bool) -> Vec<LatencyArgs> {
    // A tenth of the time at the tiny size still sends a hundred messages in parallel mode.
    let scale = if tiny { 0.1 } else { 1.0 };
    vec![
        LatencyArgs::caf_run(Mode::Parallel, scale),
        LatencyArgs::caf_run(Mode::Serial, 0.5 * scale),
    ]
}

/// `full`: the CAF benchmark's example run (parallel, 12 stages, 1,000 / s, 100 s), the same chain in
/// serial mode for 20 s, and the run of its configuration file (parallel, 10 stages,
/// 10,000 / s, complex payload, stage 6 detached, cross times, 20 s).
pub fn full_runs() -> Vec<LatencyArgs> {
    let mut ini = LatencyArgs::caf_run(Mode::Parallel, 20.0);
    ini.actors = 10;
    ini.rate = 1e4;
    ini.payload = PayloadKind::Complex;
    ini.tracking = Tracking::Xtimes;
    ini.detach = Some(6);
    vec![
        LatencyArgs::caf_run(Mode::Parallel, CAF_RUN.duration.as_secs_f64()),
        LatencyArgs::caf_run(Mode::Serial, 20.0),
        ini,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caf_columns() {
        assert_eq!(
            caf_header(Mode::Parallel, Tracking::Latency)
                .split(';')
                .count(),
            9
        );
        assert_eq!(
            caf_header(Mode::Serial, Tracking::Latency)
                .split(';')
                .count(),
            6
        );
        assert!(caf_header(Mode::Parallel, Tracking::Xtimes).ends_with("not_detached"));
    }

    #[test]
    fn a_short_run_writes_the_caf_file() {
        let dir = std::env::temp_dir().join(format!("cohort-latency-{}", std::process::id()));
        let mut a = LatencyArgs::caf_run(Mode::Parallel, 0.05);
        a.tracking = Tracking::Xtimes;
        a.detach = Some(3);
        a.output = Some(dir.clone());
        let r = crate::watchdog::within(20, move || records(&a, 2, &Machine::detect()));
        assert!(r.iter().all(|r| r.ok), "{r:?}");
        let text = std::fs::read_to_string(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].split(';').count(), 12);
        assert!(lines[1].starts_with("12;"));
    }
}
