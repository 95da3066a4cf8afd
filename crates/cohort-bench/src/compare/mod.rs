//! `cohort-bench compare`: the same scenarios on cohort and on its peers (actix, kameo, ractor,
//! CAF, Proto.Actor; their ports live in peers/), in one run on one machine; the remote rows
//! (two processes on loopback) on cohort and the peers with a remote port.
//!
//! It builds what is missing with peers/build.sh (the Rust peers with cargo, the CAF port with
//! cmake when libcaf-dev is installed, the Proto.Actor port with `go build` when Go is; only
//! that with `--build-only`), then runs, per scenario, every framework once per round, in turn
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
    /// Only build the selected peers, as a comparison would (skipping those not installed),
    /// print one line per peer (built, skipped or failed) and exit: status 1 when a build
    /// failed (with --strict, also when a peer was skipped), else 0.
    #[arg(long, conflicts_with_all = ["quick", "tiny", "chart", "scenarios"])]
    build_only: bool,
}

/// Runs the comparison, prints it, returns the process's exit status.
pub fn run(args: &CompareArgs, runs: Option<usize>, format: Format, machine: &Machine) -> i32 {
    let dir = args
        .peers_dir
        .clone()
        .unwrap_or_else(peers::default_peers_dir);
    if args.build_only {
        let (lines, status) = build_report(
            &peers::frameworks(&dir, args.peer_profile, &args.only),
            args.strict,
        );
        for line in lines {
            println!("{line}");
        }
        return status;
    }
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

/// `--build-only`'s lines, one per peer (cohort, this binary, is never built), and its exit
/// status: 1 when a peer failed to build, or with `strict` was skipped; else 0.
fn build_report(frameworks: &[peers::Framework], strict: bool) -> (Vec<String>, i32) {
    let mut status = 0;
    let lines = frameworks
        .iter()
        .filter(|f| f.name != "cohort")
        .map(|f| match &f.status {
            Availability::Ready { .. } => format!("{}: built", f.name),
            Availability::Skipped(why) => {
                if strict {
                    status = 1;
                }
                format!("{}: skipped: {why}", f.name)
            }
            Availability::Failed(why) => {
                status = 1;
                format!("{}: failed: {why}", f.name)
            }
        })
        .collect();
    (lines, status)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<CompareArgs, clap::Error> {
        let cli = Cli::try_parse_from(["cohort-bench", "compare"].iter().chain(args))?;
        match cli.command {
            Command::Compare(a) => Ok(a),
            _ => unreachable!("the compare subcommand"),
        }
    }

    #[test]
    fn build_only_takes_the_peer_selection_and_refuses_run_flags() {
        let a = parse(&[
            "--build-only",
            "--only",
            "caf,pekko",
            "--peer-profile",
            "ci",
        ])
        .unwrap();
        assert!(a.build_only);
        assert_eq!(a.only, ["caf", "pekko"]);
        assert_eq!(a.peer_profile, PeerProfile::Ci);
        assert!(!parse(&[]).unwrap().build_only);
        for run_flag in [
            &["--tiny"][..],
            &["--quick"],
            &["--chart", "c.svg"],
            &["--scenarios", "skynet"],
        ] {
            let args: Vec<&str> = ["--build-only"].iter().chain(run_flag).copied().collect();
            let e = parse(&args).unwrap_err();
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{run_flag:?}"
            );
        }
    }

    #[test]
    fn build_report_fails_on_a_failed_build_and_with_strict_on_a_skipped_one() {
        let f = |name, status| peers::Framework { name, status };
        let ready = || Availability::Ready {
            program: PathBuf::from("p"),
            lead: Vec::new(),
        };
        let skipped = || Availability::Skipped("not installed".into());
        let built = [
            f("cohort", ready()),
            f("actix", ready()),
            f("caf", skipped()),
        ];
        let (lines, status) = build_report(&built, false);
        assert_eq!(lines, ["actix: built", "caf: skipped: not installed"]);
        assert_eq!(status, 0);
        assert_eq!(build_report(&built, true).1, 1);
        let failed = [f("kameo", Availability::Failed("build failed".into()))];
        assert_eq!(
            build_report(&failed, false),
            (vec!["kameo: failed: build failed".to_string()], 1)
        );
    }
}
