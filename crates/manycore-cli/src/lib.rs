//! The `manycore` command as a library, so that integration tests can drive
//! the parser, the JSON format and the report writer directly; `main.rs` only
//! calls [`main_with_args`].
//!
//! * [`cli`]: argument parsing (hand-written; usage errors exit with 2);
//! * [`registry`]: the lists of benches, report sections and hidden
//!   subcommands (how to wire a new benchmark is written there);
//! * [`record`]: the JSON record every benchmark emits;
//! * [`stats`], [`table`], [`progress`], [`plot`], [`report`]: medians and
//!   p99, tables, the stderr progress bar, SVG plots, `manycore report`;
//! * [`pingpong`]: `manycore bench pingpong`.

pub mod bench_cci;
pub mod bench_sock;
pub mod bench_steal;
pub mod cli;
pub mod pingpong;
pub mod plot;
pub mod progress;
pub mod record;
pub mod registry;
pub mod report;
pub mod stats;
pub mod table;

use std::io::Write;

use cli::Command;
use progress::Progress;
use registry::HIDDEN;

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
        Command::Bench { bench, args } => {
            let machine = report::Machine::current();
            let mut progress = Progress::new(0);
            let recs = (bench.run)(&args, &progress);
            progress.finish();
            let mut out = std::io::stdout().lock();
            let text = if args.json {
                recs.iter().map(|r| r.to_json() + "\n").collect::<String>()
            } else {
                let table: Vec<_> = recs.iter().filter(|r| r.case != "ratio").cloned().collect();
                let mut s = table::render_text(&table::grid(&table));
                if let Some(f) = bench.summary {
                    s.push('\n');
                    s.push_str(&f(&recs));
                }
                s.push_str(&format!("\nMachine: {}.\n", machine.line()));
                s
            };
            match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                Ok(()) => {
                    if recs.is_empty() {
                        eprintln!("error: {}: nothing was measured", bench.name);
                        1
                    } else {
                        0
                    }
                }
                // A closed pipe (`| head`) is not worth a panic.
                Err(_) => 1,
            }
        }
        Command::Report(r) => report::run(&r),
        Command::Hidden { name, args } => match HIDDEN.iter().find(|(n, _)| *n == name) {
            Some((_, f)) => f(&args),
            None => 2,
        },
    }
}
