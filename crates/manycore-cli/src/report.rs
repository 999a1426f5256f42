//! `manycore report`: runs every bench of [`benches::ALL`] (or those
//! `--only` names), prints each one's table, and writes a directory with
//!
//! * `report.md`: a header with the machine (CPUs of the process's original
//!   CPU set, model, date) and the run size, then one `##` section per bench:
//!   how it measures, its table (rows case × impl, columns metrics), its
//!   targets and notes, and its plots;
//! * `results.json`: every record of every section as one JSON **array**, one
//!   record object per line (`{"bench","case","impl","metric","value","unit"}`,
//!   the same objects `--json` prints; a non-finite value is `null`);
//! * one SVG file per plot.
//!
//! The writer ([`write_report`]) is separate from running so that it can be
//! tested on synthetic records.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::bench::{Bench, Options};
use crate::benches;
use crate::cli::ReportArgs;
use crate::plot::{render_svg, Plot};
use crate::progress::Progress;
use crate::record::Record;
use crate::table::{grid, render_markdown, render_text};

/// One bench's part of the report.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The bench's name.
    pub name: String,
    /// Heading in report.md.
    pub title: String,
    /// How it measures (placed before the table).
    pub method: String,
    /// Every record it measured (the table is made from these, minus `case == "ratio"`).
    pub records: Vec<Record>,
    /// Its targets and notes (placed after the table).
    pub summary: String,
    /// Plots to draw.
    pub plots: Vec<Plot>,
}

impl Section {
    /// The section of `bench` for the records of one run.
    pub fn new(bench: &Bench, records: Vec<Record>) -> Self {
        Self {
            name: bench.name.into(),
            title: bench.title.into(),
            method: bench.method.into(),
            summary: bench.summary(&records),
            plots: bench.all_plots(&records),
            records,
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

/// Appends `text` and a paragraph break, if there is any text.
fn paragraph(s: &mut String, text: &str) {
    if !text.is_empty() {
        s.push_str(text.trim_end());
        s.push_str("\n\n");
    }
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
        paragraph(&mut s, &sec.method);
        let recs = sec.table_records();
        if recs.is_empty() {
            s.push_str("(no results)\n\n");
        } else {
            s.push_str(&render_markdown(&grid(&recs)));
            s.push('\n');
        }
        paragraph(&mut s, &sec.summary);
        for p in &sec.plots {
            let _ = write!(s, "![{}]({})\n\n", p.title.replace(']', ")"), p.file);
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
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
            let _ = writeln!(sec.summary, "\n(plot {f} could not be drawn: {e})");
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

/// The text printed on stdout for one section: heading, table, summary.
pub fn section_text(sec: &Section) -> String {
    let mut s = format!("== {} ==\n", sec.title);
    let recs = sec.table_records();
    if recs.is_empty() {
        s.push_str("(no results)\n");
    } else {
        s.push_str(&render_text(&grid(&recs)));
    }
    if !sec.summary.is_empty() {
        s.push('\n');
        s.push_str(sec.summary.trim_end());
        s.push('\n');
    }
    s
}

/// Runs `manycore report`. Returns the exit status.
pub fn run(args: &ReportArgs) -> i32 {
    let selected: Vec<(&Bench, Options)> = benches::ALL
        .iter()
        .filter(|b| {
            args.only
                .as_ref()
                .is_none_or(|o| o.iter().any(|n| n == b.name))
        })
        .map(|b| (*b, Options::for_report(b, args.size)))
        .collect();
    let expected: Vec<f64> = selected.iter().map(|(b, o)| (b.expected_secs)(o)).collect();
    let mut progress = Progress::new(expected.iter().sum());
    let machine = Machine::current();
    let mut sections = Vec::new();
    for ((bench, options), secs) in selected.iter().zip(expected) {
        progress.step(bench.name, secs);
        let sec = Section::new(bench, (bench.run)(options, &progress));
        progress.suspend(|| {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", section_text(&sec));
            let _ = out.flush();
        });
        sections.push(sec);
    }
    progress.finish();
    let run = format!(
        "`manycore report`, size {} ({} repetitions per case where a bench repeats)",
        args.size.name(),
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
}
