//! `manycore bench pingpong`: the cross-core round trip of
//! `core1.call(|| x + 1).wait()` and one-way `spawn` throughput, side by side
//! with the same operations done by a raw atomic ping-pong (the physical
//! limit), a raw futex ping-pong, `std::sync::mpsc`, `crossbeam-channel` and
//! `rtrb`, plus the CPU time an idle runtime burns per idle policy. After the
//! Barrelfish-on-SCC report's ping-pong experiments (sections 4.2-4.3) and the
//! poll-versus-hlt round trips of the cross-core invocations paper (section V).
//!
//! Records (bench `pingpong`):
//!
//! | case | metric | unit | meaning |
//! |---|---|---|---|
//! | `round_trip` | `median`, `p50`, `p99` | ns | one round trip: median over repetitions; p50 and p99 of per-batch means |
//! | `throughput` | `median` | Mmsg/s | one-way messages per second, median over repetitions |
//! | `idle_cpu` | `cpu` | ms/s | process CPU time per second of wall time with an idle 2-core runtime |
//! | `ratio` | `round_trip`, `throughput` | x | impl `a/b`: a's median over b's, from this same run |

mod driver;
mod peers;
mod rt;

use std::fmt::Write as _;

pub use driver::{run_batches, Plan, Samples, PARTNER_TIMEOUT};

use crate::cli::BenchArgs;
use crate::plot::Plot;
use crate::progress::Progress;
use crate::record::Record;
use crate::report::{Section, SectionCtx};

/// The bench name in records.
pub const BENCH: &str = "pingpong";
/// `--secs` default: seconds per case.
pub const DEFAULT_SECS: f64 = 1.0;
/// `--reps` default.
pub const DEFAULT_REPS: usize = 5;

/// Extra text for `manycore bench pingpong --help`.
pub const DETAILS: &str = "\
Rows (impl): raw-atomic and raw-futex (two pinned threads, the physical
limits), std-mpsc and crossbeam-channel (echo thread), rtrb (one-way SPSC of
u64), rtrb-line (the same with one u64 per 64-byte item: the ceiling of one
message per cache line), manycore-poll / manycore-sleep / manycore-hybrid (a 2-core runtime;
core 0 calls core 1). Cases: round_trip (median, p50, p99, ns), throughput
(Mmsg/s), idle_cpu (ms of CPU per s), ratio (the acceptance ratios).
Each case runs about --secs seconds: --reps repetitions, each after its own
warm-up and calibration, with the repetitions of all timed rows interleaved
(repetition 1 of every row, then repetition 2, ...), so that every row is
measured over the same stretch of time; within a repetition the spinning
round-trip rows come right after raw-atomic and before any row that sleeps
(a vCPU that halts may come back on another physical CPU, with another cost
of a line transfer); medians are over repetitions (total
time / operations), p50 and p99 over per-batch means (p50: the typical speed
when no stall hits).
Idle CPU: a fresh runtime settles for 0.2 s, then process CPU time is read over
min(--secs, 1) s (at least 0.1 s). Every wait for a partner gives up after 5 s
(the row is then left out, with a message on stderr).";

/// A manycore idle policy, by name (mapped to `manycore::IdlePolicy` by the runtime rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Spin (lowest latency, burns the CPU).
    Poll,
    /// Sleep on the doorbell at once.
    Sleep,
    /// Spin for a budget, then sleep (the runtime's default).
    Hybrid,
}

impl Idle {
    /// All three, in report order.
    pub const ALL: [Idle; 3] = [Idle::Poll, Idle::Sleep, Idle::Hybrid];
    /// `poll`, `sleep`, `hybrid`.
    pub fn name(self) -> &'static str {
        match self {
            Idle::Poll => "poll",
            Idle::Sleep => "sleep",
            Idle::Hybrid => "hybrid",
        }
    }
    /// The impl name in records: `manycore-poll`, ...
    pub fn impl_name(self) -> &'static str {
        match self {
            Idle::Poll => "manycore-poll",
            Idle::Sleep => "manycore-sleep",
            Idle::Hybrid => "manycore-hybrid",
        }
    }
    /// Parses a name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.name() == s)
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct PingpongOpts {
    /// Seconds per case.
    pub secs: f64,
    /// Repetitions per case.
    pub reps: usize,
    /// manycore idle policies to measure (peers always run).
    pub idle: Vec<Idle>,
}

impl Default for PingpongOpts {
    fn default() -> Self {
        Self {
            secs: DEFAULT_SECS,
            reps: DEFAULT_REPS,
            idle: Idle::ALL.to_vec(),
        }
    }
}

/// How long the idle-CPU measurement lets a fresh runtime settle.
const IDLE_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// The idle-CPU window: 1 s normally, `secs` if shorter (but at least 0.1 s).
fn idle_window(secs: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(secs.clamp(0.1, 1.0))
}

/// One row of the run: a name for the progress bar and the work.
enum Row {
    /// A timed row (latency or throughput): called once per repetition with
    /// a one-repetition plan; the repetitions of all timed rows are
    /// interleaved (see [`run`]).
    Timed {
        label: String,
        imp: &'static str,
        plan: Plan,
        measure: Box<dyn FnMut(Plan) -> Result<Samples, String>>,
        records: fn(&str, &Samples) -> Vec<Record>,
    },
    /// A row run once (idle CPU).
    Once {
        label: String,
        run: Box<dyn FnOnce() -> Result<Vec<Record>, String>>,
    },
}

fn latency_records(imp: &str, s: &Samples) -> Vec<Record> {
    let mut v = Vec::new();
    if let Some(m) = s.median_ns() {
        v.push(Record::new(BENCH, "round_trip", imp, "median", m, "ns"));
    }
    if let Some(p) = s.p50_ns() {
        v.push(Record::new(BENCH, "round_trip", imp, "p50", p, "ns"));
    }
    if let Some(p) = s.p99_ns() {
        v.push(Record::new(BENCH, "round_trip", imp, "p99", p, "ns"));
    }
    v
}

fn throughput_records(imp: &str, s: &Samples) -> Vec<Record> {
    s.median_mops()
        .map(|m| vec![Record::new(BENCH, "throughput", imp, "median", m, "Mmsg/s")])
        .unwrap_or_default()
}

fn latency_row(
    label: &str,
    imp: &'static str,
    plan: Plan,
    f: impl FnMut(Plan) -> Result<Samples, String> + 'static,
) -> Row {
    Row::Timed {
        label: label.into(),
        imp,
        plan,
        measure: Box::new(f),
        records: latency_records,
    }
}

fn throughput_row(
    label: &str,
    imp: &'static str,
    plan: Plan,
    f: impl FnMut(Plan) -> Result<Samples, String> + 'static,
) -> Row {
    Row::Timed {
        label: label.into(),
        imp,
        plan,
        measure: Box::new(f),
        records: throughput_records,
    }
}

fn rows(o: &PingpongOpts) -> Vec<Row> {
    let lat = Plan::latency(o.secs, o.reps);
    let thr = Plan::throughput(o.secs, o.reps);
    let mut v = vec![latency_row(
        "round trip: raw-atomic",
        "raw-atomic",
        lat,
        peers::raw_atomic,
    )];
    // The spinning rows right after the raw atomic row, the sleeping ones
    // after them: on this VM a vCPU that halts can come back on another
    // physical CPU, and the cost of a line transfer between the two vCPUs
    // changes with it (the raw atomic round trip measured 49, 100 or 480 ns
    // within one hour); rows that follow a sleeping row can thus see another
    // placement than the row before it. Spinning rows do not halt a vCPU.
    let (spinning, sleeping): (Vec<Idle>, Vec<Idle>) =
        o.idle.iter().partition(|i| !matches!(i, Idle::Sleep));
    let round_trip = |i: Idle| {
        latency_row(
            &format!("round trip: {}", i.impl_name()),
            i.impl_name(),
            lat,
            move |p| rt::round_trip(i, p),
        )
    };
    v.extend(spinning.iter().map(|&i| round_trip(i)));
    v.push(latency_row(
        "round trip: crossbeam-channel",
        "crossbeam-channel",
        lat,
        peers::crossbeam,
    ));
    v.push(latency_row(
        "round trip: raw-futex",
        "raw-futex",
        lat,
        peers::raw_futex,
    ));
    v.push(latency_row(
        "round trip: std-mpsc",
        "std-mpsc",
        lat,
        peers::std_mpsc,
    ));
    v.extend(sleeping.iter().map(|&i| round_trip(i)));
    v.push(throughput_row(
        "throughput: rtrb",
        "rtrb",
        thr,
        peers::rtrb_stream,
    ));
    // The same order for the streams: the spinning rows right after rtrb.
    let stream = |i: Idle| {
        throughput_row(
            &format!("throughput: {}", i.impl_name()),
            i.impl_name(),
            thr,
            move |p| rt::spawn_stream(i, p),
        )
    };
    v.extend(spinning.iter().map(|&i| stream(i)));
    v.push(throughput_row(
        "throughput: rtrb-line",
        "rtrb-line",
        thr,
        peers::rtrb_line_stream,
    ));
    v.push(throughput_row(
        "throughput: crossbeam-channel",
        "crossbeam-channel",
        thr,
        peers::crossbeam_stream,
    ));
    v.extend(sleeping.iter().map(|&i| stream(i)));
    let window = idle_window(o.secs);
    v.push(Row::Once {
        label: "idle cpu: no runtime".into(),
        run: Box::new(move || {
            let ms = idle_cpu_ms_per_s(window, || Ok(()))?;
            Ok(vec![Record::new(
                BENCH,
                "idle_cpu",
                "no-runtime",
                "cpu",
                ms,
                "ms/s",
            )])
        }),
    });
    for &i in &o.idle {
        v.push(Row::Once {
            label: format!("idle cpu: {}", i.impl_name()),
            run: Box::new(move || {
                let ms = idle_cpu_ms_per_s(window, || rt::idle_runtime(i))?;
                Ok(vec![Record::new(
                    BENCH,
                    "idle_cpu",
                    i.impl_name(),
                    "cpu",
                    ms,
                    "ms/s",
                )])
            }),
        });
    }
    v
}

/// Process CPU time per second of wall time while whatever `setup` returns
/// is alive (a runtime with nothing to do) and the main thread sleeps:
/// settle for `IDLE_SETTLE` (0.2 s), then measure over `window`.
pub fn idle_cpu_ms_per_s<T>(
    window: std::time::Duration,
    setup: impl FnOnce() -> Result<T, String>,
) -> Result<f64, String> {
    use manycore_sync::cpu::process_cpu_time;
    let guard = setup()?;
    std::thread::sleep(IDLE_SETTLE);
    let (c0, t0) = (process_cpu_time(), std::time::Instant::now());
    std::thread::sleep(window);
    let (c1, t1) = (process_cpu_time(), std::time::Instant::now());
    drop(guard);
    let cpu = c1.saturating_sub(c0).as_secs_f64() * 1e3;
    Ok(cpu / (t1 - t0).as_secs_f64())
}

/// Runs the benchmark; failures of single rows go to stderr (through the
/// progress bar) and leave that row out.
///
/// The repetitions of the timed rows are interleaved: repetition 1 of every
/// row, then repetition 2 of every row, and so on. On a shared VM the cost
/// of a cache-line transfer changes with where the host places the two
/// vCPUs (here the raw atomic round trip moved between 258 and 315 ns from
/// one run to the next), and rows measured one after the other would each
/// see a different placement; interleaved, every row's median is taken over
/// the same stretch of time, so the ratios compare like with like.
pub fn run(o: &PingpongOpts, progress: &Progress) -> Vec<Record> {
    if driver::cpu_pair().is_none() {
        progress
            .println("pingpong: fewer than 2 CPUs in the original CPU set: threads are not pinned");
    }
    let rows = rows(o);
    let reps = o.reps.max(1);
    let timed = rows
        .iter()
        .filter(|r| matches!(r, Row::Timed { .. }))
        .count();
    progress.add_len((timed * reps + rows.len() - timed) as u64);
    let mut out = Vec::new();
    // Timed rows, interleaved; `None` once a row has failed.
    let mut acc: Vec<Option<Samples>> = rows
        .iter()
        .map(|r| matches!(r, Row::Timed { .. }).then(Samples::default))
        .collect();
    let mut rows = rows;
    for rep in 0..reps {
        for (row, acc) in rows.iter_mut().zip(acc.iter_mut()) {
            let Row::Timed {
                label,
                plan,
                measure,
                ..
            } = row
            else {
                continue;
            };
            progress.set_message(&format!("pingpong {label} ({}/{reps})", rep + 1));
            if let Some(a) = acc {
                match measure(plan.one_rep()) {
                    Ok(s) => a.merge(s),
                    Err(e) => {
                        progress.println(&format!("pingpong: {label}: failed: {e}"));
                        *acc = None;
                    }
                }
            }
            progress.inc();
        }
    }
    for (row, acc) in rows.into_iter().zip(acc) {
        match row {
            Row::Timed { imp, records, .. } => {
                if let Some(s) = acc {
                    out.extend(records(imp, &s));
                }
            }
            Row::Once { label, run } => {
                progress.set_message(&format!("pingpong {label}"));
                match run() {
                    Ok(r) => out.extend(r),
                    Err(e) => progress.println(&format!("pingpong: {label}: failed: {e}")),
                }
                progress.inc();
            }
        }
    }
    let ratios = ratios(&out);
    out.extend(ratios);
    out
}

/// `manycore bench pingpong` entry point.
pub fn run_cli(a: &BenchArgs, progress: &Progress) -> Vec<Record> {
    let o = PingpongOpts {
        secs: a.secs.unwrap_or(if a.quick { 0.2 } else { DEFAULT_SECS }),
        reps: a.reps.unwrap_or(if a.quick { 3 } else { DEFAULT_REPS }),
        idle: a
            .idle
            .as_ref()
            .map(|v| v.iter().filter_map(|n| Idle::from_name(n)).collect())
            .unwrap_or_else(|| Idle::ALL.to_vec()),
    };
    run(&o, progress)
}

/// The acceptance checks of issue 2: (a, b, case, op, target).
pub const ACCEPTANCE: &[(&str, &str, &str, Cmp, f64)] = &[
    (
        "manycore-poll",
        "raw-atomic",
        "round_trip",
        Cmp::AtMost,
        1.5,
    ),
    (
        "manycore-sleep",
        "raw-futex",
        "round_trip",
        Cmp::AtMost,
        1.3,
    ),
    (
        "manycore-hybrid",
        "raw-atomic",
        "round_trip",
        Cmp::AtMost,
        1.5,
    ),
    ("manycore-poll", "std-mpsc", "round_trip", Cmp::AtMost, 0.5),
    (
        "manycore-poll",
        "crossbeam-channel",
        "round_trip",
        Cmp::AtMost,
        0.5,
    ),
    ("manycore-poll", "rtrb", "throughput", Cmp::AtLeast, 0.5),
    ("manycore-sleep", "rtrb", "throughput", Cmp::AtLeast, 0.5),
    ("manycore-hybrid", "rtrb", "throughput", Cmp::AtLeast, 0.5),
];

/// Idle CPU limits: (impl, at most ms/s).
pub const IDLE_LIMITS: &[(&str, f64)] = &[("manycore-sleep", 2.0), ("manycore-hybrid", 2.0)];

/// A comparison against a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// value <= target
    AtMost,
    /// value >= target
    AtLeast,
}

impl Cmp {
    fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Cmp::AtMost => v <= t,
            Cmp::AtLeast => v >= t,
        }
    }
    fn sign(self) -> &'static str {
        match self {
            Cmp::AtMost => "<=",
            Cmp::AtLeast => ">=",
        }
    }
}

fn find(recs: &[Record], case: &str, imp: &str, metric: &str) -> Option<f64> {
    recs.iter()
        .find(|r| r.bench == BENCH && r.case == case && r.impl_ == imp && r.metric == metric)
        .map(|r| r.value)
        .filter(|v| v.is_finite())
}

/// The ratio records (case `ratio`, impl `a/b`, metric = the case compared)
/// for every acceptance pair whose two medians were measured.
pub fn ratios(recs: &[Record]) -> Vec<Record> {
    let mut out = Vec::new();
    for &(a, b, case, _, _) in ACCEPTANCE {
        if let (Some(x), Some(y)) = (find(recs, case, a, "median"), find(recs, case, b, "median")) {
            if y > 0.0 {
                out.push(Record::new(
                    BENCH,
                    "ratio",
                    &format!("{a}/{b}"),
                    case,
                    x / y,
                    "x",
                ));
            }
        }
    }
    out
}

/// The acceptance lines (Markdown list items; readable as plain text too).
pub fn summary(recs: &[Record]) -> String {
    let mut s = String::from("Acceptance (issue 2; ratios of medians from this run):\n");
    for &(a, b, case, cmp, target) in ACCEPTANCE {
        let what = if case == "round_trip" {
            "round trip"
        } else {
            "throughput"
        };
        // The same ratio on per-batch p50s, for judging a noisy run.
        let typical = match (find(recs, case, a, "p50"), find(recs, case, b, "p50")) {
            (Some(x), Some(y)) if y > 0.0 => format!(" [per-batch p50: {:.2}x]", x / y),
            _ => String::new(),
        };
        let _ = match find(recs, "ratio", &format!("{a}/{b}"), case) {
            Some(v) => writeln!(
                s,
                "- {a} / {b} {what}: {v:.2}x (target {} {target}) {}{typical}",
                cmp.sign(),
                if cmp.holds(v, target) { "pass" } else { "FAIL" }
            ),
            None => writeln!(
                s,
                "- {a} / {b} {what}: not measured (target {} {target})",
                cmp.sign()
            ),
        };
    }
    // Not a target: how close the one-message-per-line design is to its own
    // ceiling (rtrb moving one 64-byte item per message).
    if let Some(line) = find(recs, "throughput", "rtrb-line", "median").filter(|v| *v > 0.0) {
        for imp in ["manycore-poll", "manycore-sleep", "manycore-hybrid"] {
            if let Some(v) = find(recs, "throughput", imp, "median") {
                let _ = writeln!(
                    s,
                    "- (for reference) {imp} / rtrb-line throughput: {:.2}x (one cache line per message in both)",
                    v / line
                );
            }
        }
    }
    for &(imp, limit) in IDLE_LIMITS {
        let _ = match find(recs, "idle_cpu", imp, "cpu") {
            Some(v) => writeln!(
                s,
                "- {imp} idle CPU: {v:.2} ms/s (target < {limit}) {}",
                if v < limit { "pass" } else { "FAIL" }
            ),
            None => writeln!(s, "- {imp} idle CPU: not measured (target < {limit})"),
        };
    }
    s
}

/// The plots of a pingpong record set.
pub fn plots(recs: &[Record]) -> Vec<Plot> {
    let pick = |case: &str, metric: &str| -> Vec<(String, f64)> {
        recs.iter()
            .filter(|r| r.case == case && r.metric == metric)
            .map(|r| (r.impl_.clone(), r.value))
            .collect()
    };
    let mut v = Vec::new();
    let rt = pick("round_trip", "median");
    if !rt.is_empty() {
        v.push(Plot::bars(
            "pingpong_round_trip.svg",
            "Round trip, median (log scale)",
            "ns per round trip",
            rt,
            true,
        ));
    }
    let p99 = pick("round_trip", "p99");
    if !p99.is_empty() {
        v.push(Plot::bars(
            "pingpong_round_trip_p99.svg",
            "Round trip, p99 (log scale)",
            "ns",
            p99,
            true,
        ));
    }
    let thr = pick("throughput", "median");
    if !thr.is_empty() {
        let log = crate::report::spans_decades(thr.iter().map(|t| t.1));
        v.push(Plot::bars(
            "pingpong_throughput.svg",
            "One-way throughput, median",
            "Mmsg/s",
            thr,
            log,
        ));
    }
    let idle = pick("idle_cpu", "cpu");
    if !idle.is_empty() {
        v.push(Plot::bars(
            "pingpong_idle_cpu.svg",
            "CPU burnt by an idle 2-core runtime",
            "ms of CPU per s",
            idle,
            false,
        ));
    }
    let ratio: Vec<(String, f64)> = recs
        .iter()
        .filter(|r| r.case == "ratio")
        .map(|r| {
            (
                format!("{} ({})", r.impl_, r.metric.replace('_', " ")),
                r.value,
            )
        })
        .collect();
    if !ratio.is_empty() {
        let log = crate::report::spans_decades(ratio.iter().map(|t| t.1));
        v.push(Plot::bars(
            "pingpong_ratios.svg",
            "Acceptance ratios (x)",
            "ratio",
            ratio,
            log,
        ));
    }
    v
}

/// The report section.
pub fn section(ctx: &SectionCtx) -> Section {
    let o = PingpongOpts {
        secs: ctx.secs,
        reps: ctx.reps,
        idle: Idle::ALL.to_vec(),
    };
    let recs = run(&o, ctx.progress);
    let mut md = String::from(
        "Core 0 of a 2-core runtime calls `core1.call(move || x + 1).wait()` in a loop; \
         the peers do the same round trip between two threads pinned to two CPUs. \
         The repetitions of all rows are interleaved (repetition 1 of every row, then \
         repetition 2, ...): on a shared VM the cost of a line transfer moves with the \
         host's placement of the vCPUs, and every row then sees the same placements. \
         Within a repetition the spinning round-trip rows run right after raw-atomic, \
         before any row that sleeps: a vCPU that halts may come back on another \
         physical CPU, and rows after it would see another placement. \
         Throughput: fire-and-forget `spawn`s (u64 payload) from core 0 to core 1, \
         against `rtrb` and a bounded `crossbeam-channel` moving u64s, and `rtrb-line` \
         (rtrb moving one u64 per 64-byte item: every item its own cache line, as every \
         manycore message is; the ceiling of any one-message-per-line design). Idle CPU: \
         process CPU time per second with an idle runtime and a sleeping main thread. \
         A median is over per-repetition means (total time / operations), so a \
         repetition in which a partner was descheduled weighs in fully; p50 and p99 \
         are over per-batch means (short batches), so p50 is the typical speed when \
         no stall hits, and p99 can come out below the median when a few long stalls \
         dominate the time of a repetition (a sign of a busy machine).\n\n",
    );
    md.push_str(&summary(&recs));
    let plots = plots(&recs);
    Section {
        name: BENCH.into(),
        title: "pingpong: cross-core round trip and throughput".into(),
        records: recs,
        markdown: md,
        plots,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of the timed rows, in the order a repetition runs them.
    fn timed_labels(idle: Vec<Idle>) -> Vec<String> {
        let o = PingpongOpts {
            secs: 0.1,
            reps: 1,
            idle,
        };
        rows(&o)
            .iter()
            .filter_map(|r| match r {
                Row::Timed { label, .. } => Some(label.clone()),
                Row::Once { .. } => None,
            })
            .collect()
    }

    #[test]
    fn spinning_rows_run_right_after_their_raw_baseline() {
        let labels = timed_labels(Idle::ALL.to_vec());
        let at = |l: &str| {
            labels
                .iter()
                .position(|x| x == l)
                .unwrap_or_else(|| panic!("no row {l} in {labels:?}"))
        };
        let raw = at("round trip: raw-atomic");
        assert_eq!(at("round trip: manycore-poll"), raw + 1, "{labels:?}");
        assert_eq!(at("round trip: manycore-hybrid"), raw + 2, "{labels:?}");
        // Every row that may sleep comes after them.
        for sleepy in [
            "round trip: raw-futex",
            "round trip: std-mpsc",
            "round trip: manycore-sleep",
        ] {
            assert!(at(sleepy) > raw + 2, "{sleepy} in {labels:?}");
        }
        let rtrb = at("throughput: rtrb");
        assert_eq!(at("throughput: manycore-poll"), rtrb + 1, "{labels:?}");
        assert_eq!(at("throughput: manycore-hybrid"), rtrb + 2, "{labels:?}");
        assert!(at("throughput: manycore-sleep") > rtrb + 2, "{labels:?}");
    }

    fn synthetic() -> Vec<Record> {
        vec![
            Record::new(BENCH, "round_trip", "raw-atomic", "median", 1000.0, "ns"),
            Record::new(BENCH, "round_trip", "raw-futex", "median", 20000.0, "ns"),
            Record::new(BENCH, "round_trip", "std-mpsc", "median", 30000.0, "ns"),
            Record::new(BENCH, "round_trip", "manycore-poll", "median", 1200.0, "ns"),
            Record::new(
                BENCH,
                "round_trip",
                "manycore-sleep",
                "median",
                30000.0,
                "ns",
            ),
            Record::new(BENCH, "throughput", "rtrb", "median", 20.0, "Mmsg/s"),
            Record::new(
                BENCH,
                "throughput",
                "manycore-poll",
                "median",
                15.0,
                "Mmsg/s",
            ),
            Record::new(BENCH, "idle_cpu", "manycore-sleep", "cpu", 0.5, "ms/s"),
        ]
    }

    #[test]
    fn ratio_records() {
        let r = ratios(&synthetic());
        let get = |imp: &str| r.iter().find(|x| x.impl_ == imp).map(|x| x.value);
        assert_eq!(get("manycore-poll/raw-atomic"), Some(1.2));
        assert_eq!(get("manycore-sleep/raw-futex"), Some(1.5));
        assert_eq!(get("manycore-poll/rtrb"), Some(0.75));
        assert_eq!(get("manycore-poll/std-mpsc"), Some(0.04));
        assert_eq!(get("manycore-hybrid/raw-atomic"), None);
        assert!(r.iter().all(|x| x.case == "ratio" && x.unit == "x"));
    }

    #[test]
    fn summary_lines() {
        let mut recs = synthetic();
        recs.extend(ratios(&recs));
        let s = summary(&recs);
        assert!(
            s.contains("manycore-poll / raw-atomic round trip: 1.20x (target <= 1.5) pass"),
            "{s}"
        );
        assert!(
            s.contains("manycore-sleep / raw-futex round trip: 1.50x (target <= 1.3) FAIL"),
            "{s}"
        );
        assert!(
            s.contains("manycore-hybrid / raw-atomic round trip: not measured"),
            "{s}"
        );
        assert!(
            s.contains("manycore-sleep idle CPU: 0.50 ms/s (target < 2) pass"),
            "{s}"
        );
    }

    #[test]
    fn plots_for_synthetic() {
        let mut recs = synthetic();
        recs.extend(ratios(&recs));
        let p = plots(&recs);
        let files: Vec<&str> = p.iter().map(|p| p.file.as_str()).collect();
        assert!(files.contains(&"pingpong_round_trip.svg"));
        assert!(files.contains(&"pingpong_throughput.svg"));
        assert!(files.contains(&"pingpong_idle_cpu.svg"));
        assert!(files.contains(&"pingpong_ratios.svg"));
    }

    #[test]
    fn idle_names() {
        for i in Idle::ALL {
            assert_eq!(Idle::from_name(i.name()), Some(i));
            assert!(i.impl_name().starts_with("manycore-"));
        }
        assert_eq!(Idle::from_name("spin"), None);
    }
}
