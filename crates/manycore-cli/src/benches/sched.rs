//! `manycore bench sched`: deadline misses of a periodic real-time task set
//! on one core with background load, under FIFO, static priority (rate
//! monotonic) and EDF scheduling.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use manycore::{current, sleep_until, Deadline, IdlePolicy, Priority, Runtime, Scheduler, TaskAttrs};

use crate::bench::{find, Bench, Options};
use crate::plot::per_case;
use crate::progress::Progress;
use crate::record::Record;

/// `manycore bench sched`.
pub const BENCH: Bench = Bench {
    name: "sched",
    about: "deadline misses under load: FIFO, priority, EDF",
    title: "Real-time schedulers: deadline misses",
    method: "A periodic task set on one core (periods 10/20/40 ms, costs 2/4/8 ms, implicit \
             deadlines: utilisation 0.6) with a standing backlog of eight 2 ms background \
             jobs (`overload`) or none, for --secs / 6 each (at least 0.2 s) under each \
             scheduler. Jobs run to completion; priorities are rate-monotonic.",
    secs: 12.0,
    expected_secs: |o| 6.0 * (run_time(o).as_secs_f64() + 0.11),
    run,
    notes,
    plots: |bench, recs| per_case(bench, recs, "miss-rate"),
    ..Bench::DEFAULT
};

/// How long each (case, scheduler) pair runs.
fn run_time(o: &Options) -> Duration {
    Duration::from_secs_f64((o.secs / 6.0).clamp(0.2, 20.0))
}

/// Background jobs kept queued in the overload case.
const BACKLOG: usize = 8;

/// One real-time task: released every `period`, runs `cost`, due `deadline` after release.
#[derive(Debug, Clone, Copy)]
struct RtTask {
    period: Duration,
    cost: Duration,
    deadline: Duration,
}

fn spin_for(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Runs the task set on one core under `sched` for `dur`, with a backlog of
/// background jobs of `bg_cost` (lowest priority, no deadline). Returns
/// (jobs released, deadlines missed).
fn sched_run(sched: Scheduler, tasks: &[RtTask], bg_cost: Duration, dur: Duration) -> (u64, u64) {
    let Ok(rt) = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .scheduler(sched)
        .build()
    else {
        return (0, 0);
    };
    let tasks = tasks.to_vec();
    let r = rt.core(0).spawn_async(async move {
        let released = Arc::new(AtomicU64::new(0));
        let missed = Arc::new(AtomicU64::new(0));
        let me = current().expect("on a core");
        let start = Instant::now() + Duration::from_millis(2);
        let end = start + dur;
        // Background: BACKLOG jobs always queued; each re-queues itself when done.
        fn background(me: manycore::Core, cost: Duration, end: Instant) {
            let again = me.clone();
            let _ = me.spawn_with(
                TaskAttrs {
                    priority: Priority(0),
                    deadline: None,
                },
                move || {
                    spin_for(cost);
                    if Instant::now() < end {
                        background(again, cost, end);
                    }
                },
            );
        }
        if !bg_cost.is_zero() {
            for _ in 0..BACKLOG {
                background(me.clone(), bg_cost, end);
            }
        }
        // Release times of every task, merged in time order.
        let mut next: Vec<Instant> = tasks.iter().map(|_| start).collect();
        // Rate-monotonic priorities: shorter period, higher priority.
        let prio: Vec<u32> = tasks
            .iter()
            .map(|t| 1_000_000 / (t.period.as_micros().max(1) as u32).max(1) + 1)
            .collect();
        loop {
            let (i, &at) = next
                .iter()
                .enumerate()
                .min_by_key(|(_, t)| **t)
                .expect("tasks");
            if at >= end {
                break;
            }
            sleep_until(at).await;
            let t = tasks[i];
            let due = at + t.deadline;
            released.fetch_add(1, Ordering::Relaxed);
            let m = missed.clone();
            let _ = me.spawn_with(
                TaskAttrs {
                    priority: Priority(prio[i]),
                    deadline: Some(Deadline(due)),
                },
                move || {
                    spin_for(t.cost);
                    if Instant::now() > due {
                        m.fetch_add(1, Ordering::Relaxed);
                    }
                },
            );
            next[i] = at + t.period;
        }
        // Let the last jobs finish, then count.
        sleep_until(end + Duration::from_millis(100)).await;
        (
            released.load(Ordering::Relaxed),
            missed.load(Ordering::Relaxed),
        )
    });
    let r = r
        .wait_timeout(dur + Duration::from_secs(30))
        .unwrap_or((0, 0));
    drop(rt);
    r
}

/// Deadline-miss rate of the task set under each scheduler, with and
/// without background load.
fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    let ms = |x: f64| Duration::from_micros((x * 1000.0) as u64);
    // Real-time utilisation 0.2 + 0.2 + 0.2 = 0.6; a backlog of background
    // jobs overloads the core, so only the scheduler decides who waits.
    let task = |period: f64, cost: f64| RtTask {
        period: ms(period),
        cost: ms(cost),
        deadline: ms(period),
    };
    let set = [task(10.0, 2.0), task(20.0, 4.0), task(40.0, 8.0)];
    let cases: [(&str, Duration); 2] = [("overload", ms(2.0)), ("no-background", Duration::ZERO)];
    let mut out = Vec::new();
    for (case, bg) in cases {
        for (name, s) in [
            ("fifo", Scheduler::Fifo),
            ("priority", Scheduler::Priority),
            ("edf", Scheduler::Edf),
        ] {
            progress.set_message(&format!("sched: {case}, {name}"));
            let (rel, miss) = sched_run(s, &set, bg, run_time(o));
            let rate = if rel == 0 {
                f64::NAN
            } else {
                100.0 * miss as f64 / rel as f64
            };
            let rec = |metric, v, unit| BENCH.record(case, name, metric, v, unit);
            out.push(rec("miss-rate", rate, "%"));
            out.push(rec("released", rel as f64, "jobs"));
        }
    }
    out
}

/// FIFO against EDF under overload.
fn notes(recs: &[Record]) -> String {
    let (Some(f), Some(e)) = (
        find(recs, "overload", "fifo", "miss-rate"),
        find(recs, "overload", "edf", "miss-rate"),
    ) else {
        return String::new();
    };
    format!(
        "- Overload: FIFO misses **{f:.1}%** of deadlines, EDF **{e:.1}%**: EDF misses {:.1} percentage points fewer{}.\n",
        f - e,
        if e > 0.0 { format!(" ({:.1}x fewer)", f / e) } else { String::new() }
    )
}
