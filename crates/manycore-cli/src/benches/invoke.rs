//! `manycore bench invoke`: remote method invocation (`Remote::invoke`)
//! against a plain `call`, the cost of a timeout that does not fire, and how
//! late a timeout fires in sleep mode; after the invocation experiments of
//! "Interrupt-Driven Cross-Core Invocation Mechanisms on the Intel SCC".
//! Every measurement is bounded in time; figures are medians over
//! repetitions.

use std::time::{Duration, Instant};

use manycore::{IdlePolicy, Runtime};

use crate::bench::{find, Bench, Cmp, Options, Target};
use crate::measure::cpu_count;
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::{median, p99};

/// `manycore bench invoke`.
pub const BENCH: Bench = Bench {
    name: "invoke",
    about: "remote invocation vs call; the cost and lateness of timeouts",
    title: "Remote method invocation and timeouts",
    method: "Core 0 of a 2-core runtime (poll, or hybrid on one CPU) runs round trips to \
             core 1 in batches of 200 for a third of --secs / --reps each: a plain \
             `call(..).wait()`, `Remote::invoke` on an object placed on core 1, and a call \
             with a 10 s timeout that does not fire; the three alternate, --reps times, and \
             each figure is the median over repetitions of the per-repetition medians. \
             `timeout-cost` is the timed call's median minus the plain call's; its `spread` \
             is half the range of the per-repetition differences, the noise that a cost \
             within it cannot be told from. Timeout lateness: in sleep mode, core 0 awaits \
             a 1 ms timeout on an invocation that answers after 20 ms; lateness is when the \
             timeout reached the caller minus its deadline.",
    secs: 6.0,
    repeats: true,
    expected_secs,
    run,
    targets,
    notes,
    ..Bench::DEFAULT
};

/// Seconds per batch loop of [`round_trips`] (at least 50 ms).
fn loop_secs(o: &Options) -> f64 {
    (o.secs / (3 * o.reps.max(1)) as f64).clamp(0.05, 30.0)
}

/// Timeouts the lateness part waits for.
fn lateness_samples(o: &Options) -> usize {
    if o.quick {
        200
    } else {
        1000
    }
}

/// Three loops per repetition, then the lateness part: about 1.1 ms per
/// timeout, at most its time bound, and 50 ms to shut down.
fn expected_secs(o: &Options) -> f64 {
    let lateness = (lateness_samples(o) as f64 * 1.1e-3).min(o.secs.clamp(1.0, 60.0));
    3.0 * o.reps as f64 * loop_secs(o) + lateness + 0.05
}

/// Round trips from core 0 to core 1: `f` makes one and waits; returns ns
/// per round trip, one figure per batch of 200.
fn round_trips(rt: &Runtime, secs: f64, f: impl Fn(u64) -> u64 + Send + 'static) -> Vec<f64> {
    let dur = Duration::from_secs_f64(secs);
    rt.core(0)
        .call(move || {
            for i in 0..2000 {
                f(i);
            }
            let mut per_batch = Vec::new();
            let t_end = Instant::now() + dur;
            let mut i = 0u64;
            while Instant::now() < t_end || per_batch.len() < 5 {
                let t0 = Instant::now();
                for _ in 0..200 {
                    i += 1;
                    std::hint::black_box(f(i));
                }
                per_batch.push(t0.elapsed().as_nanos() as f64 / 200.0);
            }
            per_batch
        })
        .wait()
        .unwrap_or_default()
}

/// `Remote::invoke` against plain `call`, and a call with a timeout that
/// does not fire, all core 0 -> core 1, in one runtime.
fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    let mut out = Vec::new();
    let policy = if cpu_count() >= 2 {
        IdlePolicy::Poll
    } else {
        IdlePolicy::default()
    };
    let Ok(rt) = Runtime::builder().cores(2).idle(policy).build() else {
        return out;
    };
    let secs = loop_secs(o);
    let c1 = rt.core(1).clone();
    let Ok(obj) = c1.place(0u64) else { return out };
    let (mut call, mut invoke, mut timeout) = (Vec::new(), Vec::new(), Vec::new());
    let median_of = |v: Vec<f64>| median(&v).unwrap_or(f64::NAN);
    for rep in 0..o.reps {
        progress.set_message(&format!("invoke: round trips ({}/{})", rep + 1, o.reps));
        let c = c1.clone();
        call.push(median_of(round_trips(&rt, secs, move |x| {
            c.call(move || x + 1).wait().unwrap_or(0)
        })));
        let r = obj.clone();
        invoke.push(median_of(round_trips(&rt, secs, move |x| {
            r.invoke(move |v| *v + x).wait().unwrap_or(0)
        })));
        let c = c1.clone();
        timeout.push(median_of(round_trips(&rt, secs, move |x| {
            c.call(move || x + 1)
                .timeout(Duration::from_secs(10))
                .wait()
                .unwrap_or(0)
        })));
    }
    let diffs: Vec<f64> = timeout.iter().zip(&call).map(|(t, c)| t - c).collect();
    let (lo, hi) = diffs
        .iter()
        .filter(|d| d.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), d| (l.min(*d), h.max(*d)));
    let (mc, mi, mt) = (median_of(call), median_of(invoke), median_of(timeout));
    out.extend([
        BENCH.record("round_trip", "call", "median", mc, "ns"),
        BENCH.record("round_trip", "remote-invoke", "median", mi, "ns"),
        BENCH.record("round_trip", "call+timeout", "median", mt, "ns"),
        BENCH.record("ratio", "remote-invoke/call", "ratio", mi / mc, "x"),
        BENCH.record("ratio", "timeout-cost", "median", mt - mc, "ns"),
        BENCH.record("ratio", "timeout-cost", "spread", (hi - lo) / 2.0, "ns"),
    ]);
    drop(rt);
    progress.set_message("invoke: timeout lateness");
    out.extend(timeout_lateness(o));
    out
}

/// How late a timeout fires, in sleep mode: core 0 awaits a 1 ms timeout on
/// an invocation whose result comes only after 20 ms (an async sleep on core
/// 1, so core 1 is not blocked). Lateness = when the timeout reached the
/// caller minus its deadline.
fn timeout_lateness(o: &Options) -> Vec<Record> {
    let Ok(rt) = Runtime::builder().cores(2).idle(IdlePolicy::Sleep).build() else {
        return Vec::new();
    };
    let c1 = rt.core(1).clone();
    let n = lateness_samples(o);
    let bound = Duration::from_secs_f64(o.secs.clamp(1.0, 60.0));
    let samples = rt
        .core(0)
        .spawn_async(async move {
            let mut late = Vec::new();
            let t_end = Instant::now() + bound;
            while late.len() < n && Instant::now() < t_end {
                let deadline = Instant::now() + Duration::from_millis(1);
                let r = c1
                    .spawn_async(async { manycore::sleep(Duration::from_millis(20)).await })
                    .deadline(deadline)
                    .await;
                let now = Instant::now();
                if r == Err(manycore::InvokeError::Timeout) {
                    late.push(now.saturating_duration_since(deadline).as_nanos() as f64 / 1000.0);
                }
            }
            late
        })
        .wait()
        .unwrap_or_default();
    [("median", median(&samples)), ("p99", p99(&samples))]
        .into_iter()
        .filter_map(|(metric, v)| Some(BENCH.record("timeout-lateness-sleep", "manycore", metric, v?, "us")))
        .collect()
}

fn targets(recs: &[Record]) -> Vec<Target> {
    vec![
        Target::new(
            "remote-invoke / call round trip",
            find(recs, "ratio", "remote-invoke/call", "ratio"),
            "x",
            Cmp::AtMost,
            1.1,
        ),
        Target::new(
            "timeout lateness in sleep mode, p99",
            find(recs, "timeout-lateness-sleep", "manycore", "p99"),
            "us",
            Cmp::AtMost,
            1000.0,
        ),
    ]
}

/// The cost of a timeout that does not fire, or that it is within noise.
fn notes(recs: &[Record]) -> String {
    let Some(cost) = find(recs, "ratio", "timeout-cost", "median") else {
        return String::new();
    };
    match find(recs, "ratio", "timeout-cost", "spread") {
        Some(noise) if cost.abs() <= noise => format!(
            "- A timeout that does not fire costs nothing measurable: within noise (±{noise:.0} ns).\n"
        ),
        Some(noise) => {
            format!("- A timeout that does not fire adds **{cost:.0} ns** per call (noise ±{noise:.0} ns).\n")
        }
        None => format!("- A timeout that does not fire adds **{cost:.0} ns** per call.\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_not_a_cost() {
        let cost = |c: f64, s: f64| {
            notes(&[
                BENCH.record("ratio", "timeout-cost", "median", c, "ns"),
                BENCH.record("ratio", "timeout-cost", "spread", s, "ns"),
            ])
        };
        assert_eq!(
            cost(-6.0, 9.4),
            "- A timeout that does not fire costs nothing measurable: within noise (±9 ns).\n"
        );
        assert!(cost(40.0, 9.0).contains("adds **40 ns** per call (noise ±9 ns)"));
        assert_eq!(notes(&[]), "");
    }
}
