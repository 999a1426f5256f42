//! Command-line parsing, by hand (no dependency, exact control of errors):
//! `manycore bench NAME [flags]`, `manycore report [flags]`, `manycore help`,
//! and hidden subcommands (names starting with `__`) that get their raw
//! arguments. A usage error is a [`UsageError`]; `main` prints it with a hint
//! and exits with status 2. Nothing here panics on any input.

use std::fmt;
use std::path::PathBuf;

use crate::registry::{Bench, BENCHES, HIDDEN, SECTIONS};

/// How long `report` runs its benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// A few seconds per bench (CI, smoke runs).
    Quick,
    /// About a minute in all (the default).
    Default,
    /// Several times longer, for steadier medians.
    Full,
}

impl Size {
    /// Seconds per case for this size.
    pub fn secs(self) -> f64 {
        match self {
            Size::Quick => 0.2,
            Size::Default => 1.0,
            Size::Full => 3.0,
        }
    }
    /// Repetitions per case for this size.
    pub fn reps(self) -> usize {
        match self {
            Size::Quick => 3,
            Size::Default => 5,
            Size::Full => 7,
        }
    }
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Size::Quick => "quick",
            Size::Default => "default",
            Size::Full => "full",
        }
    }
}

/// The options every `bench` subcommand may get. Flags a bench does not
/// declare in [`Bench::flags`] are rejected before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchArgs {
    /// `--secs S`: time budget per case.
    pub secs: Option<f64>,
    /// `--reps R`: repetitions per case (the median is reported).
    pub reps: Option<usize>,
    /// `--idle LIST`: idle policies (`poll`, `sleep`, `hybrid`, `all`, comma-separated).
    pub idle: Option<Vec<String>>,
    /// `--quick`: the bench's small size.
    pub quick: bool,
    /// `--json`: JSON lines on stdout and nothing else.
    pub json: bool,
}

/// `manycore report` options.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportArgs {
    /// `--out DIR` (default `report`).
    pub out: PathBuf,
    /// `--quick` / `--full`.
    pub size: Size,
    /// `--only NAME[,NAME..]`: run only these sections.
    pub only: Option<Vec<String>>,
}

/// A parsed command line.
#[derive(Debug, Clone)]
pub enum Command {
    /// Print this text on stdout and exit 0.
    Help(String),
    /// Print the version.
    Version,
    /// Run one benchmark.
    Bench {
        /// Which one.
        bench: &'static Bench,
        /// With what.
        args: BenchArgs,
    },
    /// Run the report.
    Report(ReportArgs),
    /// A hidden subcommand with its raw arguments.
    Hidden {
        /// Its name (`__sock-peer`, ...).
        name: &'static str,
        /// Everything after the name.
        args: Vec<String>,
    },
}

/// A bad command line: the message, and the usage line of the command it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// What is wrong.
    pub msg: String,
    /// Which help to point at, e.g. "manycore bench pingpong --help".
    pub hint: String,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error: {}\n\nFor more information, try '{}'.",
            self.msg, self.hint
        )
    }
}

impl std::error::Error for UsageError {}

fn usage(msg: impl Into<String>, hint: &str) -> UsageError {
    UsageError {
        msg: msg.into(),
        hint: hint.into(),
    }
}

/// The top-level help text.
pub fn main_help() -> String {
    let mut s = String::from(
        "manycore: benchmarks and reports for the manycore message-passing runtime\n\
         \n\
         Usage: manycore <COMMAND> [OPTIONS]\n\
         \n\
         Commands:\n\
        \x20 bench <NAME>   run one benchmark, side by side with its peers\n\
        \x20 report         run every benchmark at a small size and write report/\n\
        \x20 help [CMD]     print help (also: --help after any command)\n\
         \n\
         Benchmarks:\n",
    );
    for b in BENCHES {
        s.push_str(&format!("  {:<14} {}\n", b.name, b.about));
    }
    s.push_str(
        "\nOptions:\n\
        \x20 -h, --help     print help\n\
        \x20 -V, --version  print version\n\
         \n\
         Output: a table on stdout; with --json one JSON object per line,\n\
         {\"bench\",\"case\",\"impl\",\"metric\",\"value\",\"unit\"}, and nothing else on stdout.\n\
         Progress goes to stderr when it is a terminal. Exit status: 0 ok, 1 failure, 2 bad usage.\n",
    );
    s
}

/// Help for `manycore bench`.
pub fn bench_help() -> String {
    let mut s = String::from("Usage: manycore bench <NAME> [OPTIONS]\n\nBenchmarks:\n");
    for b in BENCHES {
        s.push_str(&format!("  {:<14} {}\n", b.name, b.about));
    }
    s.push_str("\nSee 'manycore bench <NAME> --help' for a benchmark's options.\n");
    s
}

/// Help for one benchmark.
pub fn one_bench_help(b: &Bench) -> String {
    let mut s = format!(
        "{}\n\nUsage: manycore bench {} [OPTIONS]\n\nOptions:\n",
        b.about, b.name
    );
    s.push_str(&format!(
        "  --secs <S>     time budget per case in seconds [default: {}]\n",
        b.default_secs
    ));
    if b.flags.contains(&"--reps") {
        s.push_str("  --reps <R>     repetitions per case; medians are reported [default: 5]\n");
    }
    if b.flags.contains(&"--idle") {
        s.push_str(
            "  --idle <LIST>  manycore idle policies: poll, sleep, hybrid or all\n\
            \x20                (comma-separated) [default: all]\n",
        );
    }
    s.push_str("  --quick        small sizes (a smoke run)\n");
    s.push_str("  --json         one JSON record per line on stdout, nothing else\n");
    s.push_str("  -h, --help     print help\n");
    if !b.details.is_empty() {
        s.push('\n');
        s.push_str(b.details);
        if !b.details.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}

/// Help for `manycore report`.
pub fn report_help() -> String {
    let names: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
    format!(
        "Runs every benchmark at a small size (about a minute in all), prints the\n\
         tables, and writes a report directory: report.md (one section per bench,\n\
         with its table, acceptance ratios and the machine), results.json (a JSON\n\
         array of every record) and one SVG per plot.\n\
         \n\
         Usage: manycore report [OPTIONS]\n\
         \n\
         Options:\n\
        \x20 --out <DIR>         where to write [default: report]\n\
        \x20 --quick             a few seconds per bench (smoke run)\n\
        \x20 --full              longer runs, steadier medians\n\
        \x20 --only <NAME,..>    only these sections ({})\n\
        \x20 -h, --help          print help\n",
        names.join(", ")
    )
}

/// A cursor over the arguments that understands `--flag value` and `--flag=value`.
struct Args<'a> {
    items: &'a [String],
    pos: usize,
    /// The value glued to the current flag with `=`, if any.
    glued: Option<&'a str>,
}

impl<'a> Args<'a> {
    fn new(items: &'a [String]) -> Self {
        Self {
            items,
            pos: 0,
            glued: None,
        }
    }
    /// The next argument; for `--flag=value`, yields `--flag` and keeps the value.
    fn next(&mut self) -> Option<&'a str> {
        let a = self.items.get(self.pos)?.as_str();
        self.pos += 1;
        self.glued = None;
        if a.starts_with("--") {
            if let Some((flag, val)) = a.split_once('=') {
                self.glued = Some(val);
                return Some(flag);
            }
        }
        Some(a)
    }
    /// The value of the flag just returned by `next`.
    fn value(&mut self, flag: &str, hint: &str) -> Result<&'a str, UsageError> {
        if let Some(v) = self.glued.take() {
            return Ok(v);
        }
        match self.items.get(self.pos) {
            Some(v) if !v.starts_with("--") => {
                self.pos += 1;
                Ok(v)
            }
            _ => Err(usage(format!("option '{flag}' needs a value"), hint)),
        }
    }
    /// Rejects a `=value` glued to a flag that takes none.
    fn no_value(&mut self, flag: &str, hint: &str) -> Result<(), UsageError> {
        match self.glued.take() {
            Some(_) => Err(usage(format!("option '{flag}' takes no value"), hint)),
            None => Ok(()),
        }
    }
}

fn parse_secs(v: &str, hint: &str) -> Result<f64, UsageError> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(usage(
            format!("invalid value '{v}' for '--secs': expected seconds, a number in (0, 3600]"),
            hint,
        )),
    }
}

fn parse_reps(v: &str, hint: &str) -> Result<usize, UsageError> {
    match v.parse::<usize>() {
        Ok(r) if (1..=1000).contains(&r) => Ok(r),
        _ => Err(usage(
            format!("invalid value '{v}' for '--reps': expected a whole number from 1 to 1000"),
            hint,
        )),
    }
}

/// The idle policies `--idle` accepts.
pub const IDLE_NAMES: [&str; 3] = ["poll", "sleep", "hybrid"];

fn parse_idle(v: &str, hint: &str) -> Result<Vec<String>, UsageError> {
    let mut out: Vec<String> = Vec::new();
    for part in v.split(',').map(str::trim) {
        let add: Vec<&str> = match part {
            "all" => IDLE_NAMES.to_vec(),
            p if IDLE_NAMES.contains(&p) => vec![p],
            _ => {
                return Err(usage(
                    format!(
                        "invalid value '{part}' for '--idle': expected poll, sleep, hybrid or all"
                    ),
                    hint,
                ))
            }
        };
        for a in add {
            if !out.iter().any(|o| o == a) {
                out.push(a.to_string());
            }
        }
    }
    Ok(out)
}

fn is_help(a: &str) -> bool {
    a == "-h" || a == "--help"
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, UsageError> {
    let top = "manycore --help";
    let Some(first) = args.first().map(String::as_str) else {
        return Err(usage("no command given", top));
    };
    let rest = &args[1..];
    match first {
        "-h" | "--help" => Ok(Command::Help(main_help())),
        "-V" | "--version" => Ok(Command::Version),
        "help" => match rest.first().map(String::as_str) {
            None => Ok(Command::Help(main_help())),
            Some("bench") => match rest.get(1) {
                None => Ok(Command::Help(bench_help())),
                Some(n) => match BENCHES.iter().find(|b| b.name == n) {
                    Some(b) => Ok(Command::Help(one_bench_help(b))),
                    None => Err(unknown_bench(n)),
                },
            },
            Some("report") => Ok(Command::Help(report_help())),
            Some(c) => Err(usage(format!("no help for unknown command '{c}'"), top)),
        },
        "bench" => parse_bench(rest),
        "report" => parse_report(rest),
        h if h.starts_with("__") => match HIDDEN.iter().find(|(n, _)| *n == h) {
            Some((name, _)) => Ok(Command::Hidden {
                name,
                args: rest.to_vec(),
            }),
            None => Err(usage(format!("unknown command '{h}'"), top)),
        },
        c if c.starts_with('-') => Err(usage(
            format!("unexpected option '{c}' before a command"),
            top,
        )),
        c => Err(usage(
            format!("unknown command '{c}' (expected bench, report or help)"),
            top,
        )),
    }
}

fn unknown_bench(n: &str) -> UsageError {
    let names: Vec<&str> = BENCHES.iter().map(|b| b.name).collect();
    usage(
        format!("unknown benchmark '{n}' (available: {})", names.join(", ")),
        "manycore bench --help",
    )
}

fn parse_bench(args: &[String]) -> Result<Command, UsageError> {
    let Some(name) = args.first().map(String::as_str) else {
        return Err(usage(
            "'manycore bench' needs a benchmark name",
            "manycore bench --help",
        ));
    };
    if is_help(name) {
        return Ok(Command::Help(bench_help()));
    }
    let Some(bench) = BENCHES.iter().find(|b| b.name == name) else {
        return Err(unknown_bench(name));
    };
    let hint = format!("manycore bench {} --help", bench.name);
    let mut a = BenchArgs {
        secs: None,
        reps: None,
        idle: None,
        quick: false,
        json: false,
    };
    let mut it = Args::new(&args[1..]);
    while let Some(flag) = it.next() {
        if is_help(flag) {
            return Ok(Command::Help(one_bench_help(bench)));
        }
        let declared = |f: &str| bench.flags.contains(&f);
        match flag {
            "--secs" => a.secs = Some(parse_secs(it.value(flag, &hint)?, &hint)?),
            "--reps" if declared(flag) => a.reps = Some(parse_reps(it.value(flag, &hint)?, &hint)?),
            "--idle" if declared(flag) => a.idle = Some(parse_idle(it.value(flag, &hint)?, &hint)?),
            "--quick" => {
                it.no_value(flag, &hint)?;
                a.quick = true
            }
            "--json" => {
                it.no_value(flag, &hint)?;
                a.json = true
            }
            f if f.starts_with('-') => {
                return Err(usage(
                    format!("unknown option '{f}' for 'manycore bench {}'", bench.name),
                    &hint,
                ))
            }
            f => return Err(usage(format!("unexpected argument '{f}'"), &hint)),
        }
    }
    Ok(Command::Bench { bench, args: a })
}

fn parse_report(args: &[String]) -> Result<Command, UsageError> {
    let hint = "manycore report --help";
    let mut r = ReportArgs {
        out: PathBuf::from("report"),
        size: Size::Default,
        only: None,
    };
    let (mut quick, mut full) = (false, false);
    let mut it = Args::new(args);
    while let Some(flag) = it.next() {
        match flag {
            h if is_help(h) => return Ok(Command::Help(report_help())),
            "--out" => {
                let v = it.value(flag, hint)?;
                if v.is_empty() {
                    return Err(usage("'--out' needs a directory name", hint));
                }
                r.out = PathBuf::from(v)
            }
            "--quick" => {
                it.no_value(flag, hint)?;
                quick = true
            }
            "--full" => {
                it.no_value(flag, hint)?;
                full = true
            }
            "--only" => {
                let v = it.value(flag, hint)?;
                let mut names = Vec::new();
                for n in v.split(',').map(str::trim) {
                    if !SECTIONS.iter().any(|s| s.name == n) {
                        let all: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
                        return Err(usage(
                            format!(
                                "unknown section '{n}' for '--only' (available: {})",
                                all.join(", ")
                            ),
                            hint,
                        ));
                    }
                    names.push(n.to_string());
                }
                r.only = Some(names);
            }
            f if f.starts_with('-') => {
                return Err(usage(
                    format!("unknown option '{f}' for 'manycore report'"),
                    hint,
                ))
            }
            f => return Err(usage(format!("unexpected argument '{f}'"), hint)),
        }
    }
    r.size = match (quick, full) {
        (true, true) => {
            return Err(usage(
                "'--quick' and '--full' cannot be used together",
                hint,
            ))
        }
        (true, false) => Size::Quick,
        (false, true) => Size::Full,
        (false, false) => Size::Default,
    };
    Ok(Command::Report(r))
}

#[cfg(test)]
mod tests;
