//! Command-line parsing, by hand (no dependency, exact control of errors):
//! `manycore bench NAME [flags]`, `manycore report [flags]`, `manycore help`,
//! and the hidden `__NAME-peer` subcommands (the peer process of a bench
//! that runs across processes) that get their raw arguments. The flags of
//! `bench` are the shared ones ([`Options`]) and those the bench declares
//! ([`Bench::options`]). A usage error is a [`UsageError`]; `main` prints it
//! with a hint and exits with status 2. Nothing here panics on any input.

use std::fmt;
use std::path::PathBuf;

use crate::bench::{Bench, Options, Size};
use crate::benches;

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
        options: Options,
    },
    /// Run the report.
    Report(ReportArgs),
    /// The peer process of a bench, with its raw arguments.
    Peer {
        /// The bench whose peer it is.
        bench: &'static Bench,
        /// Everything after the subcommand.
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

/// The hidden subcommand that runs `bench`'s peer process.
pub fn peer_command(bench: &Bench) -> String {
    format!("__{}-peer", bench.name)
}

/// A duration for people: "about 40 s" (to 5 s) under 90 s, else "about
/// 1.5 min" (to half a minute).
pub fn duration_text(secs: f64) -> String {
    if secs < 90.0 {
        format!("about {:.0} s", (secs / 5.0).ceil().max(1.0) * 5.0)
    } else {
        format!("about {} min", (secs / 30.0).round() / 2.0)
    }
}

/// `text` with each paragraph (blank-line separated) reflowed to lines of
/// at most `width` characters.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for para in text.split("\n\n") {
        let mut line = String::new();
        for word in para.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&line);
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// How long `manycore report` is expected to take at `size`, in seconds.
pub fn report_expected_secs(size: Size) -> f64 {
    benches::ALL
        .iter()
        .map(|b| (b.expected_secs)(&Options::for_report(b, size)))
        .sum()
}

fn bench_list() -> String {
    benches::ALL
        .iter()
        .map(|b| format!("  {:<14} {}\n", b.name, b.about))
        .collect()
}

/// The top-level help text.
pub fn main_help() -> String {
    format!(
        "manycore: benchmarks and reports for the manycore message-passing runtime\n\
         \n\
         Usage: manycore <COMMAND> [OPTIONS]\n\
         \n\
         Commands:\n\
        \x20 bench <NAME>   run one benchmark, side by side with its peers\n\
        \x20 report         run every benchmark and write report/ ({})\n\
        \x20 help [CMD]     print help (also: --help after any command)\n\
         \n\
         Benchmarks:\n{}\
         \n\
         Options:\n\
        \x20 -h, --help     print help\n\
        \x20 -V, --version  print version\n\
         \n\
         Output: a table on stdout; with --json one JSON object per line,\n\
         {{\"bench\",\"case\",\"impl\",\"metric\",\"value\",\"unit\"}}, and nothing else on stdout.\n\
         Progress goes to stderr when it is a terminal. Exit status: 0 ok, 1 failure, 2 bad usage.\n",
        duration_text(report_expected_secs(Size::Default)),
        bench_list()
    )
}

/// Help for `manycore bench`.
pub fn bench_help() -> String {
    format!(
        "Usage: manycore bench <NAME> [OPTIONS]\n\nBenchmarks:\n{}\n\
         See 'manycore bench <NAME> --help' for a benchmark's options.\n",
        bench_list()
    )
}

/// One line of option help: the flag column, then the text (continuation
/// lines of the text indented to its column).
fn option_line(flag: &str, help: &str) -> String {
    let mut s = format!("  {flag:<16} ");
    s.push_str(&help.replace('\n', &format!("\n{:19}", "")));
    s.push('\n');
    s
}

/// Help for one benchmark.
pub fn one_bench_help(b: &Bench) -> String {
    let d = Options::defaults(b, false);
    let mut s = format!(
        "{}\n\nUsage: manycore bench {} [OPTIONS]\n\nOptions:\n",
        b.about, b.name
    );
    s.push_str(&option_line(
        "--secs <S>",
        &format!("time budget in seconds [default: {}]", b.secs),
    ));
    if b.repeats {
        s.push_str(&option_line(
            "--reps <R>",
            &format!(
                "repetitions per case; medians are reported [default: {}]",
                d.reps
            ),
        ));
    }
    for o in b.options {
        let flag = match o.value {
            Some(v) => format!("{} <{v}>", o.flag),
            None => o.flag.to_string(),
        };
        s.push_str(&option_line(&flag, o.help));
    }
    s.push_str(&option_line(
        "--quick",
        &format!(
            "small sizes, the quick report's (a smoke run, {})",
            duration_text((b.expected_secs)(&Options::defaults(b, true)))
        ),
    ));
    s.push_str(&option_line(
        "--json",
        "one JSON record per line on stdout, nothing else",
    ));
    s.push_str(&option_line("-h, --help", "print help"));
    s.push_str(&format!(
        "\nWith the defaults a run takes {}.\n",
        duration_text((b.expected_secs)(&d))
    ));
    if !b.method.is_empty() {
        s.push('\n');
        s.push_str(&wrap(b.method, 78));
    }
    s
}

/// Help for `manycore report`.
pub fn report_help() -> String {
    let t = |s| duration_text(report_expected_secs(s));
    format!(
        "Runs every benchmark, prints the tables, and writes a report directory:\n\
         report.md (one section per bench, with its table, targets and the machine),\n\
         results.json (a JSON array of every record) and one SVG per plot.\n\
         It takes {} ({} with --quick, {} with --full).\n\
         \n\
         Usage: manycore report [OPTIONS]\n\
         \n\
         Options:\n\
        \x20 --out <DIR>         where to write [default: report]\n\
        \x20 --quick             small sizes (smoke run)\n\
        \x20 --full              longer runs, steadier medians\n\
        \x20 --only <NAME,..>    only these sections ({})\n\
        \x20 -h, --help          print help\n",
        t(Size::Default),
        t(Size::Quick),
        t(Size::Full),
        benches::names()
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
                Some(n) => Ok(Command::Help(one_bench_help(known_bench(n)?))),
            },
            Some("report") => Ok(Command::Help(report_help())),
            Some(c) => Err(usage(format!("no help for unknown command '{c}'"), top)),
        },
        "bench" => parse_bench(rest),
        "report" => parse_report(rest),
        h if h.starts_with("__") => benches::ALL
            .iter()
            .find(|b| b.peer.is_some() && peer_command(b) == h)
            .map(|b| Command::Peer {
                bench: b,
                args: rest.to_vec(),
            })
            .ok_or_else(|| usage(format!("unknown command '{h}'"), top)),
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

fn known_bench(n: &str) -> Result<&'static Bench, UsageError> {
    benches::find(n).ok_or_else(|| {
        usage(
            format!("unknown benchmark '{n}' (available: {})", benches::names()),
            "manycore bench --help",
        )
    })
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
    let bench = known_bench(name)?;
    let hint = format!("manycore bench {} --help", bench.name);
    let (mut secs, mut reps, mut quick, mut json) = (None, None, false, false);
    let mut extra: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut it = Args::new(&args[1..]);
    while let Some(flag) = it.next() {
        if is_help(flag) {
            return Ok(Command::Help(one_bench_help(bench)));
        }
        let own = bench.options.iter().find(|o| o.flag == flag);
        match flag {
            "--secs" => secs = Some(parse_secs(it.value(flag, &hint)?, &hint)?),
            "--reps" if bench.repeats => reps = Some(parse_reps(it.value(flag, &hint)?, &hint)?),
            "--quick" => {
                it.no_value(flag, &hint)?;
                quick = true
            }
            "--json" => {
                it.no_value(flag, &hint)?;
                json = true
            }
            _ if own.is_some() => {
                let o = own.expect("matched");
                let parsed = match o.value {
                    Some(_) => {
                        let v = it.value(flag, &hint)?;
                        (o.parse)(v).map_err(|why| {
                            usage(format!("invalid value '{v}' for '{flag}': {why}"), &hint)
                        })?
                    }
                    None => {
                        it.no_value(flag, &hint)?;
                        Vec::new()
                    }
                };
                extra.retain(|(f, _)| *f != o.flag);
                extra.push((o.flag, parsed));
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
    let d = Options::defaults(bench, quick);
    let options = Options {
        secs: secs.unwrap_or(d.secs),
        reps: reps.unwrap_or(d.reps),
        quick,
        json,
        extra,
    };
    Ok(Command::Bench { bench, options })
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
                    if benches::find(n).is_none() {
                        return Err(usage(
                            format!(
                                "unknown section '{n}' for '--only' (available: {})",
                                benches::names()
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
