//! The charts, with plotters: bars with min-max whiskers per (scenario, metric), lines over a
//! numeric parameter, and latency percentiles. SVG or PNG, by the file's extension.

use super::rows::Row;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

/// Where the text font is looked for (PNG and SVG layout both need one); `COHORT_FONT`
/// overrides.
const FONT_PATHS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers a TrueType font as "sans-serif" (once per process).
pub fn load_font() -> Result<(), String> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let candidates: Vec<String> = std::env::var("COHORT_FONT")
                .into_iter()
                .chain(FONT_PATHS.iter().map(|s| s.to_string()))
                .collect();
            for path in &candidates {
                if let Ok(bytes) = std::fs::read(path) {
                    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                    return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                        .map_err(|_| format!("{path}: not a usable TrueType font"));
                }
            }
            Err(format!(
                "no TrueType font found (looked in {}): install fonts-dejavu-core or set \
                 COHORT_FONT to a .ttf file",
                candidates.join(", ")
            ))
        })
        .clone()
}

/// The image kinds, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Svg,
    Png,
}

impl Kind {
    /// The kind of `path`, from its extension.
    pub fn of(path: &Path) -> Result<Self, String> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Kind::Svg),
            Some(e) if e.eq_ignore_ascii_case("png") => Ok(Kind::Png),
            _ => Err(format!(
                "--out {}: the file name must end in .svg or .png",
                path.display()
            )),
        }
    }
}

type Drawn = Result<(), String>;

fn with_area(
    path: &Path,
    size: (u32, u32),
    draw: impl Fn(DrawingArea<SVGBackend<'_>, Shift>) -> Drawn,
    draw_png: impl Fn(DrawingArea<BitMapBackend<'_>, Shift>) -> Drawn,
) -> Drawn {
    load_font()?;
    match Kind::of(path)? {
        Kind::Svg => draw(SVGBackend::new(path, size).into_drawing_area()),
        Kind::Png => draw_png(BitMapBackend::new(path, size).into_drawing_area()),
    }
}

/// An axis number with an SI suffix: 12.5 k, 3 M, 0.25.
pub fn si(v: &f64) -> String {
    let a = v.abs();
    let (d, suffix) = match a {
        _ if a >= 1e12 => (1e12, " T"),
        _ if a >= 1e9 => (1e9, " G"),
        _ if a >= 1e6 => (1e6, " M"),
        _ if a >= 1e3 => (1e3, " k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    let text = format!("{x:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn bars_on<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, rows: &[&Row]) -> Drawn
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let n = rows.len();
    let top = rows
        .iter()
        .map(|r| r.max.max(r.value))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let longest = rows.iter().map(|r| r.variant.len()).max().unwrap_or(10) as u32;
    let labels: Vec<String> = rows.iter().map(|r| r.variant.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size((longest * 7).clamp(80, 900))
        .build_cartesian_2d(0f64..top, (0..n).into_segmented())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_label_formatter(&si)
        .x_desc(rows.first().map(|r| r.metric.as_str()).unwrap_or(""))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (r.value, SegmentValue::Exact(i + 1)),
                ],
                BLUE.mix(0.5).filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            ErrorBar::new_horizontal(
                SegmentValue::CenterOf(i),
                r.min,
                r.value,
                r.max,
                BLACK.filled(),
                8,
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

/// Bars of each variant's median with min-max whiskers.
pub fn bars(path: &Path, title: &str, rows: &[&Row]) -> Drawn {
    let size = (1400, 90 + 26 * rows.len() as u32);
    with_area(
        path,
        size,
        |a| bars_on(a, title, rows),
        |a| bars_on(a, title, rows),
    )
}

/// A line: its label and (x, median, min, max) points, sorted by x.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64, f64, f64)>,
}

fn lines_on<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
) -> Drawn
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    // A sweep over decades (max_demands 1 .. 10,000) is drawn on a log10 x axis.
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let log_x = lo > 0.0 && hi / lo >= 100.0;
    let series: Vec<Series> = series
        .iter()
        .map(|s| Series {
            label: s.label.clone(),
            points: s
                .points
                .iter()
                .map(|p| (if log_x { p.0.log10() } else { p.0 }, p.1, p.2, p.3))
                .collect(),
        })
        .collect();
    let series = &series[..];
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let y1 = all()
        .map(|p| p.3.max(p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (x0, x1) = if x0 < x1 {
        (x0, x1)
    } else {
        (x0 - 1.0, x0 + 1.0)
    };
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(x0..x1, 0f64..y1)
        .map_err(err)?;
    let x_label = |x: &f64| if log_x { si(&10f64.powf(*x)) } else { si(x) };
    let x_desc = if log_x {
        format!("{x_desc} (log scale)")
    } else {
        x_desc.to_string()
    };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&x_label)
        .y_label_formatter(&si)
        .draw()
        .map_err(err)?;
    draw_series(&mut chart, series, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)
}

/// Each series as a line of medians with min-max whiskers, and the legend.
fn draw_series<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    series: &[Series],
    legend_at: SeriesLabelPosition,
) -> Drawn
where
    DB::ErrorType: 'static,
{
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().map(|p| (p.0, p.1)),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        chart
            .draw_series(
                s.points
                    .iter()
                    .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, color.filled(), 8)),
            )
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend_at)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Lines of the median over a numeric parameter, with min-max whiskers.
pub fn lines(path: &Path, title: &str, x_desc: &str, y_desc: &str, series: &[Series]) -> Drawn {
    let size = (1200, 700);
    with_area(
        path,
        size,
        |a| lines_on(a, title, x_desc, y_desc, series),
        |a| lines_on(a, title, x_desc, y_desc, series),
    )
}

/// `q` (0.5, 0.99, ...) as "nines": 0.30, 2, ...: percentiles spread evenly.
pub fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

fn percentiles_on<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
) -> Drawn
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x1 = all().map(|p| p.0).fold(1.0f64, f64::max) + 0.2;
    let ys = all().map(|p| p.1).filter(|v| *v > 0.0);
    let (y0, y1) = ys.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (y0, y1) = if y0 < y1 {
        (y0 / 1.5, y1 * 1.5)
    } else {
        (1.0, 1e9)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..x1, (y0..y1).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency (ns, log scale)")
        .x_label_formatter(&|x| {
            // Only whole nines are labelled: p0, p90, p99, p99.9.
            if (x - x.round()).abs() < 0.02 {
                format!("p{}", si(&(100.0 * (1.0 - 10f64.powf(-x.round())))))
            } else {
                String::new()
            }
        })
        .y_label_formatter(&si)
        .draw()
        .map_err(err)?;
    draw_series(&mut chart, series, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}

/// Latency percentiles, one line per (scenario, variant); x in "nines".
pub fn percentiles(path: &Path, title: &str, series: &[Series]) -> Drawn {
    let size = (1200, 700);
    with_area(
        path,
        size,
        |a| percentiles_on(a, title, series),
        |a| percentiles_on(a, title, series),
    )
}
