//! The comparison's results: per scenario and framework, the runs' elapsed times (or why there
//! are none), summarised as median, min-max and ratio to cohort, printed as a table, CSV or
//! JSON records in the suite's stable format.

use super::plan::{Case, Kind};
use crate::machine::Machine;
use crate::report::{self, Format, Record};
use serde_json::{Map, Value, json};

/// What one framework gave for one scenario.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The elapsed seconds of each run.
    Measured(Vec<f64>),
    /// Not installed here: the reason, with the command that installs it.
    Skipped(String),
    /// Failed to build, crashed, timed out or gave a wrong result.
    Failed(String),
}

/// One framework's result for one scenario.
#[derive(Debug, Clone)]
pub struct Cell {
    pub framework: &'static str,
    pub outcome: Outcome,
}

/// A scenario's results, cohort first.
#[derive(Debug, Clone)]
pub struct Row {
    pub case: Case,
    pub cells: Vec<Cell>,
    /// The elapsed seconds of the scenario's floor (see `floors`), once per cohort run.
    pub floor_s: Vec<f64>,
}

/// A measured cell's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub runs: usize,
    /// This framework's median time over cohort's: 2.0 means cohort took half as long.
    pub ratio: Option<f64>,
    /// The floor's median time over this framework's: the share of the floor reached.
    pub of_floor: Option<f64>,
}

impl Row {
    /// Whether its samples are round-trip latencies (shown as times, not rates).
    pub fn is_latency(&self) -> bool {
        matches!(self.case.kind, Kind::RoundTripP50 | Kind::Latency(_))
    }

    /// The percentile its latencies are (50 for the round-trip medians).
    fn percentile(&self) -> u8 {
        match self.case.kind {
            Kind::Latency(q) => q,
            _ => 50,
        }
    }

    fn cohort_median(&self) -> Option<f64> {
        self.cells
            .iter()
            .find(|c| c.framework == "cohort")
            .and_then(|c| match &c.outcome {
                Outcome::Measured(s) if !s.is_empty() => Some(report::median_min_max(s).0),
                _ => None,
            })
    }

    /// The summary of `cell` (None unless measured).
    pub fn summary(&self, cell: &Cell) -> Option<Summary> {
        let Outcome::Measured(s) = &cell.outcome else {
            return None;
        };
        if s.is_empty() {
            return None;
        }
        let (median_s, min_s, max_s) = report::median_min_max(s);
        Some(Summary {
            median_s,
            min_s,
            max_s,
            runs: s.len(),
            ratio: self.cohort_median().map(|c| median_s / c),
            of_floor: self.floor_median().map(|f| f / median_s),
        })
    }

    /// The floor's median elapsed seconds, if cohort's runs reported it.
    pub fn floor_median(&self) -> Option<f64> {
        (!self.floor_s.is_empty()).then(|| report::median_min_max(&self.floor_s).0)
    }
}

fn rate(messages: u64, seconds: f64) -> f64 {
    messages as f64 / seconds
}

/// The rows as records of the suite's JSON format: metric `messages_per_s` (median and
/// min-max over the runs), the framework as the variant, and in `params` the framework,
/// sizes, elapsed seconds and `ratio_to_cohort`.
pub fn records(rows: &[Row], machine: &Machine) -> Vec<Record> {
    let mut out = Vec::new();
    for row in rows {
        for cell in &row.cells {
            let mut p = Map::new();
            p.insert("framework".into(), json!(cell.framework));
            p.insert("case".into(), json!(row.case.title));
            p.insert("messages".into(), json!(row.case.messages));
            p.insert("peer_args".into(), json!(row.case.peer.join(" ")));
            let rec = match (&cell.outcome, row.summary(cell)) {
                (Outcome::Measured(samples), Some(s)) => {
                    p.insert("elapsed_s".into(), json!(s.median_s));
                    p.insert("elapsed_s_min".into(), json!(s.min_s));
                    p.insert("elapsed_s_max".into(), json!(s.max_s));
                    p.insert(
                        "ratio_to_cohort".into(),
                        s.ratio.map_or(Value::Null, |r| json!(r)),
                    );
                    let (metric, values): (&str, Vec<f64>) = if row.is_latency() {
                        let metric = if row.percentile() == 99 {
                            "latency_ns_p99"
                        } else {
                            "latency_ns_p50"
                        };
                        (metric, samples.iter().map(|&t| t * 1e9).collect())
                    } else {
                        let rates = samples.iter().map(|&t| rate(row.case.messages, t));
                        ("messages_per_s", rates.collect())
                    };
                    let mut r = Record::from_samples(
                        row.case.id,
                        cell.framework,
                        &p,
                        metric,
                        &values,
                        machine,
                    );
                    if !row.is_latency() {
                        r.floor = row.floor_median().map(|f| rate(row.case.messages, f));
                        r.ratio_to_floor = s.of_floor;
                    }
                    r
                }
                (Outcome::Skipped(why), _) => {
                    p.insert("status".into(), json!("skipped"));
                    Record::failed(row.case.id, cell.framework, &p, why.clone(), machine)
                }
                (Outcome::Failed(why), _) => {
                    p.insert("status".into(), json!("failed"));
                    Record::failed(row.case.id, cell.framework, &p, why.clone(), machine)
                }
                (Outcome::Measured(_), None) => {
                    Record::failed(row.case.id, cell.framework, &p, "no run".into(), machine)
                }
            };
            out.push(rec);
        }
    }
    out
}

/// Seconds with 3 significant digits (ms below a second).
fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

/// Prints the rows in `format`.
pub fn print(rows: &[Row], format: Format, machine: &Machine) {
    match format {
        Format::Json => report::print(&records(rows, machine), Format::Json),
        Format::Csv => print_csv(rows),
        Format::Table => print_table(rows, machine),
    }
}

fn print_csv(rows: &[Row]) {
    println!(
        "scenario,framework,status,messages_per_s,min,max,elapsed_s,elapsed_s_min,elapsed_s_max,ratio_to_cohort,runs,error"
    );
    for row in rows {
        for cell in &row.cells {
            let m = row.case.messages;
            match (&cell.outcome, row.summary(cell)) {
                // The round-trip row's times are the p50s themselves; it has no rate.
                (_, Some(s)) if row.is_latency() => println!(
                    "{},{},ok,,,,{},{},{},{},{},",
                    row.case.id,
                    cell.framework,
                    s.median_s,
                    s.min_s,
                    s.max_s,
                    s.ratio.map_or(String::new(), |r| format!("{r:.4}")),
                    s.runs
                ),
                (_, Some(s)) => println!(
                    "{},{},ok,{:.0},{:.0},{:.0},{},{},{},{},{},",
                    row.case.id,
                    cell.framework,
                    rate(m, s.median_s),
                    rate(m, s.max_s),
                    rate(m, s.min_s),
                    s.median_s,
                    s.min_s,
                    s.max_s,
                    s.ratio.map_or(String::new(), |r| format!("{r:.4}")),
                    s.runs
                ),
                (Outcome::Skipped(e), None) | (Outcome::Failed(e), None) => println!(
                    "{},{},{},,,,,,,,0,\"{}\"",
                    row.case.id,
                    cell.framework,
                    if matches!(cell.outcome, Outcome::Skipped(_)) {
                        "skipped"
                    } else {
                        "failed"
                    },
                    e.replace('"', "'")
                ),
                (Outcome::Measured(_), None) => {}
            }
        }
    }
}

fn print_table(rows: &[Row], machine: &Machine) {
    println!(
        "{} ({} cores), {}, commit {}, {}",
        machine.machine, machine.cores, machine.rustc, machine.commit, machine.date
    );
    println!(
        "ratio = the framework's median time / cohort's (above 1: cohort is faster by that factor); \
         of floor = the hand-written floor's median time / the framework's"
    );
    let header = [
        "scenario",
        "framework",
        "median",
        "min .. max",
        "elapsed",
        "ratio",
        "of floor",
        "runs",
    ];
    let mut table: Vec<[String; 8]> = Vec::new();
    for row in rows {
        for (i, cell) in row.cells.iter().enumerate() {
            let name = if i == 0 {
                row.case.id.to_string()
            } else {
                String::new()
            };
            let m = row.case.messages;
            table.push(match (&cell.outcome, row.summary(cell)) {
                (_, Some(s)) if row.is_latency() => [
                    name,
                    cell.framework.into(),
                    format!("p{} {:.1} us", row.percentile(), s.median_s * 1e6),
                    format!("{:.1} .. {:.1} us", s.min_s * 1e6, s.max_s * 1e6),
                    "-".into(),
                    ratio_text(s.ratio),
                    "-".into(),
                    s.runs.to_string(),
                ],
                (_, Some(s)) => [
                    name,
                    cell.framework.into(),
                    format!(
                        "{} {}",
                        report::thousands(rate(m, s.median_s).round() as u64),
                        if row.case.kind == Kind::Ask {
                            "round trips/s"
                        } else {
                            "msg/s"
                        }
                    ),
                    format!(
                        "{} .. {}",
                        report::thousands(rate(m, s.max_s).round() as u64),
                        report::thousands(rate(m, s.min_s).round() as u64)
                    ),
                    secs(s.median_s),
                    ratio_text(s.ratio),
                    s.of_floor.map_or_else(|| "-".into(), |x| format!("{x:.3}")),
                    s.runs.to_string(),
                ],
                (Outcome::Skipped(e), None) => note(name, cell.framework, format!("skipped: {e}")),
                (Outcome::Failed(e), None) => note(name, cell.framework, format!("FAILED: {e}")),
                (Outcome::Measured(_), None) => note(name, cell.framework, "no run".into()),
            });
        }
    }
    // Long skip/failure messages span the columns after theirs: only the measured cells
    // size the columns.
    let mut widths = header.map(str::len);
    for r in table.iter().filter(|r| !r[3].is_empty()) {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in &table {
        widths[0] = widths[0].max(r[0].len());
        widths[1] = widths[1].max(r[1].len());
    }
    let line = |cells: &[String; 8]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i >= 2 && !cells[3].is_empty() {
                s.push_str(&format!("{c:>w$}  "));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(&header.map(String::from));
    line(&widths.map(|w| "-".repeat(w)));
    for r in &table {
        line(r);
    }
}

/// A table row whose only content is a note (skipped, failed).
fn note(name: String, framework: &str, text: String) -> [String; 8] {
    [
        name,
        framework.into(),
        text,
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::{Size, cases};

    fn row() -> Row {
        Row {
            case: cases(Size::Tiny)[0].clone(),
            cells: vec![
                Cell {
                    framework: "cohort",
                    outcome: Outcome::Measured(vec![1.0, 2.0, 3.0]),
                },
                Cell {
                    framework: "actix",
                    outcome: Outcome::Measured(vec![4.0, 5.0, 6.0]),
                },
                Cell {
                    framework: "caf",
                    outcome: Outcome::Skipped("install it".into()),
                },
            ],
            floor_s: vec![0.5, 1.0, 1.5],
        }
    }

    #[test]
    fn ratio_is_median_over_cohorts() {
        let r = row();
        let s = r.summary(&r.cells[1]).unwrap();
        assert_eq!((s.median_s, s.min_s, s.max_s, s.runs), (5.0, 4.0, 6.0, 3));
        assert_eq!(s.ratio, Some(2.5));
        assert_eq!(s.of_floor, Some(0.2));
        assert!(r.summary(&r.cells[2]).is_none());
    }

    #[test]
    fn skipped_and_failed_are_records_not_gaps() {
        let recs = records(&[row()], &Machine::detect());
        assert_eq!(recs.len(), 3);
        assert!(recs[0].ok && recs[1].ok && !recs[2].ok);
        assert_eq!(recs[2].error.as_deref(), Some("install it"));
        assert_eq!(recs[1].params["ratio_to_cohort"], json!(2.5));
    }
}
