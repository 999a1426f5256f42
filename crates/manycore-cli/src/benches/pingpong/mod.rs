//! `manycore bench pingpong`: the cross-core round trip of
//! `core1.call(|| x + 1).wait()` and one-way `spawn` throughput, side by side
//! with the same operations done by a raw atomic ping-pong (the physical
//! limit), a raw futex ping-pong, `std::sync::mpsc`, `crossbeam-channel` and
//! `rtrb`, plus the CPU time an idle runtime burns per idle policy. After the
//! ping-pong experiments (sections 4.2-4.3) of "Barrelfish on the Intel
//! Single-chip Cloud Computer" and the poll-versus-halt round trips (section
//! V) of "Interrupt-Driven Cross-Core Invocation Mechanisms on the Intel SCC".
//!
//! Records (bench `pingpong`):
//!
//! | case | metric | unit | meaning |
//! |---|---|---|---|
//! | `round_trip` | `median`, `p50`, `p99` | ns | one round trip: median over repetitions; p50 and p99 of per-batch means |
//! | `throughput` | `median` | Mmsg/s | one-way messages per second, median over repetitions |
//! | `idle_cpu` | `cpu` | ms/s | process CPU time per second of wall time with an idle 2-core runtime |
//! | `ratio` | `round_trip`, `throughput` | x | impl `a/b`: a's median over b's, from this same run |

mod peers;
pub mod rt;

use std::time::Duration;

use crate::bench::{find, ratio, Bench, Cmp, Opt, Options, Target};
use crate::measure::{cpu_pair, idle_cpu_ms_per_s, Plan, Samples};
use crate::plot::{pick, Plot};
use crate::progress::Progress;
use crate::record::Record;

/// `manycore bench pingpong`.
pub const BENCH: Bench = Bench {
    name: "pingpong",
    about: "cross-core round trip, throughput, idle CPU: manycore vs peers",
    title: "pingpong: cross-core round trip and throughput",
    method: METHOD,
    secs: 1.0,
    repeats: true,
    options: &[Opt {
        flag: "--idle",
        value: Some("LIST"),
        help: "manycore idle policies: poll, sleep, hybrid or all\n(comma-separated) [default: all]",
        parse: crate::idle::parse_list,
    }],
    expected_secs,
    run,
    targets,
    notes,
    plots,
    ..Bench::DEFAULT
};

/// How it measures (the help and the report).
const METHOD: &str = "\
Rows (impl): raw-atomic and raw-futex (two pinned threads, the physical
limits), std-mpsc and crossbeam-channel (echo thread), rtrb (one-way SPSC of
u64), rtrb-line (the same with one u64 per 64-byte item: every item its own
cache line, as every manycore message is; the ceiling of any
one-message-per-line design), manycore-poll / manycore-sleep /
manycore-hybrid (a 2-core runtime: core 0 calls `core1.call(move || x +
1).wait()` in a loop, or sends fire-and-forget `spawn`s of a u64 for
throughput, inside one `batch_spawns` scope, which publishes them in
batches, or, in the rows manycore-*-plain, outside any scope, each spawn
published as it is made; the whole loop runs inside one call on core 0). Peer rows run on
two threads pinned to the first two CPUs of the original CPU set. Cases:
round_trip (median, p50, p99, ns), throughput (Mmsg/s), idle_cpu (ms of CPU
per s), ratio (the ratios the targets judge).

Each case runs about --secs seconds: --reps repetitions, each after its own
warm-up and calibration of a batch size, with the repetitions of all timed
rows interleaved (repetition 1 of every row, then repetition 2, ...): on a
shared VM the cost of a line transfer moves with the host's placement of the
vCPUs, and every row then sees the same placements. Within a repetition the
spinning rows come right after their raw baseline and before any row that
sleeps (a vCPU that halts may come back on another physical CPU, with
another cost of a line transfer). A median is over per-repetition means
(total time / operations), so a repetition in which a partner was
descheduled weighs in fully; p50 and p99 are over per-batch means (short
batches), so p50 is the typical speed when no stall hits, and p99 can come
out below the median when a few long stalls dominate the time of a
repetition (a sign of a busy machine).

Idle CPU: a fresh runtime settles for 0.2 s, then process CPU time is read
over min(--secs, 1) s (at least 0.1 s) while the main thread sleeps. Every
wait for a partner gives up after 5 s (the row is then left out, with a
message on stderr).";

pub use crate::idle::Idle;
use crate::idle::chosen as idle_policies;

/// How long the idle-CPU measurement lets a fresh runtime settle.
const IDLE_SETTLE: Duration = Duration::from_millis(200);

/// The idle-CPU window: 1 s normally, `secs` if shorter (but at least 0.1 s).
fn idle_window(secs: f64) -> Duration {
    Duration::from_secs_f64(secs.clamp(0.1, 1.0))
}

/// The expected time of a run: every timed row takes its budget (the
/// throughput rows 20% more, for calibrating their longer batches), plus
/// about 10 ms per repetition to start threads or a runtime; every idle row
/// its settling time and window.
fn expected_secs(o: &Options) -> f64 {
    let k = idle_policies(o).len() as f64;
    let per_rep = 0.01 * o.reps as f64;
    let (latency_rows, throughput_rows) = (4.0 + k, 3.0 + 2.0 * k);
    latency_rows * (o.secs + per_rep)
        + throughput_rows * (1.2 * o.secs + per_rep)
        + (1.0 + k) * (IDLE_SETTLE + idle_window(o.secs)).as_secs_f64()
}

/// The impl name of the plain spawn stream (each spawn published as it is
/// made, outside `batch_spawns`) under policy `i`.
fn plain_name(i: Idle) -> &'static str {
    match i {
        Idle::Poll => "manycore-poll-plain",
        Idle::Sleep => "manycore-sleep-plain",
        Idle::Hybrid => "manycore-hybrid-plain",
    }
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
    [
        ("median", s.median_ns()),
        ("p50", s.p50_ns()),
        ("p99", s.p99_ns()),
    ]
    .into_iter()
    .filter_map(|(metric, v)| Some(BENCH.record("round_trip", imp, metric, v?, "ns")))
    .collect()
}

fn throughput_records(imp: &str, s: &Samples) -> Vec<Record> {
    s.median_mops()
        .map(|m| vec![BENCH.record("throughput", imp, "median", m, "Mmsg/s")])
        .unwrap_or_default()
}

/// What the timed rows of one case share.
#[derive(Clone, Copy)]
struct Case {
    /// "round trip" or "throughput" (for the progress bar).
    name: &'static str,
    plan: Plan,
    records: fn(&str, &Samples) -> Vec<Record>,
}

/// A timed row of case `c` for impl `imp`.
fn timed(
    c: Case,
    imp: &'static str,
    f: impl FnMut(Plan) -> Result<Samples, String> + 'static,
) -> Row {
    Row::Timed {
        label: format!("{}: {imp}", c.name),
        imp,
        plan: c.plan,
        measure: Box::new(f),
        records: c.records,
    }
}

fn rows(o: &Options) -> Vec<Row> {
    let idle = idle_policies(o);
    let lat = Case {
        name: "round trip",
        plan: Plan::latency(o.secs, o.reps),
        records: latency_records,
    };
    let thr = Case {
        name: "throughput",
        plan: Plan::throughput(o.secs, o.reps),
        records: throughput_records,
    };
    // The spinning rows right after their raw baseline, the sleeping ones
    // after them (see METHOD: a vCPU that halts may come back elsewhere).
    let (spinning, sleeping): (Vec<Idle>, Vec<Idle>) =
        idle.iter().partition(|i| !matches!(i, Idle::Sleep));
    let round_trip = |i: Idle| timed(lat, i.impl_name(), move |p| rt::round_trip(i, p));
    let stream = |i: Idle| timed(thr, i.impl_name(), move |p| rt::spawn_stream(i, false, p));
    let plain = |i: Idle| timed(thr, plain_name(i), move |p| rt::spawn_stream(i, true, p));
    let mut v = vec![timed(lat, "raw-atomic", peers::raw_atomic)];
    v.extend(spinning.iter().map(|&i| round_trip(i)));
    v.push(timed(lat, "crossbeam-channel", peers::crossbeam));
    v.push(timed(lat, "raw-futex", peers::raw_futex));
    v.push(timed(lat, "std-mpsc", peers::std_mpsc));
    v.extend(sleeping.iter().map(|&i| round_trip(i)));
    // The same order for the streams: the spinning rows right after rtrb.
    v.push(timed(thr, "rtrb", peers::rtrb_stream));
    v.extend(spinning.iter().map(|&i| stream(i)));
    v.extend(spinning.iter().map(|&i| plain(i)));
    v.push(timed(thr, "rtrb-line", peers::rtrb_line_stream));
    v.push(timed(thr, "crossbeam-channel", peers::crossbeam_stream));
    v.extend(sleeping.iter().map(|&i| stream(i)));
    v.extend(sleeping.iter().map(|&i| plain(i)));
    // Idle CPU: no runtime at all, then each policy.
    let window = idle_window(o.secs);
    for i in std::iter::once(None).chain(idle.into_iter().map(Some)) {
        let imp = i.map_or("no-runtime", Idle::impl_name);
        v.push(Row::Once {
            label: format!("idle cpu: {}", i.map_or("no runtime", Idle::impl_name)),
            run: Box::new(move || {
                let ms = idle_cpu_ms_per_s(IDLE_SETTLE, window, || i.map(rt::idle_runtime).transpose())?;
                Ok(vec![BENCH.record("idle_cpu", imp, "cpu", ms, "ms/s")])
            }),
        });
    }
    v
}

/// Runs the benchmark, the repetitions of the timed rows interleaved (see
/// METHOD); failures of single rows go to stderr (through the progress bar)
/// and leave that row out.
fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    if cpu_pair().is_none() {
        progress
            .println("pingpong: fewer than 2 CPUs in the original CPU set: threads are not pinned");
    }
    let mut rows = rows(o);
    let reps = o.reps.max(1);
    let mut out = Vec::new();
    // Timed rows, interleaved; `None` once a row has failed.
    let mut acc: Vec<Option<Samples>> = rows
        .iter()
        .map(|r| matches!(r, Row::Timed { .. }).then(Samples::default))
        .collect();
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
            }
        }
    }
    let ratios = ratios(&out);
    out.extend(ratios);
    out
}

/// The ratio targets: (a, b, case, comparison, target).
pub const RATIO_TARGETS: &[(&str, &str, &str, Cmp, f64)] = &[
    ("manycore-poll", "raw-atomic", "round_trip", Cmp::AtMost, 1.5),
    ("manycore-sleep", "raw-futex", "round_trip", Cmp::AtMost, 1.3),
    ("manycore-hybrid", "raw-atomic", "round_trip", Cmp::AtMost, 1.5),
    ("manycore-poll", "std-mpsc", "round_trip", Cmp::AtMost, 0.5),
    ("manycore-poll", "crossbeam-channel", "round_trip", Cmp::AtMost, 0.5),
    ("manycore-poll", "rtrb", "throughput", Cmp::AtLeast, 0.5),
    ("manycore-sleep", "rtrb", "throughput", Cmp::AtLeast, 0.5),
    ("manycore-hybrid", "rtrb", "throughput", Cmp::AtLeast, 0.5),
];

/// Idle CPU targets: (impl, below this many ms/s).
pub const IDLE_TARGETS: &[(&str, f64)] = &[("manycore-sleep", 2.0), ("manycore-hybrid", 2.0)];

/// The ratio records (case `ratio`, impl `a/b`, metric = the case compared)
/// for every ratio target whose two medians were measured.
pub fn ratios(recs: &[Record]) -> Vec<Record> {
    RATIO_TARGETS
        .iter()
        .filter_map(|&(a, b, case, _, _)| {
            let v = ratio(find(recs, case, a, "median"), find(recs, case, b, "median"))?;
            Some(BENCH.record("ratio", &format!("{a}/{b}"), case, v, "x"))
        })
        .collect()
}

/// The targets: the ratios (each with the same ratio of per-batch p50s, for
/// judging a noisy run), then the idle CPU.
fn targets(recs: &[Record]) -> Vec<Target> {
    let mut v: Vec<Target> = RATIO_TARGETS
        .iter()
        .map(|&(a, b, case, cmp, limit)| {
            let mut t = Target::new(
                format!("{a} / {b} {}", case.replace('_', " ")),
                find(recs, "ratio", &format!("{a}/{b}"), case),
                "x",
                cmp,
                limit,
            );
            if let Some(p) = ratio(find(recs, case, a, "p50"), find(recs, case, b, "p50")) {
                t.note = format!(" [per-batch p50: {p:.2}x]");
            }
            t
        })
        .collect();
    v.extend(IDLE_TARGETS.iter().map(|&(imp, limit)| {
        let cpu = find(recs, "idle_cpu", imp, "cpu");
        Target::new(format!("{imp} idle CPU"), cpu, "ms/s", Cmp::Below, limit)
    }));
    v
}

/// Not targets: the plain spawn streams against rtrb, and how close the
/// one-message-per-line design is to its own ceiling (rtrb moving one
/// 64-byte item per message).
fn notes(recs: &[Record]) -> String {
    let plain: String = Idle::ALL
        .iter()
        .filter_map(|&i| {
            let r = ratio(
                find(recs, "throughput", plain_name(i), "median"),
                find(recs, "throughput", "rtrb", "median"),
            )?;
            Some(format!(
                "- (for reference) {} / rtrb throughput: {r:.2}x (each spawn published as it is made)\n",
                plain_name(i)
            ))
        })
        .collect();
    let Some(line) = find(recs, "throughput", "rtrb-line", "median").filter(|v| *v > 0.0) else {
        return plain;
    };
    plain
        + &Idle::ALL
        .iter()
        .filter_map(|i| {
            let v = find(recs, "throughput", i.impl_name(), "median")?;
            Some(format!(
                "- (for reference) {} / rtrb-line throughput: {:.2}x (one cache line per message in both)\n",
                i.impl_name(),
                v / line
            ))
        })
        .collect::<String>()
}

/// The plots of a pingpong record set (the framework adds the target charts).
fn plots(bench: &Bench, recs: &[Record]) -> Vec<Plot> {
    // (case, metric, file, title, axis, log: always, never, or if it spans decades)
    let charts = [
        ("round_trip", "median", "round_trip", "Round trip, median (log scale)", "ns per round trip", Some(true)),
        ("round_trip", "p99", "round_trip_p99", "Round trip, p99 (log scale)", "ns", Some(true)),
        ("throughput", "median", "throughput", "One-way throughput, median", "Mmsg/s", None),
        ("idle_cpu", "cpu", "idle_cpu", "CPU burnt by an idle 2-core runtime", "ms of CPU per s", Some(false)),
    ];
    charts
        .into_iter()
        .filter_map(|(case, metric, file, title, axis, log)| {
            let bars = pick(recs, case, metric);
            let stem = format!("{}_{file}", bench.name);
            (!bars.is_empty()).then(|| match log {
                Some(log) => Plot::bars(&stem, title, axis, bars, log),
                None => Plot::bars_auto(&stem, title, axis, bars),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of the timed rows, in the order a repetition runs them.
    fn timed_labels(idle: Vec<Idle>) -> Vec<String> {
        let mut o = Options::defaults(&BENCH, true);
        o.extra = vec![("--idle", idle.iter().map(|i| i.name().to_string()).collect())];
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
            BENCH.record("round_trip", "raw-atomic", "median", 1000.0, "ns"),
            BENCH.record("round_trip", "raw-futex", "median", 20000.0, "ns"),
            BENCH.record("round_trip", "std-mpsc", "median", 30000.0, "ns"),
            BENCH.record("round_trip", "manycore-poll", "median", 1200.0, "ns"),
            BENCH.record(
                "round_trip",
                "manycore-sleep",
                "median",
                30000.0,
                "ns",
            ),
            BENCH.record("throughput", "rtrb", "median", 20.0, "Mmsg/s"),
            BENCH.record(
                "throughput",
                "manycore-poll",
                "median",
                15.0,
                "Mmsg/s",
            ),
            BENCH.record("idle_cpu", "manycore-sleep", "cpu", 0.5, "ms/s"),
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
        let s = BENCH.summary(&recs);
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
        let p = BENCH.all_plots(&recs);
        let files: Vec<&str> = p.iter().map(|p| p.file.as_str()).collect();
        assert!(files.contains(&"pingpong_round_trip.svg"));
        assert!(files.contains(&"pingpong_throughput.svg"));
        assert!(files.contains(&"pingpong_idle_cpu.svg"));
        // Round-trip ratios (lower is better) and throughput ratios (higher
        // is better) on charts of their own, each bar with its target.
        assert!(files.contains(&"pingpong_targets_lower.svg"));
        assert!(files.contains(&"pingpong_targets_higher.svg"));
        assert!(files.contains(&"pingpong_targets_ms_s_lower.svg"));
        for chart in p.iter().filter(|p| p.file.contains("_targets_")) {
            let crate::plot::PlotKind::Bars { bars, targets, .. } = &chart.kind else {
                panic!("{}: bars", chart.file)
            };
            assert_eq!(bars.len(), targets.len(), "{}", chart.file);
            assert!(targets.iter().all(Option::is_some), "{}", chart.file);
        }
    }

    #[test]
    fn idle_option() {
        let mut o = Options::defaults(&BENCH, false);
        assert_eq!(idle_policies(&o), Idle::ALL);
        o.extra = vec![("--idle", vec!["hybrid".into()])];
        assert_eq!(idle_policies(&o), [Idle::Hybrid]);
        // Fewer policies, fewer rows: less expected time.
        assert!(expected_secs(&o) < expected_secs(&Options::defaults(&BENCH, false)));
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
