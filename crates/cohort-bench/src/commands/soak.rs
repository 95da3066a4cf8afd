//! `soak`: flags, the sampling loop, the files it writes (CSV, JSON, plot), the verdict and
//! the exit status.

use crate::report::Format;
use crate::scenarios::soak::plot::{self, Series};
use crate::scenarios::soak::sample::{Sample, Verdict, judge, mb, probe};
use crate::scenarios::soak::{Counts, Workload};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `soak`'s flags.
#[derive(clap::Args, Clone, Debug)]
pub struct SoakArgs {
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 60, conflicts_with = "minutes")]
    pub secs: u64,
    /// How long to run, in minutes (instead of --secs).
    #[arg(long)]
    pub minutes: Option<u64>,
    /// Seconds between samples (default: 10, or 1 for a run under 5 minutes).
    #[arg(long)]
    pub sample_secs: Option<u64>,
    /// Where the samples (samples.csv, soak.json) and the plot (soak.svg, soak.png) go.
    #[arg(long, default_value = "target/soak")]
    pub out: PathBuf,
    /// Without the remote part (no child process).
    #[arg(long)]
    pub no_remote: bool,
}

/// The warm-up the verdict leaves out: the first 5 minutes, or the first third of a shorter
/// run.
pub fn warmup(total: Duration) -> Duration {
    (total / 3).min(Duration::from_secs(300))
}

/// Runs the soak; the exit status: 0 when nothing grew, 1 when something did (or the
/// workload failed), 2 on bad flags.
pub fn main(args: &SoakArgs, format: Format) -> i32 {
    let total = Duration::from_secs(args.minutes.map_or(args.secs, |m| m * 60));
    if total.is_zero() {
        eprintln!("cohort-bench soak: --secs must be at least 1");
        return 2;
    }
    let every = Duration::from_secs(args.sample_secs.unwrap_or(
        if total < Duration::from_secs(300) {
            1
        } else {
            10
        },
    ));
    if every.is_zero() {
        eprintln!("cohort-bench soak: --sample-secs must be at least 1");
        return 2;
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("cohort-bench soak: --out {}: {e}", args.out.display());
        return 2;
    }
    let workload = match Workload::start(!args.no_remote) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("cohort-bench soak: {e}");
            return 1;
        }
    };
    let child = workload.child_pid.map(|p| p.to_string());
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let started = Instant::now();
    let mut next = Duration::ZERO;
    let mut problems = Vec::new();
    loop {
        let t = started.elapsed();
        if t >= next || t >= total {
            let secs = t.as_secs_f64();
            mine.extend(probe("self", secs));
            if let Some(pid) = &child {
                match probe(pid, secs) {
                    Some(s) => theirs.push(s),
                    None if problems.is_empty() => {
                        problems.push(format!("the child process {pid} is gone at {secs:.0} s"))
                    }
                    None => {}
                }
            }
            progress(&mine, total, &workload.counts);
            next += every;
        }
        if t >= total {
            break;
        }
        std::thread::sleep((next.min(total)).saturating_sub(started.elapsed()));
    }
    let counts = workload.counts.clone();
    problems.extend(workload.stop());
    let warm = warmup(total).as_secs_f64();
    let mut verdicts = vec![judge("cohort-bench (soak)", &mine, warm)];
    if child.is_some() {
        verdicts.push(judge("child (echo node)", &theirs, warm));
    }
    if counts.errors.load(Ordering::Relaxed) > 0 {
        problems.push(format!(
            "{} requests failed or had a wrong reply",
            counts.errors.load(Ordering::Relaxed)
        ));
    }
    let passed = problems.is_empty() && verdicts.iter().all(|v| v.passed);
    let results = Results {
        total,
        warm,
        mine: &mine,
        theirs: &theirs,
        verdicts: &verdicts,
        counts: &counts,
        passed,
    };
    let written = write(&args.out, &results);
    print(&verdicts, &problems, &counts, passed, format);
    match written {
        Ok(files) => {
            for f in files {
                eprintln!("wrote {}", f.display());
            }
        }
        Err(e) => {
            eprintln!("cohort-bench soak: writing the results: {e}");
            return 1;
        }
    }
    if passed { 0 } else { 1 }
}

/// One line per sample on stderr: where the run is.
fn progress(mine: &[Sample], total: Duration, c: &Counts) {
    if let Some(s) = mine.last() {
        eprintln!(
            "soak {:>6.0}/{} s: RSS {:.1} MB, {} fds, {} threads; {} jobs, {} remote messages",
            s.t,
            total.as_secs(),
            mb(s.rss),
            s.fds,
            s.threads,
            c.jobs.load(Ordering::Relaxed),
            c.remote_messages.load(Ordering::Relaxed)
        );
    }
}

fn counts_json(c: &Counts) -> serde_json::Value {
    let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    serde_json::json!({
        "jobs": l(&c.jobs),
        "news": l(&c.news),
        "asks": l(&c.asks),
        "delayed": l(&c.delayed),
        "ticks": l(&c.ticks),
        "chained": l(&c.chained),
        "coops": l(&c.coops),
        "remote_messages": l(&c.remote_messages),
        "remote_rounds": l(&c.remote_rounds),
        "errors": l(&c.errors),
    })
}

/// What a run found, to write down.
struct Results<'a> {
    total: Duration,
    /// The warm-up, seconds.
    warm: f64,
    mine: &'a [Sample],
    theirs: &'a [Sample],
    verdicts: &'a [Verdict],
    counts: &'a Counts,
    passed: bool,
}

fn write(dir: &Path, r: &Results<'_>) -> Result<Vec<PathBuf>, String> {
    let Results {
        total,
        warm,
        mine,
        theirs,
        verdicts,
        counts,
        passed,
    } = *r;
    let e = |e: std::io::Error| e.to_string();
    let mut csv = String::from("t_s,process,rss_bytes,fds,threads\n");
    for (who, samples) in [("self", mine), ("child", theirs)] {
        for s in samples {
            csv += &format!("{:.1},{who},{},{},{}\n", s.t, s.rss, s.fds, s.threads);
        }
    }
    let csv_path = dir.join("samples.csv");
    std::fs::write(&csv_path, csv).map_err(e)?;
    let json = serde_json::json!({
        "scenario": "soak",
        "secs": total.as_secs(),
        "warmup_secs": warm,
        "passed": passed,
        "verdicts": verdicts,
        "counts": counts_json(counts),
        "samples": { "self": mine, "child": theirs },
    });
    let json_path = dir.join("soak.json");
    std::fs::write(&json_path, json.to_string()).map_err(e)?;
    let plot_path = dir.join("soak.svg");
    let mut series = vec![Series {
        label: "cohort-bench soak",
        samples: mine,
    }];
    if !theirs.is_empty() {
        series.push(Series {
            label: "child: echo node",
            samples: theirs,
        });
    }
    let title = format!(
        "soak, {} s: RSS, open file descriptors, threads",
        total.as_secs()
    );
    plot::draw(&plot_path, &title, &series, warm)?;
    let png_path = dir.join("soak.png");
    plot::draw(&png_path, &title, &series, warm)?;
    Ok(vec![csv_path, json_path, plot_path, png_path])
}

fn print(verdicts: &[Verdict], problems: &[String], counts: &Counts, passed: bool, format: Format) {
    if format == Format::Json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": "soak",
                "passed": passed,
                "verdicts": verdicts,
                "problems": problems,
                "counts": counts_json(counts),
            })
        );
        return;
    }
    println!("soak: workload {}", counts_json(counts));
    for v in verdicts {
        println!(
            "  {}: RSS {:.1} -> {:.1} MB after the warm-up ({:+.2} %), fds {} (warm-up max {}), \
             threads {} (warm-up max {}): {}",
            v.process,
            mb(v.rss_after_warmup),
            mb(v.rss_end),
            v.rss_growth * 100.0,
            v.fds_end,
            v.fds_warmup_max,
            v.threads_end,
            v.threads_warmup_max,
            if v.passed { "ok" } else { "FAILED" }
        );
        for r in &v.reasons {
            println!("    {r}");
        }
    }
    for p in problems {
        println!("  problem: {p}");
    }
    println!("soak: {}", if passed { "passed" } else { "FAILED" });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_is_five_minutes_or_a_third() {
        assert_eq!(warmup(Duration::from_secs(60)), Duration::from_secs(20));
        assert_eq!(warmup(Duration::from_secs(1800)), Duration::from_secs(300));
    }
}
