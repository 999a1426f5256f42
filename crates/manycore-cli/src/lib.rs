//! The `manycore` command as a library, so that integration tests can drive
//! the parser, the JSON format and the report writer directly, and the dev
//! probes (`crates/manycore-probes`) can reuse the benches' workloads;
//! `main.rs` only calls [`main_with_args`].
//!
//! * [`bench`](mod@bench): what a benchmark is (one [`bench::Bench`] value), its
//!   options, sizes and targets; [`benches`]: every benchmark, one module each;
//! * [`cli`]: argument parsing (hand-written; usage errors exit with 2);
//! * [`idle`](mod@idle): the idle policies a bench runs, by name;
//! * [`record`]: the JSON record every benchmark emits;
//! * [`measure`]: the measuring loop and the helpers the benches share;
//! * [`stats`]: the one median and the one percentile;
//! * [`table`], [`progress`], [`plot`], [`report`]: tables, the stderr
//!   progress bar, SVG plots, `manycore report`.

pub mod bench;
pub mod benches;
pub mod cli;
pub mod idle;
pub mod measure;
pub mod plot;
pub mod progress;
pub mod record;
pub mod report;
pub mod stats;
pub mod table;

use std::io::Write;

use cli::Command;
use progress::Progress;

/// Writes `text` to stdout; a closed pipe (`| head`) is status 1, not a panic.
fn emit(text: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Runs the command line `args` (without the program name); returns the
/// exit status: 0 success, 1 failure, 2 usage error.
pub fn main_with_args(args: &[String]) -> i32 {
    let cmd = match cli::parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    match cmd {
        Command::Help(text) => emit(&text),
        Command::Version => emit(&format!("manycore {}\n", env!("CARGO_PKG_VERSION"))),
        Command::Bench { bench, options } => {
            let machine = report::Machine::current();
            let expected = (bench.expected_secs)(&options);
            let mut progress = Progress::new(expected);
            progress.step(bench.name, expected);
            let recs = (bench.run)(&options, &progress);
            progress.finish();
            let text = if options.json {
                recs.iter().map(|r| r.to_json() + "\n").collect::<String>()
            } else {
                let mut s = report::section_text(&report::Section::new(bench, recs.clone()));
                s.push_str(&format!("\nMachine: {}.\n", machine.line()));
                s
            };
            match emit(&text) {
                0 if recs.is_empty() => {
                    eprintln!("error: {}: nothing was measured", bench.name);
                    1
                }
                status => status,
            }
        }
        Command::Report(r) => report::run(&r),
        Command::Peer { bench, args } => bench.peer.map_or(2, |peer| peer(&args)),
    }
}
