//! Tables of records, for people: one row per (case, impl), one column per
//! metric (in order of first appearance), each cell "value unit". The same
//! grid renders as aligned text for the terminal and as a Markdown table for
//! `report.md`.

use crate::record::Record;

/// A grid of strings: a header row and body rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Column titles.
    pub header: Vec<String>,
    /// Body rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

/// Formats a figure with about four significant digits, without exponent
/// for everyday magnitudes.
pub fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e7).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Pivots records into a grid: rows are (case, impl) in order of first
/// appearance, columns are metrics in order of first appearance. A missing
/// cell is blank; a repeated (case, impl, metric) keeps the last value.
pub fn grid(records: &[Record]) -> Grid {
    let mut metrics: Vec<&str> = Vec::new();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in records {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
        let k = (r.case.as_str(), r.impl_.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut rows = Vec::with_capacity(keys.len());
    for (case, imp) in &keys {
        let mut row = vec![case.to_string(), imp.to_string()];
        for m in &metrics {
            let cell = records
                .iter()
                .rev()
                .find(|r| r.case == *case && r.impl_ == *imp && r.metric == *m)
                .map(|r| {
                    if r.unit.is_empty() {
                        fmt_value(r.value)
                    } else {
                        format!("{} {}", fmt_value(r.value), r.unit)
                    }
                })
                .unwrap_or_default();
            row.push(cell);
        }
        rows.push(row);
    }
    let mut header = vec!["case".to_string(), "impl".to_string()];
    header.extend(metrics.iter().map(|m| m.to_string()));
    Grid { header, rows }
}

/// Aligned plain text: text columns left-aligned, figures right-aligned.
pub fn render_text(g: &Grid) -> String {
    let ncol = g.header.len();
    let mut w = vec![0usize; ncol];
    for row in std::iter::once(&g.header).chain(&g.rows) {
        for (i, c) in row.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |row: &Vec<String>| {
        let cells: Vec<String> = (0..ncol)
            .map(|i| {
                let c = row.get(i).map(String::as_str).unwrap_or("");
                if i < 2 {
                    format!("{c:<width$}", width = w[i])
                } else {
                    format!("{c:>width$}", width = w[i])
                }
            })
            .collect();
        cells.join("  ").trim_end().to_string()
    };
    let mut out = line(&g.header);
    out.push('\n');
    let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    out.push_str(&rule.join("  "));
    out.push('\n');
    for r in &g.rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// A GitHub-flavoured Markdown table (figures right-aligned).
pub fn render_markdown(g: &Grid) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    out.push_str(&format!(
        "| {} |\n",
        g.header
            .iter()
            .map(|h| esc(h))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    let align: Vec<&str> = (0..g.header.len())
        .map(|i| if i < 2 { "---" } else { "---:" })
        .collect();
    out.push_str(&format!("| {} |\n", align.join(" | ")));
    for r in &g.rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs() -> Vec<Record> {
        vec![
            Record::new("pp", "round_trip", "raw-atomic", "median", 1500.0, "ns"),
            Record::new("pp", "round_trip", "raw-atomic", "p99", 3000.0, "ns"),
            Record::new("pp", "round_trip", "std-mpsc", "median", 20000.0, "ns"),
            Record::new("pp", "throughput", "rtrb", "median", 12.5, "Mmsg/s"),
        ]
    }

    #[test]
    fn pivot() {
        let g = grid(&recs());
        assert_eq!(g.header, ["case", "impl", "median", "p99"]);
        assert_eq!(g.rows.len(), 3);
        assert_eq!(
            g.rows[0],
            ["round_trip", "raw-atomic", "1500 ns", "3000 ns"]
        );
        assert_eq!(g.rows[1], ["round_trip", "std-mpsc", "20000 ns", ""]);
        assert_eq!(g.rows[2][2], "12.50 Mmsg/s");
    }

    #[test]
    fn text_and_markdown() {
        let g = grid(&recs());
        let t = render_text(&g);
        assert_eq!(t.lines().count(), 5);
        assert!(t.lines().next().unwrap().starts_with("case"));
        let m = render_markdown(&g);
        assert!(m.starts_with("| case | impl | median | p99 |\n| --- | --- | ---: | ---: |\n"));
        assert!(m.contains("| round_trip | raw-atomic | 1500 ns | 3000 ns |"));
    }

    #[test]
    fn values() {
        assert_eq!(fmt_value(f64::NAN), "-");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(1.23456), "1.235");
        assert_eq!(fmt_value(12345.6), "12346");
        assert_eq!(fmt_value(0.0001), "1.000e-4");
    }
}
