//! The lists that wire benchmarks into the command: [`BENCHES`] (the
//! `manycore bench NAME` subcommands), [`SECTIONS`] (the sections of
//! `manycore report`, in order) and [`HIDDEN`] (internal subcommands, such as
//! the peer process of a two-process benchmark).
//!
//! Wiring a new benchmark module `bench_x.rs` with
//! `pub fn run(&XBenchOpts) -> Vec<Record>` takes three lines:
//!
//! 1. `pub mod bench_x;` in `lib.rs`;
//! 2. one [`Bench`] entry in [`BENCHES`], e.g.
//!    ```ignore
//!    Bench { name: "x", about: "what it measures", flags: &[], default_secs: 1.0, details: "",
//!            summary: None,
//!            run: |a, _| bench_x::run(&bench_x::XBenchOpts { secs: a.secs.unwrap_or(1.0), quick: a.quick }) },
//!    ```
//! 3. one [`SectionEntry`] in [`SECTIONS`], e.g.
//!    ```ignore
//!    SectionEntry { name: "x", run: |ctx| Section::auto("x", "Title", "One line on what it shows.",
//!        bench_x::run(&bench_x::XBenchOpts { secs: ctx.secs, quick: ctx.quick })) },
//!    ```
//!    ([`Section::auto`] gives the table and one bar chart per case; write a
//!    full section function instead for ratios or line plots.)
//!
//! The module is `pub` (so its `pub` items are not dead code); its public
//! types need `#[derive(Debug)]` (workspace lint `missing_debug_implementations`).
//!
//! A hidden subcommand is one `("__x-peer", bench_x::peer_main)` entry in
//! [`HIDDEN`]; it receives the arguments after its name and returns the exit
//! status.

use crate::cli::BenchArgs;
use crate::progress::Progress;
use crate::record::Record;
#[allow(unused_imports)]
use crate::report::{Section, SectionCtx};
use crate::{bench_cci, bench_sock, bench_steal, pingpong};

/// A `manycore bench` subcommand.
#[derive(Debug)]
pub struct Bench {
    /// Its name on the command line.
    pub name: &'static str,
    /// One line for the help.
    pub about: &'static str,
    /// Flags it accepts beyond `--secs`, `--quick`, `--json` (`"--reps"`, `"--idle"`).
    pub flags: &'static [&'static str],
    /// `--secs` when not given (shown in the help).
    pub default_secs: f64,
    /// More text for its `--help`.
    pub details: &'static str,
    /// Runs it. The progress bar may be used or ignored.
    pub run: fn(&BenchArgs, &Progress) -> Vec<Record>,
    /// Extra human-readable text after the table (not printed with `--json`).
    pub summary: Option<fn(&[Record]) -> String>,
}

/// A section of `manycore report`.
#[derive(Debug)]
pub struct SectionEntry {
    /// Its name for `--only` and the progress bar.
    pub name: &'static str,
    /// Runs its benchmarks and describes the result.
    pub run: fn(&SectionCtx) -> Section,
}

/// Every `manycore bench` subcommand.
pub const BENCHES: &[Bench] = &[
    Bench {
        name: "pingpong",
        about: "cross-core round trip, one-way throughput and idle CPU, manycore vs peers",
        flags: &["--reps", "--idle"],
        default_secs: pingpong::DEFAULT_SECS,
        details: pingpong::DETAILS,
        run: pingpong::run_cli,
        summary: Some(pingpong::summary),
    },
    Bench {
        name: "reduce",
        about: "collective reduce over 1..48 members, tree and flat, per idle policy (Figure 4)",
        flags: &[],
        default_secs: 20.0,
        details: "",
        run: |a, _| {
            bench_cci::run_reduce(&bench_cci::CciBenchOpts {
                secs: a.secs.unwrap_or(20.0),
                quick: a.quick,
            })
        },
        summary: None,
    },
    Bench {
        name: "invoke",
        about: "Remote::invoke round trip against call; cost of a timeout that does not fire",
        flags: &[],
        default_secs: 6.0,
        details: "",
        run: |a, _| {
            bench_cci::run_invoke(&bench_cci::CciBenchOpts {
                secs: a.secs.unwrap_or(6.0),
                quick: a.quick,
            })
        },
        summary: None,
    },
    Bench {
        name: "sock",
        about: "shared-memory sockets vs Unix and TCP: round trips, streaming, Table 1 of rckSock",
        flags: &[],
        default_secs: 0.25,
        details: "MANYCORE_SOCK_BENCH_ONLY=rtt|stream|table1 runs one part; MANYCORE_SOCK_BENCH_BUF sets the sock buffer size.",
        run: |a, _| bench_sock::run(&bench_sock::SockBenchOpts { secs: a.secs.unwrap_or(0.25), quick: a.quick }),
        summary: None,
    },
    Bench {
        name: "sched",
        about: "deadline misses of a periodic task set with background load: FIFO, priority, EDF",
        flags: &[],
        default_secs: 12.0,
        details: "",
        run: |a, _| {
            bench_cci::run_sched(&bench_cci::CciBenchOpts {
                secs: a.secs.unwrap_or(12.0),
                quick: a.quick,
            })
        },
        summary: None,
    },
    Bench {
        name: "steal",
        about: "fork-join fib, knary, tree sum, quicksort: sequential, manycore, rayon, chili (MuSE Tables 1, 2)",
        flags: &[],
        default_secs: 1.0,
        details: "",
        run: |a, _| {
            bench_steal::run(&bench_steal::StealBenchOpts {
                secs: a.secs.unwrap_or(1.0),
                quick: a.quick,
            })
        },
        summary: Some(bench_steal::summary),
    },
];

/// Every section of `manycore report`, in order.
pub const SECTIONS: &[SectionEntry] = &[
    SectionEntry {
        name: "pingpong",
        run: pingpong::section,
    },
    SectionEntry {
        name: "invoke",
        run: bench_cci::invoke_section,
    },
    SectionEntry {
        name: "reduce",
        run: bench_cci::reduce_section,
    },
    SectionEntry {
        name: "sched",
        run: bench_cci::sched_section,
    },
    SectionEntry {
        name: "sock",
        run: |ctx| {
            Section::auto(
                "sock",
                "Sockets over shared memory (rckSock)",
                "Round trips and 1 MiB streaming between two processes and two threads, manycore-sock (spin, hybrid, sleep) \
                 against Unix domain sockets and TCP loopback; Table 1: one client's throughput as the server's 8 KiB buffer \
                 is split among more connections (chunk size per row).",
                bench_sock::run(&bench_sock::SockBenchOpts { secs: 0.1, quick: ctx.quick }),
            )
        },
    },
    SectionEntry {
        name: "steal",
        run: |ctx| {
            let mut sec = Section::auto(
                "steal",
                "Fork-join: on-stack execution, stolen on demand (MuSE)",
                "Ts, and T1/T2 on 1 and 2 cores for manycore, rayon and chili; efficiency is (Ts/T2)/S_cap.",
                bench_steal::run(&bench_steal::StealBenchOpts {
                    secs: ctx.secs.min(0.3),
                    quick: ctx.quick,
                }),
            );
            sec.markdown.push_str(&bench_steal::summary(&sec.records));
            sec
        },
    },
];

/// The entry point of a hidden subcommand: its arguments in, exit status out.
pub type HiddenMain = fn(&[String]) -> i32;

/// Hidden subcommands: name (starting with `__`) and entry point.
pub const HIDDEN: &[(&str, HiddenMain)] = &[("__sock-peer", bench_sock::peer_main)];
