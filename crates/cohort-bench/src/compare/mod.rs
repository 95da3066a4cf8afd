//! `cohort-bench compare`: the same scenarios on cohort and on its peers (actix, kameo, ractor,
//! CAF, Proto.Actor; their ports live in peers/), in one run on one machine; the remote rows
//! (two processes on loopback) on cohort and the peers with a remote port.
//!
//! It builds what is missing (the Rust peers with cargo, the CAF port with cmake when
//! libcaf-dev is installed, the Proto.Actor port with `go build` when Go is), then runs, per scenario, every framework once per round, in turn
//! (cohort actix kameo ractor caf, cohort actix ...), each run a fresh process, and prints per
//! scenario each framework's median, min-max and ratio to cohort. A peer that is not installed
//! is reported as skipped with the command that installs it; one that fails to build, crashes,
//! times out or gives a wrong result as failed with its error; the comparison goes on.

mod chart;
mod peers;
mod pekko;
mod plan;
mod protoactor;
mod remote;
mod results;
mod runner;

use crate::machine::Machine;
use crate::report::Format;
use indicatif::{ProgressBar, ProgressStyle};
use peers::{Availability, PeerProfile};
use plan::{Case, Kind, Size};
use results::{Cell, Outcome, Row};
use std::path::PathBuf;
use std::time::Duration;

/// `compare`'s flags (with the global `--runs` as the number of rounds and `--json`/`--csv`).
#[derive(clap::Args, Clone, Debug)]
pub struct CompareArgs {
    /// Reduced sizes: the whole comparison in a few minutes (default: the sizes of the source
    /// benchmarks).
    #[arg(long, conflicts_with = "tiny")]
    quick: bool,
    /// Tiny sizes: checks every port gives the right result (CI's smoke test; no figures).
    #[arg(long)]
    tiny: bool,
    /// Also draw a bar chart to this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
    /// Only these frameworks besides cohort (comma-separated: actix,kameo,ractor,caf,pekko,protoactor).
    #[arg(long, value_delimiter = ',', value_parser = ["actix", "kameo", "ractor", "caf", "pekko", "protoactor"])]
    only: Vec<String>,
    /// The cargo profile the Rust peers are built with (`ci` builds fast, for smoke tests).
    #[arg(long, value_enum, default_value_t = PeerProfile::Release)]
    peer_profile: PeerProfile,
    /// Where the peer ports are (default: this source tree's peers/).
    #[arg(long, value_name = "DIR")]
    peers_dir: Option<PathBuf>,
    /// Seconds after which one run is killed and reported as failed.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Exit with status 1 when any framework was skipped or failed (default: only when
    /// cohort itself failed).
    #[arg(long)]
    strict: bool,
    /// Only the scenarios whose name starts with one of these (comma-separated, e.g.
    /// `async-ask` or `ping-pong,skynet`; default: every scenario).
    #[arg(long, value_delimiter = ',', value_name = "PREFIX")]
    scenarios: Vec<String>,
}

/// Runs the comparison, prints it, returns the process's exit status.
pub fn run(args: &CompareArgs, runs: Option<usize>, format: Format, machine: &Machine) -> i32 {
    let size = if args.tiny {
        Size::Tiny
    } else if args.quick {
        Size::Quick
    } else {
        Size::Full
    };
    let rounds = runs.unwrap_or(match size {
        Size::Full => 5,
        Size::Quick => 3,
        Size::Tiny => 1,
    });
    if rounds == 0 {
        eprintln!("cohort-bench compare: --runs must be at least 1");
        return 2;
    }
    if let Some(p) = &args.chart
        && !matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("svg" | "png" | "SVG" | "PNG")
        )
    {
        eprintln!(
            "cohort-bench compare: --chart {}: the file name must end in .svg or .png",
            p.display()
        );
        return 2;
    }
    let dir = args
        .peers_dir
        .clone()
        .unwrap_or_else(peers::default_peers_dir);
    let frameworks = peers::frameworks(&dir, args.peer_profile, &args.only);
    let mut cases = plan::cases(size);
    cases.extend(remote::cases(size));
    if !args.scenarios.is_empty() {
        cases.retain(|c| args.scenarios.iter().any(|p| c.id.starts_with(p.as_str())));
        if cases.is_empty() {
            eprintln!(
                "cohort-bench compare: --scenarios {}: no scenario's name starts with that",
                args.scenarios.join(",")
            );
            return 2;
        }
    }
    let rows = measure(
        &cases,
        &frameworks,
        rounds,
        Duration::from_secs(args.timeout),
    );
    results::print(&rows, format, machine);
    if let Some(p) = &args.chart {
        match chart::draw(&rows, p) {
            Ok(()) => eprintln!("compare: chart written to {}", p.display()),
            Err(e) => {
                eprintln!("cohort-bench compare: {e}");
                return 1;
            }
        }
    }
    let bad = |strict: bool| {
        rows.iter()
            .flat_map(|r| &r.cells)
            .any(|c| match &c.outcome {
                Outcome::Measured(_) => false,
                Outcome::Skipped(_) => strict,
                Outcome::Failed(_) => strict || c.framework == "cohort",
            })
    };
    if bad(args.strict) {
        eprintln!("cohort-bench compare: some frameworks failed or were skipped (see the table)");
        1
    } else {
        0
    }
}

/// Whether `framework` runs `case` (the remote and ask rows have ports on some peers only).
fn takes_part(framework: &str, case: &Case) -> bool {
    remote::runs(framework, case.kind) && plan::ported(framework, case.id)
}

/// Runs every case: per case, `rounds` rounds of every ready framework in turn.
fn measure(
    cases: &[Case],
    frameworks: &[peers::Framework],
    rounds: usize,
    limit: Duration,
) -> Vec<Row> {
    let ready = |case: &Case| {
        frameworks
            .iter()
            .filter(|f| takes_part(f.name, case) && matches!(f.status, Availability::Ready { .. }))
            .count()
    };
    let bar = ProgressBar::new(cases.iter().map(|c| rounds * ready(c)).sum::<usize>() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .expect("valid template"),
    );
    let mut rows = Vec::new();
    for case in cases {
        // A row lists only the frameworks with a port of it.
        let frameworks: Vec<&peers::Framework> = frameworks
            .iter()
            .filter(|f| takes_part(f.name, case))
            .collect();
        // The floor's elapsed seconds, as each cohort run reported it.
        let mut floors = Vec::new();
        let mut cells: Vec<Cell> = frameworks
            .iter()
            .map(|f| Cell {
                framework: f.name,
                outcome: match &f.status {
                    Availability::Ready { .. } => Outcome::Measured(Vec::new()),
                    Availability::Skipped(why) => Outcome::Skipped(why.clone()),
                    Availability::Failed(why) => Outcome::Failed(why.clone()),
                },
            })
            .collect();
        for round in 0..rounds {
            for (f, cell) in frameworks.iter().zip(cells.iter_mut()) {
                let Availability::Ready { program, lead } = &f.status else {
                    continue;
                };
                bar.set_message(format!("{} {} (round {})", case.id, f.name, round + 1));
                let Outcome::Measured(samples) = &mut cell.outcome else {
                    // Failed in an earlier round: not run again.
                    bar.inc(1);
                    continue;
                };
                let mut argv = lead.clone();
                let got = if f.name == "cohort" {
                    argv.extend(case.cohort.iter().cloned());
                    argv.extend(["--runs".into(), "1".into(), "--json".into()]);
                    runner::output_of(program, &argv, limit).and_then(|out| match case.kind {
                        Kind::RoundTripP50 => remote::cohort_p50(&out),
                        Kind::Latency(q) => remote::cohort_ask_latency(&out, q),
                        _ => runner::cohort_elapsed(&out, case.messages).map(|(s, floor)| {
                            floors.extend(floor);
                            s
                        }),
                    })
                } else {
                    argv.extend(case.peer.iter().cloned());
                    runner::output_of(program, &argv, limit).and_then(|out| match case.kind {
                        Kind::RoundTripP50 => remote::peer_p50(&out, case.messages),
                        Kind::Latency(q) => remote::peer_latency(&out, case.messages, q),
                        _ => runner::peer_elapsed(&out, case.messages),
                    })
                };
                match got {
                    Ok(s) => samples.push(s),
                    Err(e) => cell.outcome = Outcome::Failed(e),
                }
                bar.inc(1);
            }
        }
        rows.push(Row {
            case: case.clone(),
            cells,
            floor_s: floors,
        });
    }
    bar.finish_and_clear();
    rows
}
