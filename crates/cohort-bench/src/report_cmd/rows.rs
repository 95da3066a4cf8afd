//! Reading results back: the suite's JSON lines (`--json`) or CSV (`--csv`) output.

use serde_json::{Map, Value};

/// One result read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub scenario: String,
    pub variant: String,
    pub metric: String,
    pub value: f64,
    pub min: f64,
    pub max: f64,
    pub runs: u64,
    pub ok: bool,
    /// The run's parameters (JSON input only).
    pub params: Map<String, Value>,
}

/// Parses a results file: JSON lines if its first non-blank character is `{`, else the CSV
/// the suite writes (`scenario,variant,metric,value,min,max,runs,ok`). `name` is for errors.
pub fn parse(name: &str, text: &str) -> Result<Vec<Row>, String> {
    if text.trim_start().starts_with('{') {
        parse_json_lines(name, text)
    } else {
        parse_csv(name, text)
    }
}

fn parse_json_lines(name: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("{name}:{}", i + 1);
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("{}: not a JSON result: {e}", at()))?;
        let s = |k: &str| -> Result<String, String> {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("{}: the result has no \"{k}\" string", at()))
        };
        let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
        out.push(Row {
            scenario: s("scenario")?,
            variant: s("variant")?,
            metric: s("metric")?,
            value: f("value"),
            min: f("min"),
            max: f("max"),
            runs: v.get("runs").and_then(Value::as_u64).unwrap_or(0),
            ok: v.get("ok").and_then(Value::as_bool).unwrap_or(false),
            params: v
                .get("params")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Splits one CSV line, honouring double quotes (`""` inside quotes is a quote).
fn split_csv(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

fn parse_csv(name: &str, text: &str) -> Result<Vec<Row>, String> {
    const HEADER: &str = "scenario,variant,metric,value,min,max,runs,ok";
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, h)) if h.trim() == HEADER => {}
        _ => {
            return Err(format!(
                "{name}: neither JSON lines nor the suite's CSV (header \"{HEADER}\"): \
                 write results with --json or --csv"
            ));
        }
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let c = split_csv(line);
        if c.len() != 8 {
            return Err(format!(
                "{name}:{}: {} fields, expected 8 ({HEADER})",
                i + 1,
                c.len()
            ));
        }
        let num = |s: &str| s.trim().parse::<f64>().unwrap_or(f64::NAN);
        out.push(Row {
            scenario: c[0].clone(),
            variant: c[1].clone(),
            metric: c[2].clone(),
            value: num(&c[3]),
            min: num(&c[4]),
            max: num(&c[5]),
            runs: c[6].trim().parse().unwrap_or(0),
            ok: c[7].trim() == "true",
            params: Map::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_lines_and_csv_alike() {
        let json = r#"{"scenario":"ping-pong","variant":"one_thread, direct","params":{"count":5},"metric":"messages_per_s","value":2.0,"min":1.0,"max":3.0,"runs":3,"ok":true}"#;
        let csv = "scenario,variant,metric,value,min,max,runs,ok\n\
                   ping-pong,\"one_thread, direct\",messages_per_s,2,1,3,3,true\n";
        let a = parse("a.json", json).unwrap();
        let b = parse("b.csv", csv).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].params.get("count"), Some(&Value::from(5)));
        assert_eq!(
            (
                &b[0].variant,
                b[0].value,
                b[0].min,
                b[0].max,
                b[0].runs,
                b[0].ok
            ),
            (&a[0].variant, 2.0, 1.0, 3.0, 3, true)
        );
    }

    #[test]
    fn a_table_is_refused_with_a_hint() {
        let e = parse("t.txt", "scenario  variant  metric\n").unwrap_err();
        assert!(e.contains("--json or --csv"), "{e}");
        let e = parse("t.json", "{\"scenario\": 1}").unwrap_err();
        assert!(e.contains("t.json:1"), "{e}");
    }
}
