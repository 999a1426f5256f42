//! `manycore report`: runs every section of [`SECTIONS`],
//! prints each one's table, and writes a directory with
//!
//! * `report.md`: a header with the machine (CPUs of the process's original
//!   CPU set, model, date) and the run size, then one `##` section per bench:
//!   its table (rows case × impl, columns metrics), its own text (acceptance
//!   ratios, notes) and links to its plots;
//! * `results.json`: every record of every section as one JSON **array**, one
//!   record object per line (`{"bench","case","impl","metric","value","unit"}`,
//!   the same objects `--json` prints; a non-finite value is `null`);
//! * one SVG file per plot.
//!
//! A section is one function `fn(&SectionCtx) -> Section`: it runs its
//! benchmarks at the size the context says and returns records, Markdown and
//! plot descriptions. The writer ([`write_report`]) is separate from running
//! so that it can be tested on synthetic records.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::cli::{ReportArgs, Size};
use crate::plot::{render_svg, Plot};
use crate::progress::Progress;
use crate::record::Record;
use crate::registry::SECTIONS;
use crate::table::{grid, render_markdown, render_text};

/// What a section is asked to do.
#[derive(Debug)]
pub struct SectionCtx<'a> {
    /// The run size.
    pub size: Size,
    /// Seconds per case.
    pub secs: f64,
    /// Repetitions per case.
    pub reps: usize,
    /// True for `--quick`: benches use their small sizes.
    pub quick: bool,
    /// The report's progress bar (a section may add steps to it).
    pub progress: &'a Progress,
}

/// What a section produced.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Short name (file-name prefix for its plots).
    pub name: String,
    /// Heading in report.md.
    pub title: String,
    /// Every record it measured (the table is made from these, minus `case == "ratio"`).
    pub records: Vec<Record>,
    /// Markdown placed after the table (acceptance ratios, notes).
    pub markdown: String,
    /// Plots to draw.
    pub plots: Vec<Plot>,
}

impl Section {
    /// A section with a table and, for each case, a bar chart of the
    /// `median` metric per implementation (log scale if it spans more than
    /// a decade). Enough for a bench without ratios.
    pub fn auto(name: &str, title: &str, intro: &str, records: Vec<Record>) -> Self {
        let mut plots = Vec::new();
        let mut cases: Vec<&str> = Vec::new();
        for r in &records {
            if r.case != "ratio" && !cases.contains(&r.case.as_str()) {
                cases.push(&r.case);
            }
        }
        for case in cases {
            let bars: Vec<(String, f64)> = records
                .iter()
                .filter(|r| r.case == case && r.metric == "median")
                .map(|r| (r.impl_.clone(), r.value))
                .collect();
            if bars.is_empty() {
                continue;
            }
            let unit = records
                .iter()
                .find(|r| r.case == case)
                .map(|r| r.unit.clone())
                .unwrap_or_default();
            plots.push(Plot::bars(
                &format!("{name}_{}.svg", slug(case)),
                &format!("{title}: {case}"),
                &format!("median ({unit})"),
                bars.clone(),
                spans_decades(bars.iter().map(|b| b.1)),
            ));
        }
        Self {
            name: name.into(),
            title: title.into(),
            records,
            markdown: if intro.is_empty() {
                String::new()
            } else {
                format!("{intro}\n")
            },
            plots,
        }
    }

    /// The records shown in the table (everything but ratios).
    pub fn table_records(&self) -> Vec<Record> {
        self.records
            .iter()
            .filter(|r| r.case != "ratio")
            .cloned()
            .collect()
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

/// The machine a report ran on.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// The process's original CPU set.
    pub cpus: Vec<usize>,
    /// CPU model name, if known.
    pub model: Option<String>,
    /// `os/arch`.
    pub platform: String,
    /// UTC date and time, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// The 1-minute load average when the run started (other work on the
    /// machine makes every figure noisier).
    pub load: Option<f64>,
}

impl Machine {
    /// This machine, now.
    pub fn current() -> Self {
        let model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()));
        Self {
            load,
            cpus: manycore_sync::cpu::original().to_vec(),
            model,
            platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
            date: utc_date(secs),
        }
    }

    /// One line for the report.
    pub fn line(&self) -> String {
        let list: Vec<String> = self.cpus.iter().map(|c| c.to_string()).collect();
        let mut s = format!(
            "{} CPU{} in the original CPU set ({})",
            self.cpus.len(),
            if self.cpus.len() == 1 { "" } else { "s" },
            list.join(",")
        );
        if let Some(m) = &self.model {
            let _ = write!(s, ", {m}");
        }
        let _ = write!(s, ", {}, {}", self.platform, self.date);
        if let Some(l) = self.load {
            let _ = write!(s, ", load average {l:.2} at start");
        }
        s
    }
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the Unix epoch (Howard Hinnant's
/// civil-from-days algorithm).
pub fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// The records as a JSON array, one object per line.
pub fn results_json(records: &[Record]) -> String {
    if records.is_empty() {
        return "[]\n".into();
    }
    let mut s = String::from("[\n");
    for (i, r) in records.iter().enumerate() {
        s.push_str("  ");
        s.push_str(&r.to_json());
        s.push_str(if i + 1 < records.len() { ",\n" } else { "\n" });
    }
    s.push_str("]\n");
    s
}

/// The text of report.md.
pub fn markdown(machine: &Machine, run: &str, sections: &[Section]) -> String {
    let mut s = String::from("# manycore report\n\n");
    let _ = writeln!(s, "Machine: {}.\n", machine.line());
    let _ = writeln!(s, "Run: {run}.\n");
    s.push_str(
        "Every figure is a median over repetitions unless its metric says otherwise \
         (p50, p99: percentiles of per-batch means). All records are in `results.json` \
         (a JSON array of `{\"bench\",\"case\",\"impl\",\"metric\",\"value\",\"unit\"}` objects).\n",
    );
    for sec in sections {
        let _ = write!(s, "\n## {}\n\n", sec.title);
        let recs = sec.table_records();
        if recs.is_empty() {
            s.push_str("(no results)\n");
        } else {
            s.push_str(&render_markdown(&grid(&recs)));
        }
        if !sec.markdown.is_empty() {
            s.push('\n');
            s.push_str(&sec.markdown);
            if !sec.markdown.ends_with('\n') {
                s.push('\n');
            }
        }
        for p in &sec.plots {
            let _ = write!(s, "\n![{}]({})\n", p.title.replace(']', ")"), p.file);
        }
    }
    s
}

/// Writes report.md, results.json and the plots into `dir` (created if
/// needed). Returns the files written. A plot that fails to render is
/// reported in report.md instead of failing the report.
pub fn write_report(
    dir: &Path,
    machine: &Machine,
    run: &str,
    sections: &[Section],
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut sections = sections.to_vec();
    for sec in &mut sections {
        let mut failed = Vec::new();
        for p in &sec.plots {
            match render_svg(p) {
                Ok(svg) => {
                    let path = dir.join(&p.file);
                    std::fs::write(&path, svg)?;
                    written.push(path);
                }
                Err(e) => failed.push((p.file.clone(), e)),
            }
        }
        sec.plots
            .retain(|p| !failed.iter().any(|(f, _)| *f == p.file));
        for (f, e) in failed {
            let _ = writeln!(sec.markdown, "\n(plot {f} could not be drawn: {e})");
        }
    }
    let all: Vec<Record> = sections
        .iter()
        .flat_map(|s| s.records.iter().cloned())
        .collect();
    let rj = dir.join("results.json");
    std::fs::write(&rj, results_json(&all))?;
    written.push(rj);
    let md = dir.join("report.md");
    std::fs::write(&md, markdown(machine, run, &sections))?;
    written.push(md);
    Ok(written)
}

/// The text printed on stdout for one section.
pub fn section_text(sec: &Section) -> String {
    let mut s = format!("== {} ==\n", sec.title);
    let recs = sec.table_records();
    if recs.is_empty() {
        s.push_str("(no results)\n");
    } else {
        s.push_str(&render_text(&grid(&recs)));
    }
    if !sec.markdown.is_empty() {
        s.push('\n');
        s.push_str(&sec.markdown);
        if !sec.markdown.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}

/// Runs `manycore report`. Returns the exit status.
pub fn run(args: &ReportArgs) -> i32 {
    let entries: Vec<_> = SECTIONS
        .iter()
        .filter(|e| {
            args.only
                .as_ref()
                .is_none_or(|o| o.iter().any(|n| n == e.name))
        })
        .collect();
    let mut progress = Progress::new(entries.len() as u64);
    let ctx = SectionCtx {
        size: args.size,
        secs: args.size.secs(),
        reps: args.size.reps(),
        quick: args.size == Size::Quick,
        progress: &progress,
    };
    let machine = Machine::current();
    let mut sections = Vec::new();
    for e in entries {
        progress.set_message(e.name);
        let sec = (e.run)(&ctx);
        progress.suspend(|| {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", section_text(&sec));
            let _ = out.flush();
        });
        progress.inc();
        sections.push(sec);
    }
    progress.finish();
    let run = format!(
        "`manycore report` size {} ({} s per case, {} repetitions)",
        args.size.name(),
        args.size.secs(),
        args.size.reps()
    );
    match write_report(&args.out, &machine, &run, &sections) {
        Ok(files) => {
            eprintln!("wrote {} files to {}", files.len(), args.out.display());
            0
        }
        Err(e) => {
            eprintln!(
                "error: could not write the report to {}: {e}",
                args.out.display()
            );
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
    }
    #[test]
    fn json_array() {
        assert_eq!(results_json(&[]), "[]\n");
        let r = Record::new("b", "c", "i", "m", 1.0, "u");
        let s = results_json(&[r.clone(), r]);
        assert!(s.starts_with("[\n  {"));
        assert!(s.ends_with("}\n]\n"));
        assert_eq!(s.matches("},\n").count(), 1);
    }
    #[test]
    fn decades_and_slugs() {
        assert!(spans_decades([1.0, 20.0].into_iter()));
        assert!(!spans_decades([1.0, 9.0, f64::NAN, 0.0].into_iter()));
        assert_eq!(slug("round trip/x"), "round_trip_x");
    }
}
