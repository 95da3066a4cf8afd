//! The `report` subcommand: reads result files (the suite's `--json` or `--csv` output) and
//! draws, per (scenario, metric), bars of each variant's median with min-max whiskers; with
//! `--x PARAM`, lines of the median over that parameter (max_demands_at_once curves, pool
//! sizes); latency percentiles of every variant that has them; and a markdown table.

pub(crate) mod plots;

pub use plots::load_font;
mod rows;

use clap::Args;
use plots::Series;
use rows::Row;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Flags of `report`.
#[derive(Args, Clone)]
pub struct ReportArgs {
    /// Result files: JSON lines (`--json`) or CSV (`--csv`) output of the suite.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where the charts go: `DIR/NAME.svg` or `.png` writes `DIR/NAME-<scenario>-<metric>.svg`
    /// and so on (the extension picks the format).
    #[arg(long, default_value = "report.svg")]
    pub out: PathBuf,
    /// Also draw lines of each metric over this numeric parameter (e.g. max_demands_at_once,
    /// threads, workers), one line per combination of the other parameters (JSON input).
    #[arg(long)]
    pub x: Option<String>,
    /// Writes the markdown table here instead of printing it.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

/// Runs `report`: returns the files written.
pub fn run(a: &ReportArgs) -> Result<Vec<PathBuf>, String> {
    plots::Kind::of(&a.out)?;
    let mut all = Vec::new();
    for f in &a.files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        all.extend(rows::parse(&f.display().to_string(), &text)?);
    }
    if all.is_empty() {
        return Err("the result files hold no results".into());
    }
    let md = markdown(&all);
    let mut written = Vec::new();
    match &a.markdown {
        Some(p) => {
            std::fs::write(p, md).map_err(|e| format!("--markdown {}: {e}", p.display()))?;
            written.push(p.clone());
        }
        None => print!("{md}"),
    }
    let ok: Vec<&Row> = all.iter().filter(|r| r.ok && r.value.is_finite()).collect();
    for ((scenario, metric), group) in groups(&ok, |r| (r.scenario.clone(), r.metric.clone())) {
        let path = sibling(&a.out, &format!("{scenario}-{metric}"));
        plots::bars(&path, &format!("{scenario}: {metric}"), &group)?;
        written.push(path);
        if let Some(x) = &a.x {
            let series = over(&group, x);
            if !series.is_empty() {
                let path = sibling(&a.out, &format!("{scenario}-{metric}-by-{x}"));
                plots::lines(
                    &path,
                    &format!("{scenario}: {metric} by {x}"),
                    x,
                    &metric,
                    &series,
                )?;
                written.push(path);
            }
        }
    }
    let series = percentile_series(&ok);
    if !series.is_empty() {
        let path = sibling(&a.out, "latency-percentiles");
        plots::percentiles(&path, "latency percentiles", &series)?;
        written.push(path);
    }
    Ok(written)
}

/// `dir/stem.ext` -> `dir/stem-suffix.ext`.
fn sibling(out: &Path, suffix: &str) -> PathBuf {
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or("report");
    let ext = out.extension().and_then(|s| s.to_str()).unwrap_or("svg");
    let clean: String = suffix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.with_file_name(format!("{stem}-{clean}.{ext}"))
}

/// Groups `rows` by `key`, in order of first appearance.
fn groups<'a, K: PartialEq>(rows: &[&'a Row], key: impl Fn(&Row) -> K) -> Vec<(K, Vec<&'a Row>)> {
    let mut out: Vec<(K, Vec<&Row>)> = Vec::new();
    for &r in rows {
        let k = key(r);
        match out.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The parameters that name a line: all but `x`, the dispatcher by its kind only (its label
/// repeats the pool parameters).
fn line_params(r: &Row, x: &str) -> Map<String, Value> {
    let mut p = r.params.clone();
    p.remove(x);
    if let Some(Value::String(d)) = p.get("dispatcher") {
        let kind = d.split('(').next().unwrap_or(d).to_string();
        p.insert("dispatcher".into(), Value::String(kind));
    }
    p
}

/// Lines over the numeric parameter `x`: one per combination of the other parameters,
/// labelled by those that differ between lines.
fn over(group: &[&Row], x: &str) -> Vec<Series> {
    let with_x: Vec<&Row> = group
        .iter()
        .copied()
        .filter(|r| r.params.get(x).and_then(Value::as_f64).is_some())
        .collect();
    let lines = groups(&with_x, |r| line_params(r, x));
    if lines.is_empty() || with_x.len() == lines.len() {
        return Vec::new(); // no parameter sweep here
    }
    let varying: Vec<&String> = lines[0]
        .0
        .keys()
        .filter(|k| lines.iter().any(|(p, _)| p.get(*k) != lines[0].0.get(*k)))
        .collect();
    lines
        .iter()
        .map(|(p, rows)| {
            let mut points: Vec<(f64, f64, f64, f64)> = rows
                .iter()
                .map(|r| {
                    let xv = r.params.get(x).and_then(Value::as_f64).unwrap_or(0.0);
                    (xv, r.value, r.min, r.max)
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label = varying
                .iter()
                .map(|k| format!("{k}={}", p.get(*k).map(show).unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" ");
            Series {
                label: if label.is_empty() {
                    "all".into()
                } else {
                    label
                },
                points,
            }
        })
        .collect()
}

/// `latency_ns_p999` -> 0.999.
fn quantile_of(metric: &str) -> Option<f64> {
    let digits = metric.strip_prefix("latency_ns_p")?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    format!("0.{digits}").parse().ok()
}

fn percentile_series(rows: &[&Row]) -> Vec<Series> {
    let with_q: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| quantile_of(&r.metric).is_some())
        .collect();
    groups(&with_q, |r| (r.scenario.clone(), r.variant.clone()))
        .into_iter()
        .map(|((scenario, variant), rows)| {
            let mut points: Vec<(f64, f64, f64, f64)> = rows
                .iter()
                .filter_map(|r| {
                    let q = quantile_of(&r.metric)?;
                    Some((plots::nines(q), r.value, r.min, r.max))
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: format!("{scenario}: {variant}"),
                points,
            }
        })
        .collect()
}

/// The results as a markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut s = String::from(
        "| scenario | variant | metric | median | min .. max | runs |\n|---|---|---|---:|---:|---:|\n",
    );
    for r in rows {
        let (median, range) = if r.ok {
            (
                crate::report::human(r.value, &r.metric),
                format!(
                    "{} .. {}",
                    crate::report::human(r.min, &r.metric),
                    crate::report::human(r.max, &r.metric)
                ),
            )
        } else {
            ("FAILED".to_string(), String::new())
        };
        s += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&r.scenario),
            cell(&r.variant),
            cell(&r.metric),
            median,
            range,
            r.runs
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> String {
        let mut s = String::new();
        for (md, v) in [(1, 3.0), (4, 5.0), (100, 9.0)] {
            for fifo in ["individual", "cooperation"] {
                s += &format!(
                    "{{\"scenario\":\"self-send\",\"variant\":\"tp {fifo} {md}\",\"params\":{{\"dispatcher\":\"thread_pool(2 threads)\",\"fifo\":\"{fifo}\",\"max_demands_at_once\":{md}}},\"metric\":\"messages_per_s\",\"value\":{v},\"min\":1.0,\"max\":10.0,\"runs\":3,\"ok\":true}}\n"
                );
            }
        }
        for (p, v) in [("p50", 1000.0), ("p99", 5000.0), ("p999", 20000.0)] {
            s += &format!(
                "{{\"scenario\":\"latency\",\"variant\":\"parallel\",\"metric\":\"latency_ns_{p}\",\"value\":{v},\"min\":{v},\"max\":{v},\"runs\":1,\"ok\":true}}\n"
            );
        }
        s
    }

    #[test]
    fn quantiles_from_metric_names() {
        assert_eq!(quantile_of("latency_ns_p50"), Some(0.5));
        assert_eq!(quantile_of("latency_ns_p999"), Some(0.999));
        assert_eq!(quantile_of("latency_ns_mean"), None);
        assert!((plots::nines(0.99) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn sweeps_become_one_line_per_other_parameter_set() {
        let rows = rows::parse("r.json", &results()).unwrap();
        let refs: Vec<&Row> = rows.iter().filter(|r| r.scenario == "self-send").collect();
        let lines = over(&refs, "max_demands_at_once");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].label, "fifo=individual");
        assert_eq!(
            lines[0].points.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 4.0, 100.0]
        );
        assert!(over(&refs, "threads").is_empty());
    }

    #[test]
    fn draws_svg_charts_and_a_markdown_table() {
        if plots::load_font().is_err() {
            // CI installs fonts-dejavu-core; without a font no chart can be laid out.
            eprintln!("skipped: no TrueType font on this machine");
            return;
        }
        let dir = std::env::temp_dir().join(format!("cohort-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("results.json");
        std::fs::write(&input, results()).unwrap();
        for ext in ["svg", "png"] {
            let a = ReportArgs {
                files: vec![input.clone()],
                out: dir.join(format!("r.{ext}")),
                x: Some("max_demands_at_once".into()),
                markdown: Some(dir.join("r.md")),
            };
            let written = run(&a).unwrap();
            let names: Vec<String> = written
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            for want in [
                format!("r-self-send-messages_per_s.{ext}"),
                format!("r-self-send-messages_per_s-by-max_demands_at_once.{ext}"),
                format!("r-latency-percentiles.{ext}"),
            ] {
                assert!(names.contains(&want), "{want} not in {names:?}");
                assert!(std::fs::metadata(dir.join(&want)).unwrap().len() > 1000);
            }
        }
        let svg = std::fs::read_to_string(dir.join("r-self-send-messages_per_s.svg")).unwrap();
        assert!(svg.contains("tp individual 4"));
        let md = std::fs::read_to_string(dir.join("r.md")).unwrap();
        assert_eq!(md.lines().count(), 2 + 9);
        assert!(md.contains("| latency | parallel | latency_ns_p99 | 5,000 ns |"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_wrong_extension_is_refused() {
        let a = ReportArgs {
            files: vec!["x.json".into()],
            out: "r.pdf".into(),
            x: None,
            markdown: None,
        };
        assert!(run(&a).unwrap_err().contains(".svg or .png"));
    }
}
