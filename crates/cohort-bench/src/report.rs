//! Results: one record per (scenario, variant, metric), printed as a table, CSV or JSON lines.
//!
//! The JSON format (one object per line) is stable: scripts (and the peer comparison to come)
//! read it:
//! `{"scenario", "variant", "params", "metric", "value", "min", "max", "runs", "ok", "error",
//!   "floor", "ratio_to_floor", "machine", "rustc", "commit", "date"}` where `value` is the
//! median of `runs` runs and `floor` the same metric of the scenario's hand-written floor
//! (`null` where it has none).

use crate::machine::Machine;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// One measured quantity, over several runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub scenario: String,
    pub variant: String,
    pub params: Map<String, Value>,
    pub metric: String,
    #[serde(deserialize_with = "nan_if_null")]
    pub value: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub min: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub max: f64,
    pub runs: usize,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The same metric measured on the scenario's floor (see `floors`), if it has one.
    pub floor: Option<f64>,
    /// The share of the floor's performance reached (1 at the floor; see
    /// `floors::ratio_to_floor`).
    pub ratio_to_floor: Option<f64>,
    #[serde(flatten)]
    pub machine: Machine,
}

impl Record {
    /// A record from the samples of several runs (median, min, max).
    pub fn from_samples(
        scenario: &str,
        variant: &str,
        params: &Map<String, Value>,
        metric: &str,
        samples: &[f64],
        machine: &Machine,
    ) -> Self {
        let (value, min, max) = median_min_max(samples);
        Self {
            scenario: scenario.into(),
            variant: variant.into(),
            params: params.clone(),
            metric: metric.into(),
            value,
            min,
            max,
            runs: samples.len(),
            ok: true,
            error: None,
            floor: None,
            ratio_to_floor: None,
            machine: machine.clone(),
        }
    }

    /// A failed scenario: `ok` false with the reason.
    pub fn failed(
        scenario: &str,
        variant: &str,
        params: &Map<String, Value>,
        error: String,
        machine: &Machine,
    ) -> Self {
        Self {
            scenario: scenario.into(),
            variant: variant.into(),
            params: params.clone(),
            metric: "error".into(),
            value: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
            runs: 0,
            ok: false,
            error: Some(error),
            floor: None,
            ratio_to_floor: None,
            machine: machine.clone(),
        }
    }
}

/// Reads a number written by [`Record`]'s serialisation, where a failed record's NaN was
/// written as `null`.
fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Median, min and max of non-empty samples.
pub fn median_min_max(samples: &[f64]) -> (f64, f64, f64) {
    assert!(!samples.is_empty(), "no samples");
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (median, s[0], s[n - 1])
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A readable table.
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per line.
    Json,
}

/// Prints records in `format`.
pub fn print(records: &[Record], format: Format) {
    match format {
        Format::Json => {
            for r in records {
                println!("{}", serde_json::to_string(r).expect("records serialise"));
            }
        }
        Format::Csv => {
            println!("scenario,variant,metric,value,min,max,runs,ok");
            for r in records {
                println!(
                    "{},\"{}\",{},{},{},{},{},{}",
                    r.scenario, r.variant, r.metric, r.value, r.min, r.max, r.runs, r.ok
                );
            }
        }
        Format::Table => print_table(records),
    }
}

fn print_table(records: &[Record]) {
    let rows: Vec<[String; 8]> = records
        .iter()
        .map(|r| {
            if r.ok {
                [
                    r.scenario.clone(),
                    r.variant.clone(),
                    r.metric.clone(),
                    human(r.value, &r.metric),
                    format!("{} .. {}", human(r.min, &r.metric), human(r.max, &r.metric)),
                    r.runs.to_string(),
                    r.floor.map_or_else(String::new, |f| human(f, &r.metric)),
                    r.ratio_to_floor
                        .map_or_else(String::new, |x| format!("{x:.3}")),
                ]
            } else {
                [
                    r.scenario.clone(),
                    r.variant.clone(),
                    "FAILED".into(),
                    r.error.clone().unwrap_or_default(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]
            }
        })
        .collect();
    let header = [
        "scenario",
        "variant",
        "metric",
        "median",
        "min .. max",
        "runs",
        "floor",
        "of floor",
    ];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 8]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i >= 3 {
                s.push_str(&format!("{c:>w$}  "));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header);
    line(widths.map(|w| "-".repeat(w)).each_ref().map(String::as_str));
    for row in &rows {
        line(row.each_ref().map(String::as_str));
    }
}

/// A value with its unit and thousands separators.
pub fn human(v: f64, metric: &str) -> String {
    if v.is_nan() {
        return "-".into();
    }
    match metric {
        m if m.ends_with("_bytes") => format!("{:.1} MiB", v / (1024.0 * 1024.0)),
        m if m.ends_with("_s") && m.contains("elapsed") => format!("{:.4} s", v),
        m if m.starts_with("latency_ns") || m.contains("_ns") => {
            format!("{} ns", thousands(v.round() as u64))
        }
        m if m.ends_with("_pct") => format!("{v:.3} %"),
        "messages" => thousands(v.round() as u64),
        m if m.ends_with("_per_s") => format!("{}/s", thousands(v.round() as u64)),
        m if m.ends_with("_ns_per_msg") => format!("{v:.1} ns"),
        m if m.ends_with("_ratio") => format!("{v:.3}x"),
        _ => format!("{v}"),
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median_min_max(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(median_min_max(&[4.0, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(40_123_456), "40,123,456");
    }
}
