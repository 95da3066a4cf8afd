//! `chaos-runtime`: flags, the hang watchdog, the summary and the exit status.

use crate::report::Format;
use crate::scenarios::chaos_runtime::{Config, Outcome, Progress, run};
use crate::scenarios::restart::QuietPanics;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `chaos-runtime`'s flags.
#[derive(clap::Args, Clone, Debug)]
pub struct ChaosRuntimeArgs {
    /// How long to run, in seconds (rounds of --round-ms each).
    #[arg(long, default_value_t = 20, conflicts_with = "minutes")]
    pub secs: u64,
    /// How long to run, in minutes (instead of --secs).
    #[arg(long)]
    pub minutes: Option<u64>,
    /// How long one environment lives before it is stopped in the middle of the chaos.
    #[arg(long, default_value_t = 3_000)]
    pub round_ms: u64,
    /// Threads sending numbered messages.
    #[arg(long, default_value_t = 3)]
    pub senders: usize,
    /// Threads registering and deregistering cooperations.
    #[arg(long, default_value_t = 2)]
    pub churners: usize,
    /// Seeds the random choices.
    #[arg(long, default_value_t = 28)]
    pub seed: u64,
    /// A hang: no progress for this many seconds (the process exits with status 3).
    #[arg(long, default_value_t = 120)]
    pub hang_secs: u64,
}

impl ChaosRuntimeArgs {
    fn config(&self) -> Config {
        let secs = self.minutes.map_or(self.secs, |m| m * 60);
        Config {
            total: Duration::from_secs(secs),
            round: Duration::from_millis(self.round_ms),
            senders: self.senders,
            churners: self.churners,
            seed: self.seed,
        }
    }
}

/// Runs the chaos; the exit status: 0 when every message was accounted for, 1 on a
/// violation, 2 on bad flags, 3 on a hang.
pub fn main(args: &ChaosRuntimeArgs, format: Format) -> i32 {
    let cfg = args.config();
    if let Err(e) = cfg.validate() {
        eprintln!("cohort-bench chaos-runtime: {e}");
        return 2;
    }
    let progress = Arc::new(Progress::default());
    watch(progress.clone(), Duration::from_secs(args.hang_secs.max(1)));
    let _quiet = QuietPanics::new();
    let out = match run(&cfg, &progress) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cohort-bench chaos-runtime: {e}");
            return 1;
        }
    };
    print(&out, format);
    if out.passed() {
        0
    } else {
        eprintln!("cohort-bench chaos-runtime: violations (see above)");
        1
    }
}

/// A thread that ends the process with status 3 when the run stops moving for `limit`.
fn watch(progress: Arc<Progress>, limit: Duration) {
    let spawned = std::thread::Builder::new()
        .name("chaos-watchdog".into())
        .spawn(move || {
            let mut last = progress.ticks.load(Ordering::Relaxed);
            let mut still = Duration::ZERO;
            let step = Duration::from_secs(1);
            loop {
                std::thread::sleep(step);
                let now = progress.ticks.load(Ordering::Relaxed);
                if now == last {
                    still += step;
                } else {
                    (last, still) = (now, Duration::ZERO);
                }
                if still >= limit {
                    eprintln!(
                        "cohort-bench chaos-runtime: HANG: no progress for {} s in phase `{}`",
                        limit.as_secs(),
                        progress.phase()
                    );
                    std::process::exit(3);
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("cohort-bench chaos-runtime: no watchdog thread ({e}); running without");
    }
}

fn print(o: &Outcome, format: Format) {
    let json = serde_json::json!({
        "scenario": "chaos-runtime",
        "passed": o.passed(),
        "rounds": o.rounds,
        "secs": o.elapsed.as_secs_f64(),
        "sent": o.sent,
        "handled": o.handled,
        "dead_letters": o.dead,
        "unaccounted": o.unaccounted,
        "duplicates": o.duplicates,
        "reordered": o.reordered,
        "handled_by_dispatcher": o.handled_by_kind,
        "coops_registered": o.coops_registered,
        "coops_deregistered": o.coops_deregistered,
        "panics": o.panics,
        "restarts": o.restarts,
        "timers": {
            "scheduled": o.timers.scheduled,
            "fired": o.timers.fired,
            "handled": o.timers.handled,
            "dead": o.timers.dead,
            "lost": o.timers.lost,
            "duplicates": o.timers.duplicates,
            "not_dropped_once": o.timers.bad_drops,
        },
        "violations": o.violations,
    });
    if format == Format::Json {
        println!("{json}");
        return;
    }
    println!(
        "chaos-runtime: {} rounds in {:.1} s: {} numbered messages sent, {} handled, {} dead \
         letters {:?}",
        o.rounds,
        o.elapsed.as_secs_f64(),
        o.sent,
        o.handled,
        o.dead.values().sum::<u64>(),
        o.dead
    );
    println!(
        "  unaccounted {}, duplicates {}, reordered {} (each must be 0)",
        o.unaccounted, o.duplicates, o.reordered
    );
    println!(
        "  cooperations: {} registered, {} deregistered by the churn; {} panics, {} restarts",
        o.coops_registered, o.coops_deregistered, o.panics, o.restarts
    );
    let t = &o.timers;
    println!(
        "  delayed: {} scheduled, {} fired, {} handled, {} dead; lost {}, duplicated {}, not \
         dropped once {} (each must be 0)",
        t.scheduled, t.fired, t.handled, t.dead, t.lost, t.duplicates, t.bad_drops
    );
    for (kind, n) in &o.handled_by_kind {
        println!("  {n:>10} handled on {kind}");
    }
    for v in &o.violations {
        println!("  VIOLATION {v}");
    }
    println!("{json}");
}
