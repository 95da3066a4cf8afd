//! The `timers` subcommand: its flags and records.

use super::{command_line, group, params};
use crate::machine::Machine;
use crate::report::Record;
use crate::rss;
use crate::scenarios::{Dispatcher, Placement, flag_value, timers};
use clap::Args;
use serde_json::json;

/// `timers` flags.
#[derive(Args, Clone)]
pub struct TimersArgs {
    /// Delayed sends scheduled (fire and forget) to one counting agent.
    #[arg(long, default_value_t = 1_000_000)]
    pub count: u64,
    /// The shortest delay, in ms (long enough that every timer is pending when scheduling
    /// ends).
    #[arg(long = "delay-ms", default_value_t = 1000)]
    pub delay_ms: u64,
    /// Delays spread evenly over [delay, delay + spread), in ms.
    #[arg(long = "spread-ms", default_value_t = 1000)]
    pub spread_ms: u64,
    /// How long the 1 ms periodic timer runs, in ms (0: skip that measurement).
    #[arg(long = "periodic-ms", default_value_t = 3000)]
    pub periodic_ms: u64,
    /// The timer queues to measure (each run interleaves them).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "wheel,heap")]
    pub queue: Vec<timers::QueueArg>,
}

impl TimersArgs {
    /// The subcommand and flags that run this step alone.
    pub fn cli_args(&self) -> Vec<String> {
        let queues: Vec<String> = self.queue.iter().map(|q| flag_value(*q)).collect();
        command_line(
            "timers",
            &[
                ("--count", self.count.to_string()),
                ("--delay-ms", self.delay_ms.to_string()),
                ("--spread-ms", self.spread_ms.to_string()),
                ("--periodic-ms", self.periodic_ms.to_string()),
                ("--queue", queues.join(",")),
            ],
        )
    }
}

/// Runs `timers` `runs` times, the queues interleaved: the mass of delayed sends, then the
/// periodic timer.
pub fn records(a: &TimersArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "timers";
    let placement = Placement::of(Dispatcher::OneThread);
    let delay = std::time::Duration::from_millis(a.delay_ms);
    let spread = std::time::Duration::from_millis(a.spread_ms);
    let mut out = Vec::new();
    // Per queue: metric name -> samples; runs interleave the queues.
    let mut mass: Vec<Vec<(&str, f64)>> = vec![Vec::new(); a.queue.len()];
    let mut periodic: Vec<Vec<(&str, f64)>> = vec![Vec::new(); a.queue.len()];
    let mut failed = vec![None; a.queue.len()];
    for _ in 0..runs.max(1) {
        for (k, q) in a.queue.iter().enumerate() {
            if failed[k].is_some() {
                continue;
            }
            let can_reset = rss::reset_peak();
            match timers::run_mass(a.count, delay, spread, q.queue(), placement) {
                Ok(o) => {
                    let m = &mut mass[k];
                    m.push((
                        "schedule_ns_per_timer",
                        o.schedule.as_nanos() as f64 / o.count as f64,
                    ));
                    m.push(("heap_bytes_per_pending_timer", o.heap_bytes_per_timer));
                    if let Some(b) = o.rss_bytes_per_timer {
                        m.push(("rss_bytes_per_pending_timer", b));
                    }
                    if let Some(c) = o.fire_cpu_per_timer {
                        m.push(("timer_thread_cpu_ns_per_timer", c.as_nanos() as f64));
                    }
                    m.push((
                        "drain_after_last_deadline_ms",
                        o.drain_after_last_deadline.as_secs_f64() * 1e3,
                    ));
                    m.push(("lateness_mean_us", o.late_mean.as_secs_f64() * 1e6));
                    m.push(("lateness_max_ms", o.late_max.as_secs_f64() * 1e3));
                    if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
                        m.push(("peak_rss_mib", b as f64 / (1024.0 * 1024.0)));
                    }
                }
                Err(e) => failed[k] = Some(e),
            }
            if a.periodic_ms > 0 {
                match timers::run_periodic(
                    std::time::Duration::from_millis(1),
                    std::time::Duration::from_millis(a.periodic_ms),
                    q.queue(),
                ) {
                    Ok(o) => {
                        let p = &mut periodic[k];
                        p.push(("ticks_per_s", o.ticks as f64 / o.elapsed.as_secs_f64()));
                        if let Some(c) = o.cpu_share {
                            p.push(("process_cpu_percent", c * 100.0));
                        }
                        if let Some(c) = o.timer_thread_share {
                            p.push(("timer_thread_cpu_percent", c * 100.0));
                        }
                    }
                    Err(e) => failed[k] = Some(e),
                }
            }
        }
    }
    for (k, q) in a.queue.iter().enumerate() {
        let variant = format!("{} queue", q.name());
        let p = params(json!({
            "count": a.count, "delay_ms": a.delay_ms, "spread_ms": a.spread_ms,
            "queue": q.name(),
        }));
        if let Some(e) = failed[k].take() {
            out.push(Record::failed(scenario, &variant, &p, e, machine));
            continue;
        }
        out.extend(group(&mass[k]).into_iter().map(|(metric, samples)| {
            Record::from_samples(scenario, &variant, &p, metric, &samples, machine)
        }));
        let pv = format!("{} queue, one 1 ms periodic timer", q.name());
        let pp = params(json!({ "period_ms": 1, "duration_ms": a.periodic_ms, "queue": q.name() }));
        out.extend(group(&periodic[k]).into_iter().map(|(metric, samples)| {
            Record::from_samples(scenario, &pv, &pp, metric, &samples, machine)
        }));
    }
    out
}
