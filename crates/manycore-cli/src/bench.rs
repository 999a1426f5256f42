//! The bench framework: what a benchmark is ([`Bench`]), the options every
//! run gets ([`Options`]), the report sizes ([`Size`]) and the targets a
//! bench judges its figures against ([`Target`]).
//!
//! A benchmark is one module under `src/benches/` with one item,
//! `pub const BENCH: Bench = Bench { .. }`: its name, its help, its time
//! budget, the options only it has ([`Opt`], as data), and four functions:
//! `run` (options in, [`Record`]s out) and, from the records alone,
//! `targets`, `notes` and `plots` (what `manycore bench` prints after the
//! table and what `manycore report` writes into the bench's section). The
//! list in `src/benches/mod.rs` makes it a `manycore bench` subcommand and a
//! report section; `README.md` shows a whole example.

use std::fmt::Write as _;

use crate::plot::Plot;
use crate::progress::Progress;
use crate::record::Record;

/// How long `manycore report` runs its benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// A few seconds per bench (`--quick`: CI, smoke runs).
    Quick,
    /// The default.
    Default,
    /// Several times longer, for steadier medians (`--full`).
    Full,
}

impl Size {
    /// All sizes, in the order of [`Bench::report_secs`].
    pub const ALL: [Size; 3] = [Size::Quick, Size::Default, Size::Full];

    /// Its index into [`Bench::report_secs`].
    pub fn index(self) -> usize {
        self as usize
    }
    /// Repetitions per case at this size (the `--reps` a bench gets in the report).
    pub fn reps(self) -> usize {
        [3, 5, 7][self.index()]
    }
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        ["quick", "default", "full"][self.index()]
    }
}

/// An option only some benches have, declared as data in [`Bench::options`].
#[derive(Debug)]
pub struct Opt {
    /// The flag, e.g. `--idle`.
    pub flag: &'static str,
    /// The value's name in the help (`LIST`), or `None` for a switch.
    pub value: Option<&'static str>,
    /// One line of help (more lines are indented by the help printer).
    pub help: &'static str,
    /// Checks a value and splits it into its parts (a switch gets none);
    /// `Err` is the reason, shown as "invalid value 'v' for '--flag': reason".
    pub parse: fn(&str) -> Result<Vec<String>, String>,
}

impl Opt {
    /// A switch: present or not.
    pub const fn switch(flag: &'static str, help: &'static str) -> Self {
        Self {
            flag,
            value: None,
            help,
            parse: |_| Ok(Vec::new()),
        }
    }
}

/// Everything a run of a bench is told: the shared flags, already resolved
/// against the bench's defaults, and the values of its own options.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `--secs`: the bench's time budget (its help says per what).
    pub secs: f64,
    /// `--reps`: repetitions per case, for benches that repeat (medians are reported).
    pub reps: usize,
    /// `--quick`: small problem sizes (a smoke run, the quick report).
    pub quick: bool,
    /// `--json`: JSON lines on stdout and nothing else.
    pub json: bool,
    /// The bench's own options that were given: flag and parsed value.
    pub extra: Vec<(&'static str, Vec<String>)>,
}

impl Options {
    /// The options of `bench` when nothing but `--quick` (or not) is given.
    pub fn defaults(bench: &Bench, quick: bool) -> Self {
        Self {
            secs: if quick {
                bench.report_secs[Size::Quick.index()]
            } else {
                bench.secs
            },
            reps: if quick { Size::Quick } else { Size::Default }.reps(),
            quick,
            json: false,
            extra: Vec::new(),
        }
    }

    /// The options of `bench` in a report of size `size`.
    pub fn for_report(bench: &Bench, size: Size) -> Self {
        Self {
            secs: bench.report_secs[size.index()],
            reps: size.reps(),
            quick: size == Size::Quick,
            json: false,
            extra: Vec::new(),
        }
    }

    /// The parsed value of the bench option `flag`, if it was given.
    pub fn get(&self, flag: &str) -> Option<&[String]> {
        self.extra
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| v.as_slice())
    }

    /// Whether the switch `flag` was given.
    pub fn switch(&self, flag: &str) -> bool {
        self.get(flag).is_some()
    }
}

/// A benchmark: see the module docs.
#[derive(Debug)]
pub struct Bench {
    /// Its name on the command line, in `--only` and in its records' `bench`.
    pub name: &'static str,
    /// One line for the help's list of benchmarks.
    pub about: &'static str,
    /// The heading of its report section.
    pub title: &'static str,
    /// How it measures: shown by `--help` and at the top of its report section.
    pub method: &'static str,
    /// `--secs` when not given.
    pub secs: f64,
    /// `--secs` in `manycore report` at sizes quick, default and full;
    /// `manycore bench NAME --quick` uses the quick one.
    pub report_secs: [f64; 3],
    /// Whether it honours `--reps` (otherwise the flag is refused).
    pub repeats: bool,
    /// The options only it has.
    pub options: &'static [Opt],
    /// How long a run with these options is expected to take, in seconds
    /// (drives the progress bar and the durations the help states).
    pub expected_secs: fn(&Options) -> f64,
    /// Runs it; single failures go to stderr through the progress bar and
    /// leave their records out.
    pub run: fn(&Options, &Progress) -> Vec<Record>,
    /// The targets it judges, from the records of one run.
    pub targets: fn(&[Record]) -> Vec<Target>,
    /// More text (Markdown list items or paragraphs) after the targets.
    pub notes: fn(&[Record]) -> String,
    /// Its plots (given itself, for its name and title, and its records).
    pub plots: fn(&Bench, &[Record]) -> Vec<Plot>,
    /// The entry point of its peer process, for a bench that runs across
    /// processes: the binary re-executes itself as `manycore __NAME-peer
    /// ARGS..` ([`crate::cli::peer_command`]); arguments in, exit status out.
    pub peer: Option<fn(&[String]) -> i32>,
}

impl Bench {
    /// The fields most benches leave as they are: no options, no targets,
    /// no notes, a bar chart of the medians of each case
    /// ([`crate::plot::medians_per_case`]). Use as `..Bench::DEFAULT`.
    pub const DEFAULT: Bench = Bench {
        name: "",
        about: "",
        title: "",
        method: "",
        secs: 1.0,
        report_secs: [0.2, 1.0, 3.0],
        repeats: false,
        options: &[],
        expected_secs: |o| o.secs,
        run: |_, _| Vec::new(),
        targets: |_| Vec::new(),
        notes: |_| String::new(),
        plots: crate::plot::medians_per_case,
        peer: None,
    };

    /// A record of this bench.
    pub fn record(&self, case: &str, imp: &str, metric: &str, value: f64, unit: &str) -> Record {
        Record::new(self.name, case, imp, metric, value, unit)
    }

    /// The text after the table: the targets (pass or FAIL), then the notes.
    pub fn summary(&self, records: &[Record]) -> String {
        let mut s = targets_text(&(self.targets)(records));
        let notes = (self.notes)(records);
        if !notes.is_empty() {
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(&notes);
        }
        s
    }

    /// Its plots, then one chart of its targets per direction and unit.
    pub fn all_plots(&self, records: &[Record]) -> Vec<Plot> {
        let mut v = (self.plots)(self, records);
        v.extend(crate::plot::target_charts(self, &(self.targets)(records)));
        v
    }
}

/// How a figure must compare with its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// At most the target: lower is better.
    AtMost,
    /// Below the target: lower is better.
    Below,
    /// At least the target: higher is better.
    AtLeast,
}

impl Cmp {
    /// Whether `v` meets `target`.
    pub fn holds(self, v: f64, target: f64) -> bool {
        match self {
            Cmp::AtMost => v <= target,
            Cmp::Below => v < target,
            Cmp::AtLeast => v >= target,
        }
    }
    /// `<=`, `<` or `>=`.
    pub fn sign(self) -> &'static str {
        match self {
            Cmp::AtMost => "<=",
            Cmp::Below => "<",
            Cmp::AtLeast => ">=",
        }
    }
    /// Whether lower figures are better.
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Cmp::AtLeast)
    }
}

/// A figure of one run against its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// What is judged, e.g. "manycore-poll / raw-atomic round trip".
    pub label: String,
    /// The figure, if it was measured.
    pub value: Option<f64>,
    /// Its unit: `x` for ratios (written right after the figure), else e.g. `ms/s`.
    pub unit: &'static str,
    /// How it must compare.
    pub cmp: Cmp,
    /// The target.
    pub limit: f64,
    /// Text after pass/FAIL (e.g. the same ratio on another statistic).
    pub note: String,
}

impl Target {
    /// A target without a note.
    pub fn new(
        label: impl Into<String>,
        value: Option<f64>,
        unit: &'static str,
        cmp: Cmp,
        limit: f64,
    ) -> Self {
        Self {
            label: label.into(),
            value: value.filter(|v| v.is_finite()),
            unit,
            cmp,
            limit,
            note: String::new(),
        }
    }

    /// One Markdown list item, e.g.
    /// `- a / b round trip: 1.20x (target <= 1.5) pass`.
    pub fn line(&self) -> String {
        let target = format!("(target {} {})", self.cmp.sign(), self.limit);
        match self.value {
            Some(v) => {
                let sep = if self.unit == "x" || self.unit.is_empty() {
                    ""
                } else {
                    " "
                };
                let verdict = if self.cmp.holds(v, self.limit) {
                    "pass"
                } else {
                    "FAIL"
                };
                format!(
                    "- {}: {v:.2}{sep}{} {target} {verdict}{}",
                    self.label, self.unit, self.note
                )
            }
            None => format!("- {}: not measured {target}", self.label),
        }
    }
}

/// The "Targets" block: a heading line and one line per target (empty
/// without targets).
pub fn targets_text(targets: &[Target]) -> String {
    if targets.is_empty() {
        return String::new();
    }
    let mut s = String::from("Targets (figures of this run):\n");
    for t in targets {
        let _ = writeln!(s, "{}", t.line());
    }
    s
}

/// The value of the first record with this case, impl and metric (finite only).
pub fn find(records: &[Record], case: &str, imp: &str, metric: &str) -> Option<f64> {
    records
        .iter()
        .find(|r| r.case == case && r.impl_ == imp && r.metric == metric)
        .map(|r| r.value)
        .filter(|v| v.is_finite())
}

/// `a / b` when both are there and `b` is positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The distinct cases of `records`, in order of first appearance.
pub fn cases(records: &[Record]) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for r in records {
        if !v.contains(&r.case.as_str()) {
            v.push(&r.case);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_lines() {
        let t = Target::new("a / b round trip", Some(1.2), "x", Cmp::AtMost, 1.5);
        assert_eq!(t.line(), "- a / b round trip: 1.20x (target <= 1.5) pass");
        let t = Target::new("idle CPU", Some(2.0), "ms/s", Cmp::Below, 2.0);
        assert_eq!(t.line(), "- idle CPU: 2.00 ms/s (target < 2) FAIL");
        let t = Target::new("c", Some(f64::NAN), "x", Cmp::AtLeast, 0.5);
        assert_eq!(t.line(), "- c: not measured (target >= 0.5)");
        assert!(targets_text(&[t]).starts_with("Targets (figures of this run):\n"));
        assert_eq!(targets_text(&[]), "");
    }

    #[test]
    fn sizes_and_defaults() {
        let reps: Vec<usize> = Size::ALL.iter().map(|s| s.reps()).collect();
        assert_eq!(reps, [3, 5, 7]);
        let b = Bench {
            secs: 6.0,
            report_secs: [0.1, 0.5, 2.0],
            ..Bench::DEFAULT
        };
        assert_eq!(Options::defaults(&b, false).secs, 6.0);
        assert_eq!(Options::defaults(&b, true).secs, 0.1);
        assert_eq!(Options::defaults(&b, true).reps, 3);
        assert_eq!(Options::for_report(&b, Size::Full).secs, 2.0);
        assert_eq!(Options::for_report(&b, Size::Full).reps, 7);
        assert!(Options::for_report(&b, Size::Quick).quick);
    }
}
