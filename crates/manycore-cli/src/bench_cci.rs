//! Benchmarks of the cross-core invocation model (issue: invocations,
//! complete): `reduce` (collective completion time against group size, tree
//! and flat, the paper's Figure 4), `invoke` (remote method invocation
//! against a plain call; the cost of a timeout that does not fire), and
//! `sched` (deadline misses of a periodic real-time task set under FIFO,
//! priority and EDF with background load). Every measurement is bounded in
//! time; figures are medians over repetitions.

use crate::record::Record;
use crate::stats::median;
use manycore::{
    current, sleep_until, Deadline, Group, IdlePolicy, Priority, Runtime, Scheduler, TaskAttrs,
    Topology,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options shared by the three benchmarks.
#[derive(Debug, Clone)]
pub struct CciBenchOpts {
    /// Seconds per case (a bound; cases stop early when done).
    pub secs: f64,
    /// Small sizes, for `manycore report`.
    pub quick: bool,
}

fn cpus() -> usize {
    manycore::sync::cpu::original().len()
}

/// `bench reduce`: completion time of `reduce` over 1..48 members, one member
/// per core of a runtime with as many cores (oversubscribed), tree (fan-out
/// 4) and flat, for the idle policies; plus the hops on the critical path.
pub fn run_reduce(o: &CciBenchOpts) -> Vec<Record> {
    let sizes: &[usize] = if o.quick {
        &[1, 2, 4, 8, 16, 48]
    } else {
        &[1, 2, 4, 8, 16, 32, 48]
    };
    let mut out = Vec::new();
    let per_case = Duration::from_secs_f64((o.secs / (sizes.len() * 4) as f64).clamp(0.05, 5.0));
    for &n in sizes {
        let mut policies = vec![
            ("sleep", IdlePolicy::Sleep),
            ("hybrid", IdlePolicy::default()),
        ];
        // Poll needs a CPU per core (ARCHITECTURE: oversubscribed cores must sleep).
        if n <= cpus() {
            policies.insert(0, ("poll", IdlePolicy::Poll));
        }
        for (pname, policy) in policies {
            let Ok(rt) = Runtime::builder().cores(n).idle(policy).build() else {
                continue;
            };
            let members: Vec<_> = (0..n)
                .filter_map(|i| rt.core(i).place(i as u64).ok())
                .collect();
            if members.len() != n {
                continue;
            }
            for (tname, topo) in [
                ("tree", Topology::Tree { fanout: 4 }),
                ("flat", Topology::Flat),
            ] {
                let g = Group::new(members.clone()).with_topology(topo);
                let g2 = g.clone();
                // Issued from core 0 (the root's core), as in the paper.
                let r = rt
                    .core(0)
                    .call(move || {
                        let mut samples = Vec::new();
                        let mut hops = 0;
                        let t_end = Instant::now() + per_case;
                        for _ in 0..20 {
                            let _ = g2.reduce(|x| *x, |a, b| a + b).wait();
                        }
                        while Instant::now() < t_end || samples.len() < 5 {
                            let t0 = Instant::now();
                            let (_, h) = g2
                                .reduce_measured(|x| *x, |a, b| a + b)
                                .wait()
                                .unwrap_or((0, 0));
                            samples.push(t0.elapsed().as_nanos() as f64 / 1000.0);
                            hops = h;
                            if samples.len() >= 20_000 {
                                break;
                            }
                        }
                        (samples, hops)
                    })
                    .wait();
                let Ok((samples, hops)) = r else { continue };
                let case = format!("{n}-members");
                let imp = format!("manycore-{tname}-{pname}");
                if let Some(m) = median(&samples) {
                    out.push(Record::new("reduce", &case, &imp, "median", m, "us"));
                }
                if let Some(p) = crate::stats::p99(&samples) {
                    out.push(Record::new("reduce", &case, &imp, "p99", p, "us"));
                }
                out.push(Record::new(
                    "reduce",
                    &case,
                    &imp,
                    "hops",
                    hops as f64,
                    "hops",
                ));
                if tname == "tree" {
                    out.push(Record::new(
                        "reduce",
                        &case,
                        &imp,
                        "depth-bound",
                        (n as f64).log(4.0).ceil() + 1.0,
                        "hops",
                    ));
                }
                drop(g);
            }
        }
    }
    out
}

/// Round trips from core 0 to core 1: `f` issues one and waits.
fn round_trips(rt: &Runtime, secs: f64, f: impl Fn(u64) -> u64 + Send + 'static) -> Vec<f64> {
    let dur = Duration::from_secs_f64(secs.clamp(0.05, 30.0));
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

/// `bench invoke`: `Remote::invoke` against plain `call`, and a call with a
/// timeout that does not fire, all core 0 -> core 1, in one runtime.
pub fn run_invoke(o: &CciBenchOpts) -> Vec<Record> {
    let mut out = Vec::new();
    let policy = if cpus() >= 2 {
        IdlePolicy::Poll
    } else {
        IdlePolicy::default()
    };
    let Ok(rt) = Runtime::builder().cores(2).idle(policy).build() else {
        return out;
    };
    let reps = if o.quick { 3 } else { 5 };
    let secs = o.secs / (3 * reps) as f64;
    let c1 = rt.core(1).clone();
    let Ok(obj) = c1.place(0u64) else { return out };
    let mut call = Vec::new();
    let mut invoke = Vec::new();
    let mut timeout = Vec::new();
    for _ in 0..reps {
        let c = c1.clone();
        call.push(
            median(&round_trips(&rt, secs, move |x| {
                c.call(move || x + 1).wait().unwrap_or(0)
            }))
            .unwrap_or(f64::NAN),
        );
        let r = obj.clone();
        invoke.push(
            median(&round_trips(&rt, secs, move |x| {
                r.invoke(move |v| *v + x).wait().unwrap_or(0)
            }))
            .unwrap_or(f64::NAN),
        );
        let c = c1.clone();
        timeout.push(
            median(&round_trips(&rt, secs, move |x| {
                c.call(move || x + 1)
                    .timeout(Duration::from_secs(10))
                    .wait()
                    .unwrap_or(0)
            }))
            .unwrap_or(f64::NAN),
        );
    }
    let (mc, mi, mt) = (
        median(&call).unwrap_or(f64::NAN),
        median(&invoke).unwrap_or(f64::NAN),
        median(&timeout).unwrap_or(f64::NAN),
    );
    out.push(Record::new(
        "invoke",
        "round_trip",
        "call",
        "median",
        mc,
        "ns",
    ));
    out.push(Record::new(
        "invoke",
        "round_trip",
        "remote-invoke",
        "median",
        mi,
        "ns",
    ));
    out.push(Record::new(
        "invoke",
        "round_trip",
        "call+timeout",
        "median",
        mt,
        "ns",
    ));
    out.push(Record::new(
        "invoke",
        "ratio",
        "remote-invoke/call",
        "ratio",
        mi / mc,
        "x",
    ));
    out.push(Record::new(
        "invoke",
        "ratio",
        "timeout-cost",
        "median",
        mt - mc,
        "ns",
    ));
    drop(rt);
    out.extend(timeout_lateness(o));
    out
}

/// How late a timeout fires, in sleep mode: core 0 awaits a 1 ms timeout on
/// an invocation whose result comes only after 20 ms (an async sleep on core
/// 1, so core 1 is not blocked). Lateness = when the timeout reached the
/// caller minus its deadline.
fn timeout_lateness(o: &CciBenchOpts) -> Vec<Record> {
    let Ok(rt) = Runtime::builder().cores(2).idle(IdlePolicy::Sleep).build() else {
        return Vec::new();
    };
    let c1 = rt.core(1).clone();
    let n = if o.quick { 200 } else { 1000 };
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
    let mut out = Vec::new();
    if let Some(m) = median(&samples) {
        out.push(Record::new(
            "invoke",
            "timeout-lateness-sleep",
            "manycore",
            "median",
            m,
            "us",
        ));
    }
    if let Some(p) = crate::stats::p99(&samples) {
        out.push(Record::new(
            "invoke",
            "timeout-lateness-sleep",
            "manycore",
            "p99",
            p,
            "us",
        ));
    }
    out
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

/// `bench sched`: deadline-miss rate of a periodic task set on one core with
/// background load, under FIFO, static priority (rate monotonic) and EDF.
pub fn run_sched(o: &CciBenchOpts) -> Vec<Record> {
    let ms = |x: f64| Duration::from_micros((x * 1000.0) as u64);
    // Real-time utilisation 0.2 + 0.2 + 0.2 = 0.6; a backlog of background
    // jobs overloads the core, so only the scheduler decides who waits.
    let set = [
        RtTask {
            period: ms(10.0),
            cost: ms(2.0),
            deadline: ms(10.0),
        },
        RtTask {
            period: ms(20.0),
            cost: ms(4.0),
            deadline: ms(20.0),
        },
        RtTask {
            period: ms(40.0),
            cost: ms(8.0),
            deadline: ms(40.0),
        },
    ];
    let cases: [(&str, Duration); 2] = [("overload", ms(2.0)), ("no-background", Duration::ZERO)];
    let dur = Duration::from_secs_f64((o.secs / 6.0).clamp(0.2, 20.0));
    let mut out = Vec::new();
    for (case, bg) in cases {
        for (name, s) in [
            ("fifo", Scheduler::Fifo),
            ("priority", Scheduler::Priority),
            ("edf", Scheduler::Edf),
        ] {
            let (rel, miss) = sched_run(s, &set, bg, dur);
            let rate = if rel == 0 {
                f64::NAN
            } else {
                100.0 * miss as f64 / rel as f64
            };
            out.push(Record::new("sched", case, name, "miss-rate", rate, "%"));
            out.push(Record::new(
                "sched", case, name, "released", rel as f64, "jobs",
            ));
        }
    }
    out
}

use crate::plot::Plot;
use crate::report::{Section, SectionCtx};

fn opts(ctx: &SectionCtx) -> CciBenchOpts {
    CciBenchOpts {
        secs: ctx.secs,
        quick: ctx.quick,
    }
}

fn find(rs: &[Record], case: &str, imp: &str, metric: &str) -> Option<f64> {
    rs.iter()
        .find(|r| r.case == case && r.impl_ == imp && r.metric == metric)
        .map(|r| r.value)
}

/// The `reduce` section: completion time against members, and hops.
pub fn reduce_section(ctx: &SectionCtx) -> Section {
    let records = run_reduce(&opts(ctx));
    let mut sec = Section::auto(
        "reduce",
        "Collective reduce over multicast trees (Figure 4)",
        "",
        Vec::new(),
    );
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in records.iter().filter(|r| r.metric == "median") {
        let n: f64 = r.case.trim_end_matches("-members").parse().unwrap_or(0.0);
        match series.iter_mut().find(|s| s.0 == r.impl_) {
            Some(s) => s.1.push((n, r.value)),
            None => series.push((r.impl_.clone(), vec![(n, r.value)])),
        }
    }
    sec.plots.push(Plot::lines(
        "reduce",
        "reduce completion time",
        "members (one per core)",
        "median (us)",
        series,
        true,
        true,
    ));
    let mut md = String::from(
        "Completion time of `reduce` issued on core 0 over n members, one per core of an n-core runtime \
         (oversubscribed past the CPUs, so poll only up to the CPU count). `hops` is the depth the collective \
         actually reached (carried in its messages); the bound is ceil(log4 n) + 1.\n\n",
    );
    if let (Some(h), Some(b)) = (
        find(&records, "48-members", "manycore-tree-sleep", "hops"),
        find(&records, "48-members", "manycore-tree-sleep", "depth-bound"),
    ) {
        md.push_str(&format!(
            "- 48 members, tree: **{h} hops** on the critical path (bound {b}): {}.\n",
            if h <= b {
                "within the bound"
            } else {
                "OVER the bound"
            }
        ));
    }
    sec.records = records;
    sec.markdown = md;
    sec
}

/// The `invoke` section: RMI against call; the cost of an unfired timeout.
pub fn invoke_section(ctx: &SectionCtx) -> Section {
    let records = run_invoke(&opts(ctx));
    let mut md = String::new();
    if let Some(r) = find(&records, "ratio", "remote-invoke/call", "ratio") {
        md.push_str(&format!(
            "- `Remote::invoke` round trip = **{r:.3}x** a plain `call` (target at most 1.1x).\n"
        ));
    }
    if let Some(c) = find(&records, "ratio", "timeout-cost", "median") {
        md.push_str(&format!(
            "- A timeout that does not fire adds **{c:.0} ns** per call.\n"
        ));
    }
    if let Some(p) = find(&records, "timeout-lateness-sleep", "manycore", "p99") {
        md.push_str(&format!(
            "- In sleep mode a timeout fires **{p:.0} us** after its deadline at p99 (target: within 1000 us).\n"
        ));
    }
    let mut sec = Section::auto(
        "invoke",
        "Remote method invocation and timeouts",
        "",
        records,
    );
    sec.markdown = md;
    sec
}

/// The `sched` section: deadline misses under FIFO, priority, EDF.
pub fn sched_section(ctx: &SectionCtx) -> Section {
    let records = run_sched(&opts(ctx));
    let mut md = String::from(
        "A periodic task set on one core (periods 10/20/40 ms, costs 2/4/8 ms, implicit deadlines: utilisation 0.6) \
         with a standing backlog of eight 2 ms background jobs (`overload`) or none. Jobs run to completion; priorities are rate-monotonic.\n\n",
    );
    if let (Some(f), Some(e)) = (
        find(&records, "overload", "fifo", "miss-rate"),
        find(&records, "overload", "edf", "miss-rate"),
    ) {
        md.push_str(&format!(
            "- Overload: FIFO misses **{f:.1}%** of deadlines, EDF **{e:.1}%**: EDF misses {:.1} percentage points fewer{}.\n",
            f - e,
            if e > 0.0 { format!(" ({:.1}x fewer)", f / e) } else { String::new() }
        ));
    }
    let mut sec = Section::auto(
        "sched",
        "Real-time schedulers: deadline misses",
        "",
        records,
    );
    sec.markdown = md;
    sec
}
