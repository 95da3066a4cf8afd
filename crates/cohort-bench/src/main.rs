//! `cohort-bench`: the classic actor benchmarks of the seed articles, run on cohort.
//!
//! `cohort-bench quick` runs every scenario at a reduced size (the README's first command);
//! `cohort-bench full` at the seeds' sizes; each scenario is also a subcommand of its own.
//! See docs/BENCHMARKS.md for what each scenario measures and where it comes from.

mod machine;
mod report;
mod rss;
mod scenarios;
#[cfg(test)]
mod watchdog;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use machine::Machine;
use report::{Format, Record};
use scenarios::{Dispatcher, FifoArg, Placement, ping_pong, skynet};
use serde_json::{Map, Value, json};

#[derive(Parser)]
#[command(
    name = "cohort-bench",
    version,
    about = "The classic actor benchmarks, on cohort"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Clone)]
struct Common {
    /// How many times each measurement repeats (the median and min-max are reported).
    #[arg(long, global = true)]
    runs: Option<usize>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Shorthand for --format json.
    #[arg(long, global = true)]
    json: bool,
    /// Shorthand for --format csv.
    #[arg(long, global = true)]
    csv: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Two agents exchange signals (sobjectizer-performance-part3, theron PingPong).
    PingPong(PingPongArgs),
    /// One million agents created in a tree, summing their ordinals (sobjectizer-performance-part3).
    Skynet(SkynetArgs),
    /// Every scenario at a reduced size, with a progress bar and a summary table (< 2 min).
    Quick,
    /// Every scenario at the seeds' sizes.
    Full,
}

#[derive(Args, Clone)]
struct PingPongArgs {
    /// Round trips per run.
    #[arg(long, default_value_t = 1_000_000)]
    count: u64,
    #[command(flatten)]
    placement: Placement,
}

#[derive(Args, Clone)]
struct SkynetArgs {
    /// Leaf agents (a power of --branching).
    #[arg(long, default_value_t = 1_000_000)]
    leaves: u64,
    /// Children per agent.
    #[arg(long, default_value_t = 10)]
    branching: u64,
    #[command(flatten)]
    placement: Placement,
}

fn main() {
    let cli = Cli::parse();
    let format = if cli.common.json {
        Format::Json
    } else if cli.common.csv {
        Format::Csv
    } else {
        cli.common.format
    };
    let machine = Machine::detect();
    let records = match cli.command {
        Command::PingPong(a) => ping_pong_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::Skynet(a) => skynet_records(&a, cli.common.runs.unwrap_or(5), &machine),
        Command::Quick => suite(&quick_plan(), cli.common.runs.unwrap_or(3), &machine),
        Command::Full => suite(&full_plan(), cli.common.runs.unwrap_or(5), &machine),
    };
    report::print(&records, format);
    if records.iter().any(|r| !r.ok) {
        eprintln!("cohort-bench: some scenarios failed (see the table)");
        std::process::exit(1);
    }
}

/// One step of a suite.
enum Step {
    PingPong(PingPongArgs),
    Skynet(SkynetArgs),
}

fn pool_ping_pongs(count: u64) -> Vec<Step> {
    let tp = Placement::of(Dispatcher::ThreadPool);
    let ws = Placement::of(Dispatcher::WorkStealing);
    [
        tp.fifo(FifoArg::Cooperation),
        tp.fifo(FifoArg::Individual),
        ws,
    ]
    .into_iter()
    .map(|placement| Step::PingPong(PingPongArgs { count, placement }))
    .collect()
}

fn quick_plan() -> Vec<Step> {
    let mut plan = vec![
        Step::PingPong(PingPongArgs {
            count: 1_000_000,
            placement: Placement::of(Dispatcher::OneThread),
        }),
        Step::PingPong(PingPongArgs {
            count: 200_000,
            placement: Placement::of(Dispatcher::ActiveObj),
        }),
    ];
    plan.extend(pool_ping_pongs(200_000));
    plan.push(Step::Skynet(SkynetArgs {
        leaves: 1_000_000,
        branching: 10,
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan
}

fn full_plan() -> Vec<Step> {
    let mut plan = vec![
        Step::PingPong(PingPongArgs {
            count: 25_000_000,
            placement: Placement::of(Dispatcher::OneThread),
        }),
        Step::PingPong(PingPongArgs {
            count: 1_000_000,
            placement: Placement::of(Dispatcher::ActiveObj),
        }),
    ];
    plan.extend(pool_ping_pongs(1_000_000));
    plan.push(Step::Skynet(SkynetArgs {
        leaves: 1_000_000,
        branching: 10,
        placement: Placement::of(Dispatcher::OneThread),
    }));
    plan
}

fn suite(plan: &[Step], runs: usize, machine: &Machine) -> Vec<Record> {
    let bar = ProgressBar::new(plan.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"),
    );
    let mut out = Vec::new();
    for step in plan {
        match step {
            Step::PingPong(a) => {
                bar.set_message(format!("ping-pong {}", a.placement.label()));
                out.extend(ping_pong_records(a, runs, machine));
            }
            Step::Skynet(a) => {
                bar.set_message(format!("skynet {}", a.placement.label()));
                out.extend(skynet_records(a, runs, machine));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    out
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

fn params(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn ping_pong_records(a: &PingPongArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "ping-pong";
    let variant = format!("{}, direct mailboxes", a.placement.label());
    let p = params(merge(
        json!({ "count": a.count, "mailbox": "direct" }),
        a.placement.params(),
    ));
    let mut msgs = Vec::new();
    let mut trips = Vec::new();
    for _ in 0..runs.max(1) {
        match ping_pong::run_once(a.count, a.placement, false) {
            Ok(o) => {
                let s = o.elapsed.as_secs_f64();
                trips.push(o.round_trips as f64 / s);
                msgs.push(2.0 * o.round_trips as f64 / s);
            }
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        }
    }
    let mut out = vec![
        Record::from_samples(scenario, &variant, &p, "messages_per_s", &msgs, machine),
        Record::from_samples(scenario, &variant, &p, "round_trips_per_s", &trips, machine),
    ];
    // One more run that times every round trip (timing costs a little throughput).
    let lat_count = a.count.min(1_000_000);
    match ping_pong::run_once(lat_count, a.placement, true) {
        Ok(o) => {
            if let Some(h) = o.latency {
                for (metric, q) in [
                    ("latency_ns_p50", 0.5),
                    ("latency_ns_p99", 0.99),
                    ("latency_ns_p999", 0.999),
                ] {
                    let v = h.value_at_quantile(q) as f64;
                    out.push(Record::from_samples(
                        scenario,
                        &variant,
                        &p,
                        metric,
                        &[v],
                        machine,
                    ));
                }
            }
        }
        Err(e) => out.push(Record::failed(scenario, &variant, &p, e, machine)),
    }
    out
}

fn skynet_records(a: &SkynetArgs, runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = "skynet";
    let variant = format!("{}, branching {}", a.placement.label(), a.branching);
    let mut p = params(merge(
        json!({ "leaves": a.leaves, "branching": a.branching }),
        a.placement.params(),
    ));
    let (mut with_teardown, mut to_result, mut rates, mut peaks) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let can_reset = rss::reset_peak();
        match skynet::run_once(a.leaves, a.branching, a.placement) {
            Ok(o) => {
                p.insert("sum".into(), json!(o.sum));
                with_teardown.push(o.with_teardown.as_secs_f64());
                to_result.push(o.to_result.as_secs_f64());
                rates.push(o.agents as f64 / o.with_teardown.as_secs_f64());
                if let (true, Some(b)) = (can_reset, rss::peak_bytes()) {
                    peaks.push(b as f64);
                }
            }
            Err(e) => return vec![Record::failed(scenario, &variant, &p, e, machine)],
        }
    }
    let mut out = vec![
        Record::from_samples(scenario, &variant, &p, "elapsed_s", &with_teardown, machine),
        Record::from_samples(
            scenario,
            &variant,
            &p,
            "elapsed_to_result_s",
            &to_result,
            machine,
        ),
        Record::from_samples(scenario, &variant, &p, "agents_per_s", &rates, machine),
    ];
    if !peaks.is_empty() {
        out.push(Record::from_samples(
            scenario,
            &variant,
            &p,
            "peak_rss_bytes",
            &peaks,
            machine,
        ));
    }
    out
}
