//! SVG plots for `manycore report`, drawn with `plotters`' SVG backend (no
//! font libraries: plotters writes `<text>` elements and the viewer picks the
//! font). A section describes its plots as data ([`Plot`]); this module turns
//! them into SVG text, so sections never touch plotters and tests can check
//! the output without a file system.
//!
//! Two kinds: horizontal bars (one bar per implementation: the names stay
//! readable) and x-y lines (one series per implementation, e.g. a message-size
//! sweep). Either axis can be logarithmic; it is drawn as a linear axis over
//! log10 of the values with labels at the decades, which keeps one chart type
//! for both scales.

use crate::table::fmt_value;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

/// A plot a report section asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File name inside the report directory, e.g. `pingpong_round_trip.svg`.
    pub file: String,
    /// Title drawn above the chart.
    pub title: String,
    /// What to draw.
    pub kind: PlotKind,
}

/// The kinds of plot.
#[derive(Debug, Clone, PartialEq)]
pub enum PlotKind {
    /// One horizontal bar per label.
    Bars {
        /// Axis title for the values, e.g. "round trip (ns)".
        axis: String,
        /// (label, value) in drawing order, top to bottom.
        bars: Vec<(String, f64)>,
        /// Logarithmic value axis (for figures spanning decades).
        log: bool,
    },
    /// One polyline with points per series.
    Lines {
        /// X axis title.
        x_axis: String,
        /// Y axis title.
        y_axis: String,
        /// (series name, points).
        series: Vec<(String, Vec<(f64, f64)>)>,
        /// Logarithmic x axis.
        log_x: bool,
        /// Logarithmic y axis.
        log_y: bool,
    },
}

impl Plot {
    /// A bar chart.
    pub fn bars(file: &str, title: &str, axis: &str, bars: Vec<(String, f64)>, log: bool) -> Self {
        Self {
            file: file.into(),
            title: title.into(),
            kind: PlotKind::Bars {
                axis: axis.into(),
                bars,
                log,
            },
        }
    }

    /// A line chart.
    pub fn lines(
        file: &str,
        title: &str,
        x_axis: &str,
        y_axis: &str,
        series: Vec<(String, Vec<(f64, f64)>)>,
        log_x: bool,
        log_y: bool,
    ) -> Self {
        Self {
            file: file.into(),
            title: title.into(),
            kind: PlotKind::Lines {
                x_axis: x_axis.into(),
                y_axis: y_axis.into(),
                series,
                log_x,
                log_y,
            },
        }
    }
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// An axis mapping: identity, or log10 (for positive values only).
#[derive(Clone, Copy)]
struct Axis {
    log: bool,
}

impl Axis {
    fn map(self, v: f64) -> Option<f64> {
        match (self.log, v.is_finite()) {
            (_, false) => None,
            (true, _) if v <= 0.0 => None,
            (true, _) => Some(v.log10()),
            (false, _) => Some(v),
        }
    }
    /// The drawing range for mapped values, padded; linear ranges include 0.
    fn range(self, mapped: impl Iterator<Item = f64>) -> (f64, f64) {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in mapped {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        if self.log {
            (
                lo.floor(),
                if hi.ceil() > lo.floor() {
                    hi.ceil()
                } else {
                    lo.floor() + 1.0
                },
            )
        } else {
            let lo = lo.min(0.0);
            let hi = if hi > lo { hi * 1.1 } else { lo + 1.0 };
            (lo, hi)
        }
    }
    fn label(self, v: f64) -> String {
        if self.log {
            let k = v.round();
            if (v - k).abs() < 1e-9 && !(-3.0..7.0).contains(&k) {
                format!("1e{k}")
            } else {
                fmt_value(10f64.powf(v))
            }
        } else {
            let s = fmt_value(v);
            if s.contains('.') && !s.contains('e') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        }
    }
    /// Number of labels: one per decade on a log axis.
    fn n_labels(self, lo: f64, hi: f64) -> usize {
        if self.log {
            ((hi - lo).round() as usize + 1).clamp(2, 12)
        } else {
            6
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Renders a plot as SVG text.
pub fn render_svg(plot: &Plot) -> Result<String, String> {
    let mut out = String::new();
    match &plot.kind {
        PlotKind::Bars { axis, bars, log } => {
            let h = 110 + 34 * bars.len().max(1) as u32;
            draw_bars(
                &mut out,
                (820, h),
                &plot.title,
                axis,
                bars,
                Axis { log: *log },
            )?
        }
        PlotKind::Lines {
            x_axis,
            y_axis,
            series,
            log_x,
            log_y,
        } => draw_lines(
            &mut out,
            (820, 480),
            &plot.title,
            (x_axis, y_axis),
            series,
            (Axis { log: *log_x }, Axis { log: *log_y }),
        )?,
    }
    Ok(out)
}

fn draw_bars(
    out: &mut String,
    size: (u32, u32),
    title: &str,
    axis_title: &str,
    bars: &[(String, f64)],
    axis: Axis,
) -> Result<(), String> {
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (lo, hi) = axis.range(bars.iter().filter_map(|(_, v)| axis.map(*v)));
    let n = bars.len().max(1);
    // The first bar on top: segment n-1-i holds bar i.
    let names: Vec<String> = bars.iter().rev().map(|(s, _)| s.clone()).collect();
    let longest = names.iter().map(|s| s.chars().count()).max().unwrap_or(0) as u32;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .margin_right(48)
        .x_label_area_size(40)
        .y_label_area_size(24 + 7 * longest)
        .build_cartesian_2d(lo..hi, (0..n - 1).into_segmented())
        .map_err(err)?;
    let ylab = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            names.get(*i).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };
    let xlab = |v: &f64| axis.label(*v);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n + 1)
        .y_label_formatter(&ylab)
        .x_labels(axis.n_labels(lo, hi))
        .x_label_formatter(&xlab)
        .x_desc(axis_title)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (i, (_, v)) in bars.iter().enumerate() {
        let Some(x) = axis.map(*v) else { continue };
        let color = PALETTE[i % PALETTE.len()];
        let seg = n - 1 - i;
        let mut rect = Rectangle::new(
            [
                (lo, SegmentValue::Exact(seg)),
                (x, SegmentValue::Exact(seg + 1)),
            ],
            color.filled(),
        );
        rect.set_margin(5, 5, 0, 0);
        chart.draw_series(std::iter::once(rect)).map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!(" {}", fmt_value(*v)),
                (x, SegmentValue::CenterOf(seg)),
                ("sans-serif", 12).into_font().color(&BLACK),
            )))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn draw_lines(
    out: &mut String,
    size: (u32, u32),
    title: &str,
    (x_title, y_title): (&str, &str),
    series: &[(String, Vec<(f64, f64)>)],
    (ax, ay): (Axis, Axis),
) -> Result<(), String> {
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mapped: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(name, pts)| {
            let p = pts
                .iter()
                .filter_map(|&(x, y)| Some((ax.map(x)?, ay.map(y)?)))
                .collect::<Vec<_>>();
            (name.clone(), p)
        })
        .collect();
    let (xlo, xhi) = ax.range(mapped.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)));
    let (ylo, yhi) = ay.range(mapped.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(xlo..xhi, ylo..yhi)
        .map_err(err)?;
    let xlab = |v: &f64| ax.label(*v);
    let ylab = |v: &f64| ay.label(*v);
    chart
        .configure_mesh()
        .x_labels(ax.n_labels(xlo, xhi))
        .y_labels(ay.n_labels(ylo, yhi))
        .x_label_formatter(&xlab)
        .y_label_formatter(&ylab)
        .x_desc(x_title)
        .y_desc(y_title)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (i, (name, pts)) in mapped.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn looks_like_svg(s: &str) {
        assert!(
            s.trim_start().starts_with("<svg"),
            "{}",
            &s[..s.len().min(200)]
        );
        assert!(s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<text").count(), s.matches("</text>").count());
    }

    #[test]
    fn bars_linear_and_log() {
        let bars = vec![
            ("raw-atomic".to_string(), 1500.0),
            ("crossbeam-channel".to_string(), 4.0e6),
        ];
        for log in [false, true] {
            let s =
                render_svg(&Plot::bars("a.svg", "Round trip", "ns", bars.clone(), log)).unwrap();
            looks_like_svg(&s);
            assert!(s.contains("raw-atomic"));
            assert!(s.contains("crossbeam-channel"));
            assert!(s.contains("<rect"));
        }
    }

    #[test]
    fn bars_degenerate() {
        looks_like_svg(&render_svg(&Plot::bars("a.svg", "t", "x", vec![], true)).unwrap());
        let bad = vec![("zero".to_string(), 0.0), ("nan".to_string(), f64::NAN)];
        looks_like_svg(&render_svg(&Plot::bars("a.svg", "t", "x", bad, true)).unwrap());
    }

    #[test]
    fn lines() {
        let series = vec![
            (
                "a".to_string(),
                vec![(64.0, 1.0), (1024.0, 10.0), (65536.0, 100.0)],
            ),
            ("b".to_string(), vec![(64.0, 2.0), (1024.0, 8.0)]),
        ];
        for (lx, ly) in [(false, false), (true, true)] {
            let s = render_svg(&Plot::lines(
                "l.svg",
                "Sweep",
                "bytes",
                "MB/s",
                series.clone(),
                lx,
                ly,
            ))
            .unwrap();
            looks_like_svg(&s);
            assert!(s.contains("<polyline") || s.contains("<path"));
        }
    }
}
