//! SVG plots for `manycore report`, drawn with `plotters`' SVG backend (no
//! font libraries: plotters writes `<text>` elements and the viewer picks the
//! font). A section describes its plots as data ([`Plot`]); this module turns
//! them into SVG text, so sections never touch plotters and tests can check
//! the output without a file system.
//!
//! Two kinds: horizontal bars (one bar per implementation: the names stay
//! readable; a bar may carry its target, drawn as a black line across it) and
//! x-y lines (one series per implementation, e.g. a message-size sweep, with
//! the legend in a column of its own right of the chart, so it never covers
//! data). Either axis can be logarithmic; it is drawn as a linear axis over
//! log10 of the values with labels at the decades, which keeps one chart type
//! for both scales. Every file name ends in `.svg`.

use crate::bench::{Bench, Target};
use crate::record::Record;
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
        /// Each bar's target, if it has one (empty: none has).
        targets: Vec<Option<f64>>,
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
    /// A bar chart, written to `stem.svg`.
    pub fn bars(stem: &str, title: &str, axis: &str, bars: Vec<(String, f64)>, log: bool) -> Self {
        Self {
            file: format!("{stem}.svg"),
            title: title.into(),
            kind: PlotKind::Bars {
                axis: axis.into(),
                bars,
                log,
                targets: Vec::new(),
            },
        }
    }

    /// A bar chart with a log axis if the values span more than a decade.
    pub fn bars_auto(stem: &str, title: &str, axis: &str, bars: Vec<(String, f64)>) -> Self {
        let log = spans_decades(bars.iter().map(|b| b.1));
        Self::bars(stem, title, axis, bars, log)
    }

    /// A line chart, written to `stem.svg`.
    pub fn lines(
        stem: &str,
        title: &str,
        x_axis: &str,
        y_axis: &str,
        series: Vec<(String, Vec<(f64, f64)>)>,
        log_x: bool,
        log_y: bool,
    ) -> Self {
        Self {
            file: format!("{stem}.svg"),
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

/// True if positive values span more than a factor of 10 (then plot on a log axis).
pub fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo.is_finite() && hi / lo > 10.0
}

/// A file-name-safe form of `s`.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The (impl, value) pairs of the records with this case and metric.
pub fn pick(records: &[Record], case: &str, metric: &str) -> Vec<(String, f64)> {
    records
        .iter()
        .filter(|r| r.case == case && r.metric == metric)
        .map(|r| (r.impl_.clone(), r.value))
        .collect()
}

/// For each case (but `ratio`), a bar chart of `metric` per implementation,
/// in `NAME_CASE.svg` (log scale if it spans more than a decade).
pub fn per_case(bench: &Bench, records: &[Record], metric: &str) -> Vec<Plot> {
    crate::bench::cases(records)
        .into_iter()
        .filter(|c| *c != "ratio")
        .filter_map(|case| {
            let bars = pick(records, case, metric);
            let unit = &records
                .iter()
                .find(|r| r.case == case && r.metric == metric)?
                .unit;
            Some(Plot::bars_auto(
                &format!("{}_{}", bench.name, slug(case)),
                &format!("{}: {case}", bench.title),
                &format!("{metric} ({unit})"),
                bars,
            ))
        })
        .collect()
}

/// [`per_case`] of the medians: the plots of a bench that declares none of its own.
pub fn medians_per_case(bench: &Bench, records: &[Record]) -> Vec<Plot> {
    per_case(bench, records, "median")
}

/// The targets that were measured, as bar charts with each target marked:
/// one chart per unit and direction, so that a chart never mixes figures
/// where lower is better with figures where higher is better. Files:
/// `NAME_targets_lower.svg` / `NAME_targets_higher.svg` for ratios (`x`),
/// `NAME_targets_UNIT_lower.svg` for other units.
pub fn target_charts(bench: &Bench, targets: &[Target]) -> Vec<Plot> {
    let name = bench.name;
    let mut groups: Vec<(&str, bool)> = Vec::new();
    for t in targets.iter().filter(|t| t.value.is_some()) {
        let key = (t.unit, t.cmp.lower_is_better());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    groups
        .into_iter()
        .map(|(unit, lower)| {
            let members: Vec<&Target> = targets
                .iter()
                .filter(|t| t.value.is_some() && t.unit == unit && t.cmp.lower_is_better() == lower)
                .collect();
            let bars: Vec<(String, f64)> = members
                .iter()
                .map(|t| (t.label.clone(), t.value.unwrap_or(f64::NAN)))
                .collect();
            let marks: Vec<Option<f64>> = members.iter().map(|t| Some(t.limit)).collect();
            let way = if lower { "lower" } else { "higher" };
            let (stem, what) = if unit == "x" {
                (format!("{name}_targets_{way}"), "ratio".to_string())
            } else {
                (
                    format!("{name}_targets_{}_{way}", slug(unit)),
                    unit.to_string(),
                )
            };
            let log = spans_decades(
                bars.iter()
                    .map(|b| b.1)
                    .chain(marks.iter().flatten().copied()),
            );
            let mut p = Plot::bars(
                &stem,
                &format!("{}: targets ({what}), {way} is better", bench.title),
                &format!("{what}, {way} is better (black line: the target)"),
                bars,
                log,
            );
            if let PlotKind::Bars { targets, .. } = &mut p.kind {
                *targets = marks;
            }
            p
        })
        .collect()
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
        let v = if self.log {
            let k = v.round();
            if (v - k).abs() < 1e-9 && !(-3.0..7.0).contains(&k) {
                return format!("1e{k}");
            }
            10f64.powf(v)
        } else {
            v
        };
        // Without trailing zeros: 0.01, 1, 2.5 rather than 0.010, 1.000, 2.500.
        let s = fmt_value(v);
        if s.contains('.') && !s.contains('e') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
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
        PlotKind::Bars {
            axis,
            bars,
            log,
            targets,
        } => {
            let h = 110 + 34 * bars.len().max(1) as u32;
            draw_bars(
                &mut out,
                (820, h),
                &plot.title,
                axis,
                (bars, targets),
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
    (bars, targets): (&[(String, f64)], &[Option<f64>]),
    axis: Axis,
) -> Result<(), String> {
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (lo, hi) = axis.range(
        bars.iter()
            .map(|b| b.1)
            .chain(targets.iter().flatten().copied())
            .filter_map(|v| axis.map(v)),
    );
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
        // Segments 0..=n-1, one per bar; a single bar gets an empty segment
        // above it (a range of one point would have no height at all).
        .build_cartesian_2d(lo..hi, (0..(n - 1).max(1)).into_segmented())
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
        if let Some(t) = targets.get(i).copied().flatten().and_then(|t| axis.map(t)) {
            let mark = PathElement::new(
                vec![
                    (t, SegmentValue::Exact(seg)),
                    (t, SegmentValue::Exact(seg + 1)),
                ],
                BLACK.stroke_width(3),
            );
            chart.draw_series(std::iter::once(mark)).map_err(err)?;
        }
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
    // The legend gets a column of its own, right of the chart: it can never
    // cover a line or a point.
    let longest = series
        .iter()
        .map(|s| s.0.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_w = (40 + 7 * longest).min(size.0 / 2);
    let (plot_area, legend_area) = root.split_horizontally(size.0 - legend_w);
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
    let mut chart = ChartBuilder::on(&plot_area)
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
            .map_err(err)?;
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?;
        let y = 50 + 22 * i as i32;
        legend_area
            .draw(&PathElement::new(
                vec![(4, y), (26, y)],
                color.stroke_width(2),
            ))
            .map_err(err)?;
        legend_area
            .draw(&Text::new(
                name.clone(),
                (32, y - 7),
                ("sans-serif", 13).into_font().color(&BLACK),
            ))
            .map_err(err)?;
    }
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
            let s = render_svg(&Plot::bars("a", "Round trip", "ns", bars.clone(), log)).unwrap();
            looks_like_svg(&s);
            assert!(s.contains("raw-atomic"));
            assert!(s.contains("crossbeam-channel"));
            assert!(s.contains("<rect"));
        }
    }

    #[test]
    fn decades_and_slugs() {
        assert!(spans_decades([1.0, 20.0].into_iter()));
        assert!(!spans_decades([1.0, 9.0, f64::NAN, 0.0].into_iter()));
        assert_eq!(slug("round trip/x"), "round_trip_x");
    }

    #[test]
    fn every_file_has_its_extension() {
        let recs = vec![
            Record::new("b", "c 1", "i", "median", 1.0, "ns"),
            Record::new("b", "ratio", "i/j", "median", 1.0, "x"),
        ];
        let targets = vec![
            Target::new("a", Some(1.2), "x", crate::bench::Cmp::AtMost, 1.5),
            Target::new("b", Some(0.7), "x", crate::bench::Cmp::AtLeast, 0.5),
            Target::new("c", Some(0.1), "ms/s", crate::bench::Cmp::Below, 2.0),
        ];
        let b = Bench {
            name: "b",
            ..Bench::DEFAULT
        };
        let mut plots = medians_per_case(&b, &recs);
        plots.extend(target_charts(&b, &targets));
        plots.push(Plot::lines("l", "t", "x", "y", vec![], true, true));
        let files: Vec<&str> = plots.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "b_c_1.svg",
                "b_targets_lower.svg",
                "b_targets_higher.svg",
                "b_targets_ms_s_lower.svg",
                "l.svg"
            ]
        );
        for p in &plots {
            let svg = render_svg(p).unwrap();
            looks_like_svg(&svg);
        }
    }

    #[test]
    fn targets_are_drawn_and_directions_kept_apart() {
        let t = |v: f64, cmp| Target::new("x", Some(v), "x", cmp, 1.0);
        let b = Bench {
            name: "b",
            ..Bench::DEFAULT
        };
        let charts = target_charts(
            &b,
            &[
                t(0.5, crate::bench::Cmp::AtMost),
                t(2.0, crate::bench::Cmp::AtLeast),
            ],
        );
        assert_eq!(charts.len(), 2);
        for c in &charts {
            let PlotKind::Bars { bars, targets, .. } = &c.kind else {
                panic!("bars")
            };
            assert_eq!(bars.len(), 1);
            assert_eq!(targets, &[Some(1.0)]);
            // The target is drawn: a thick black line across its bar.
            let svg = render_svg(c).unwrap();
            assert!(
                svg.contains(r##"stroke="#000000" stroke-width="3""##),
                "{svg}"
            );
        }
        // Unmeasured targets are not drawn.
        assert!(target_charts(
            &b,
            &[Target::new("u", None, "x", crate::bench::Cmp::AtMost, 1.0)]
        )
        .is_empty());
    }

    /// The number in the first ` name="..."` attribute of an SVG tag.
    fn attr(tag: &str, name: &str) -> f64 {
        let v = tag.split(&format!(" {name}=\"")).nth(1).expect(tag);
        v.split('"').next().unwrap().parse().expect(tag)
    }

    #[test]
    fn legend_is_beside_the_chart() {
        let series = vec![(
            "a-long-series-name".to_string(),
            vec![(1.0, 1.0), (100.0, 100.0)],
        )];
        let s = render_svg(&Plot::lines("l", "t", "x", "y", series, true, true)).unwrap();
        // The legend text starts right of the plotting area (820 minus its column).
        let at = s.find("a-long-series-name").expect(&s);
        let tag = &s[s[..at].rfind("<text").unwrap()..at];
        let x = attr(tag, "x");
        assert!(x > 820.0 - (40.0 + 7.0 * 18.0), "{tag}");
    }

    #[test]
    fn a_single_bar_is_drawn() {
        let one = vec![("only".to_string(), 981.0)];
        let s = render_svg(&Plot::bars("a", "t", "us", one, false)).unwrap();
        // The white background, and the bar.
        assert!(s.matches("<rect").count() >= 2, "{s}");
        let bar = s.split("<rect").nth(2).unwrap();
        let (width, height) = (attr(bar, "width"), attr(bar, "height"));
        assert!(width > 10.0 && height > 10.0, "{bar}");
    }

    #[test]
    fn bars_degenerate() {
        looks_like_svg(&render_svg(&Plot::bars("a", "t", "x", vec![], true)).unwrap());
        let bad = vec![("zero".to_string(), 0.0), ("nan".to_string(), f64::NAN)];
        looks_like_svg(&render_svg(&Plot::bars("a", "t", "x", bad, true)).unwrap());
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
                "l",
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
