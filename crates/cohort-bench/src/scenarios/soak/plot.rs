//! The soak's plot: RSS, open file descriptors and threads over time, one panel each, a line
//! per process, the end of the warm-up marked. SVG or PNG, by the file's extension.

use super::sample::{Sample, mb};
use crate::report_cmd::plots::{Kind, load_font};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One process's samples and its label.
pub struct Series<'a> {
    pub label: &'a str,
    pub samples: &'a [Sample],
}

const COLORS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40)];
const WARMUP: RGBColor = RGBColor(255, 160, 0);

/// Draws the three panels into `path`; `warmup` in seconds.
pub fn draw(path: &Path, title: &str, series: &[Series<'_>], warmup: f64) -> Result<(), String> {
    load_font()?;
    let size = (1000, 960);
    match Kind::of(path)? {
        Kind::Svg => panels(
            SVGBackend::new(path, size).into_drawing_area(),
            title,
            series,
            warmup,
        ),
        Kind::Png => panels(
            BitMapBackend::new(path, size).into_drawing_area(),
            title,
            series,
            warmup,
        ),
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

type Metric = (&'static str, fn(&Sample) -> f64);

fn panels<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series<'_>],
    warmup: f64,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(err)?;
    let metrics: [Metric; 3] = [
        ("RSS (MB)", |s| mb(s.rss)),
        ("open file descriptors", |s| s.fds as f64),
        ("threads", |s| s.threads as f64),
    ];
    let end = series
        .iter()
        .flat_map(|s| s.samples.iter().map(|x| x.t))
        .fold(1.0f64, f64::max)
        / 60.0;
    for (area, (name, value)) in root.split_evenly((3, 1)).into_iter().zip(metrics) {
        let top = series
            .iter()
            .flat_map(|s| s.samples.iter().map(value))
            .fold(1.0f64, f64::max)
            * 1.15;
        let mut chart = ChartBuilder::on(&area)
            .caption(name, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..end, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("minutes")
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        let w = warmup / 60.0;
        chart
            .draw_series(LineSeries::new(
                [(w, 0.0), (w, top)],
                WARMUP.stroke_width(2),
            ))
            .map_err(err)?
            .label("end of warm-up")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], WARMUP.stroke_width(2)));
        for (s, color) in series.iter().zip(COLORS) {
            chart
                .draw_series(LineSeries::new(
                    s.samples.iter().map(|x| (x.t / 60.0, value(x))),
                    color.stroke_width(2),
                ))
                .map_err(err)?
                .label(s.label)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 13))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
