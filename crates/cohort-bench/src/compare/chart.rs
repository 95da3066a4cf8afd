//! The comparison's bar chart: per scenario, one bar per framework, its median throughput
//! (messages / s, log scale), with a min-max whisker. SVG or PNG by the file's extension.
//! Text needs a TrueType font (plotters measures it on either backend): the first of a few
//! usual system fonts is used; without one, the chart is drawn without text.

use super::results::{Outcome, Row};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const COLOURS: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draws the chart of `rows` to `path` (.svg or .png).
pub fn draw(rows: &[Row], path: &Path) -> Result<(), String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let size = (1400, 700);
    // plotters measures text with a TrueType font on either backend.
    let font = crate::report_cmd::load_font();
    let text = ext.is_some() && font.is_ok();
    if let Err(e) = font {
        eprintln!("compare: {e}; the chart has no text");
    }
    match ext.as_deref() {
        Some("svg") => plot(&SVGBackend::new(path, size).into_drawing_area(), rows, text),
        Some("png") => plot(
            &BitMapBackend::new(path, size).into_drawing_area(),
            rows,
            text,
        ),
        _ => Err(format!(
            "--chart {}: the file name must end in .svg or .png",
            path.display()
        )),
    }
}

fn plot<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rows: &[Row],
    text: bool,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("drawing the chart: {e}");
    // A round-trip median is no rate: the chart has the throughput rows only.
    let rows: Vec<&Row> = rows.iter().filter(|r| !r.is_latency()).collect();
    root.fill(&WHITE).map_err(err)?;
    let frameworks: Vec<&str> = rows
        .first()
        .map(|r| r.cells.iter().map(|c| c.framework).collect())
        .unwrap_or_default();
    let rates: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            r.cells.iter().filter_map(move |c| match &c.outcome {
                Outcome::Measured(s) => Some(
                    s.iter()
                        .map(|t| r.case.messages as f64 / t)
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
        })
        .flatten()
        .collect();
    let lo = rates.iter().cloned().fold(f64::INFINITY, f64::min).max(1.0);
    let hi = rates.iter().cloned().fold(0.0, f64::max).max(lo * 10.0);
    let (y0, y1) = (lo / 2.0, hi * 2.0);
    let n = rows.len().max(1);
    let mut builder = ChartBuilder::on(root);
    builder.margin(20);
    if text {
        builder
            .caption(
                "cohort vs peers: messages / s (median, min-max), log scale",
                ("sans-serif", 26),
            )
            .x_label_area_size(40)
            .y_label_area_size(90);
    }
    let mut chart = builder
        .build_cartesian_2d(0f64..n as f64, (y0..y1).log_scale())
        .map_err(err)?;
    if text {
        let ids: Vec<&str> = rows.iter().map(|r| r.case.id).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    ids.get(i).map(|s| s.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("messages / s")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(err)?;
    }
    let k = frameworks.len().max(1) as f64;
    let width = 0.8 / k;
    for (j, fw) in frameworks.iter().enumerate() {
        let colour = COLOURS[j % COLOURS.len()];
        let mut bars = Vec::new();
        let mut whiskers = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let Some(cell) = row.cells.iter().find(|c| c.framework == *fw) else {
                continue;
            };
            let Some(s) = row.summary(cell) else {
                continue;
            };
            let m = row.case.messages as f64;
            let x0 = i as f64 + 0.1 + j as f64 * width;
            bars.push(Rectangle::new(
                [(x0, y0), (x0 + width * 0.9, m / s.median_s)],
                colour.filled(),
            ));
            let xm = x0 + width * 0.45;
            whiskers.push(PathElement::new(
                vec![(xm, m / s.max_s), (xm, m / s.min_s)],
                BLACK.stroke_width(1),
            ));
        }
        let series = chart.draw_series(bars).map_err(err)?;
        if text {
            series.label(*fw).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled())
            });
        }
        chart.draw_series(whiskers).map_err(err)?;
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::{Size, cases};
    use crate::compare::results::Cell;

    fn rows() -> Vec<Row> {
        cases(Size::Tiny)
            .into_iter()
            .map(|case| Row {
                case,
                floor_s: Vec::new(),
                cells: vec![
                    Cell {
                        framework: "cohort",
                        outcome: Outcome::Measured(vec![0.01, 0.02]),
                    },
                    Cell {
                        framework: "caf",
                        outcome: Outcome::Skipped("not installed".into()),
                    },
                ],
            })
            .collect()
    }

    #[test]
    fn draws_svg_and_png_and_rejects_other_names() {
        let dir = std::env::temp_dir().join(format!("cohort-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["c.svg", "c.png"] {
            let p = dir.join(name);
            draw(&rows(), &p).unwrap();
            assert!(std::fs::metadata(&p).unwrap().len() > 100);
        }
        let svg = std::fs::read_to_string(dir.join("c.svg")).unwrap();
        if crate::report_cmd::load_font().is_ok() {
            assert!(svg.contains("ping-pong-one-thread") && svg.contains("cohort"));
        }
        assert!(
            draw(&rows(), &dir.join("c.jpg"))
                .unwrap_err()
                .contains(".svg or .png")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
