//! `manycore bench steal`: fork-join side by side (issue 4). For each workload,
//! in one run: the sequential time Ts and T1, T2 (1 and 2 cores) for
//! manycore-steal (on a manycore runtime), rayon and chili; the paper's
//! Table 1 (costs of a join that is not stolen, a promotion, a steal), its
//! Table 2 (T2 with a busy background thread against the ideal sum of
//! throughputs), the machine's parallel capacity S_cap, the efficiency
//! (Ts/T2)/S_cap, the longest gap between heartbeat polls and the CPU an idle
//! runtime burns. Every figure is a median of several repetitions.

use crate::record::Record;
use manycore::{IdlePolicy, Runtime};
use manycore_steal::{Ctx, StealExt};
use std::hint::black_box;
use std::num::NonZero;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of the steal benchmark.
#[derive(Debug, Clone)]
pub struct StealBenchOpts {
    /// Rough time budget, in seconds, for the repetitions of one
    /// (workload, implementation, cores) cell.
    pub secs: f64,
    /// Smaller problem sizes and budgets (for `manycore report`: ≤ ~25 s).
    pub quick: bool,
}

const BENCH: &str = "steal";

// ---------------------------------------------------------------- workloads

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}
fn fib_mc(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_mc(s, n - 1), |s| fib_mc(s, n - 2));
    a + b
}
fn fib_mc_plain(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = manycore_steal::join(|| fib_mc_plain(n - 1), || fib_mc_plain(n - 2));
    a + b
}
fn fib_rayon(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}
fn fib_chili(s: &mut chili::Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_chili(s, n - 1), |s| fib_chili(s, n - 2));
    a + b
}

/// The paper's idle work: `i` dependent steps the optimiser cannot remove.
/// Out of line, so that every implementation runs this one copy of the loop:
/// inlined copies are placed differently in each kernel, and where a copy's
/// loop falls across a 64-byte boundary it ran up to 8% slower (i = 10000),
/// whoever's kernel it was in.
#[inline(never)]
fn idle(i: u32, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..i {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

#[derive(Clone, Copy)]
struct Knary {
    k: u32,
    m: u32,
    i: u32,
}

// knary(k, m, i): every node does `i` idle steps, then (above depth m) spawns
// k children; the k children are split in halves by binary joins.
fn knary_seq(p: Knary, depth: u32) -> u64 {
    let mut acc = idle(p.i, u64::from(depth));
    if depth + 1 < p.m {
        for _ in 0..p.k {
            acc = acc.wrapping_add(knary_seq(p, depth + 1));
        }
    }
    acc
}
fn knary_mc(s: Ctx<'_>, p: Knary, depth: u32) -> u64 {
    let acc = idle(p.i, u64::from(depth));
    if depth + 1 < p.m {
        acc.wrapping_add(knary_mc_children(s, p, depth + 1, p.k))
    } else {
        acc
    }
}
fn knary_mc_children(s: Ctx<'_>, p: Knary, depth: u32, n: u32) -> u64 {
    if n == 1 {
        return knary_mc(s, p, depth);
    }
    let h = n / 2;
    let (a, b) = s.join(
        |s| knary_mc_children(s, p, depth, h),
        |s| knary_mc_children(s, p, depth, n - h),
    );
    a.wrapping_add(b)
}
fn knary_rayon(p: Knary, depth: u32) -> u64 {
    let acc = idle(p.i, u64::from(depth));
    if depth + 1 < p.m {
        acc.wrapping_add(knary_rayon_children(p, depth + 1, p.k))
    } else {
        acc
    }
}
fn knary_rayon_children(p: Knary, depth: u32, n: u32) -> u64 {
    if n == 1 {
        return knary_rayon(p, depth);
    }
    let h = n / 2;
    let (a, b) = rayon::join(
        || knary_rayon_children(p, depth, h),
        || knary_rayon_children(p, depth, n - h),
    );
    a.wrapping_add(b)
}
fn knary_chili(s: &mut chili::Scope<'_>, p: Knary, depth: u32) -> u64 {
    let acc = idle(p.i, u64::from(depth));
    if depth + 1 < p.m {
        acc.wrapping_add(knary_chili_children(s, p, depth + 1, p.k))
    } else {
        acc
    }
}
fn knary_chili_children(s: &mut chili::Scope<'_>, p: Knary, depth: u32, n: u32) -> u64 {
    if n == 1 {
        return knary_chili(s, p, depth);
    }
    let h = n / 2;
    let (a, b) = s.join(
        |s| knary_chili_children(s, p, depth, h),
        |s| knary_chili_children(s, p, depth, n - h),
    );
    a.wrapping_add(b)
}

struct Node {
    val: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

/// A balanced binary tree of exactly `n` nodes, allocated in pre-order
/// (parent, left subtree, right subtree), as straightforward code builds it.
/// The layout matters at 10 million nodes: a left-first walk (sequential,
/// manycore, rayon) then streams forward through memory. chili runs `b`
/// (the right subtree) first, which favours the reverse, post-order layout.
fn build_tree(n: usize, next: &mut u64) -> Option<Box<Node>> {
    if n == 0 {
        return None;
    }
    *next += 1;
    let mut node = Box::new(Node {
        val: *next,
        left: None,
        right: None,
    });
    let l = (n - 1) / 2;
    node.left = build_tree(l, next);
    node.right = build_tree(n - 1 - l, next);
    Some(node)
}
fn sum_seq(t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => n.val + sum_seq(&n.left) + sum_seq(&n.right),
    }
}
fn sum_mc(s: Ctx<'_>, t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => {
            let (a, b) = s.join(|s| sum_mc(s, &n.left), |s| sum_mc(s, &n.right));
            n.val + a + b
        }
    }
}
fn sum_rayon(t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => {
            let (a, b) = rayon::join(|| sum_rayon(&n.left), || sum_rayon(&n.right));
            n.val + a + b
        }
    }
}
fn sum_chili(s: &mut chili::Scope<'_>, t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => {
            let (a, b) = s.join(|s| sum_chili(s, &n.left), |s| sum_chili(s, &n.right));
            n.val + a + b
        }
    }
}
/// Drops a tree without deep recursion (10 million nodes).
fn drop_tree(t: Option<Box<Node>>) {
    let mut stack: Vec<Box<Node>> = t.into_iter().collect();
    while let Some(mut n) = stack.pop() {
        stack.extend(n.left.take());
        stack.extend(n.right.take());
    }
}

const SORT_CUTOFF: usize = 32;

fn insertion_sort(v: &mut [u64]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}
/// Hoare partition around the median of three; returns the split point.
fn partition(v: &mut [u64]) -> usize {
    let (a, b, c) = (v[0], v[v.len() / 2], v[v.len() - 1]);
    let pivot = a.max(b).min(a.min(b).max(c));
    let (mut i, mut j) = (0usize, v.len() - 1);
    loop {
        while v[i] < pivot {
            i += 1;
        }
        while v[j] > pivot {
            j -= 1;
        }
        if i >= j {
            return j + 1;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
}
fn qsort_seq(v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    qsort_seq(l);
    qsort_seq(r);
}
fn qsort_mc(s: Ctx<'_>, v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    s.join(|s| qsort_mc(s, l), |s| qsort_mc(s, r));
}
fn qsort_rayon(v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    rayon::join(|| qsort_rayon(l), || qsort_rayon(r));
}
fn qsort_chili(s: &mut chili::Scope<'_>, v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    s.join(|s| qsort_chili(s, l), |s| qsort_chili(s, r));
}
fn random_u64s(n: usize) -> Vec<u64> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

// ---------------------------------------------------------------- harness

/// Median of `f`'s durations (ms), repeated within the time budget.
fn median_ms(secs: f64, mut f: impl FnMut() -> Duration) -> f64 {
    let first = f(); // warm-up, and a size estimate
    let est = first.as_secs_f64().max(1e-6);
    let reps = ((secs / est) as usize).clamp(3, 21);
    let mut v: Vec<f64> = (0..reps).map(|_| f().as_secs_f64() * 1e3).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time<R>(f: impl FnOnce() -> R) -> Duration {
    let t = Instant::now();
    black_box(f());
    t.elapsed()
}

/// Cores are not pinned by default, like the peers' threads: on a shared
/// machine a pinned core cannot move off a CPU that another tenant is using
/// (and other manycore benchmarks pin their core 0 to the same CPU). Set
/// `MANYCORE_STEAL_PIN=1` to pin.
fn runtime(cores: usize) -> Runtime {
    let pin = std::env::var("MANYCORE_STEAL_PIN").is_ok_and(|v| v == "1");
    Runtime::builder()
        .cores(cores)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .pin(pin)
        .build()
        .expect("runtime")
}

fn rayon_pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .expect("rayon pool")
}

fn chili_pool(n: usize) -> chili::ThreadPool {
    chili::ThreadPool::with_config(chili::Config {
        thread_count: NonZero::new(n),
        ..Default::default()
    })
}

/// A workload's timed run on a runtime.
type OnRuntime<'a> = Box<dyn FnMut(&Runtime) -> Duration + 'a>;

/// Ts, and T1/T2 for each implementation, of one workload; returns the records
/// and the figures (Ts, [(impl, T1, T2)]).
struct Workload<'a> {
    case: String,
    seq: Box<dyn FnMut() -> Duration + 'a>,
    mc: OnRuntime<'a>,
    /// The same tree through the plain `join`, on the same runtimes (fib
    /// only): recorded as `manycore-plain-join`.
    mc_plain: Option<OnRuntime<'a>>,
    rayon: Box<dyn FnMut(&rayon::ThreadPool) -> Duration + 'a>,
    chili: Box<dyn FnMut(&chili::ThreadPool) -> Duration + 'a>,
}

struct Figures {
    ts: f64,
}

fn run_workload(
    opts: &StealBenchOpts,
    w: &mut Workload<'_>,
    s_cap: f64,
    out: &mut Vec<Record>,
) -> Figures {
    // All configurations stay up, and the repetitions interleave them (seq,
    // manycore T1, T2, rayon T1, T2, chili T1, T2, then the plain join's T1,
    // T2 where there is one, seq, ...), so that a burst of load from other
    // tenants of the machine hits all of them alike.
    let rts = [runtime(1), runtime(2)];
    for rt in &rts {
        manycore_steal::attach(rt).expect("attach");
    }
    let rps = [rayon_pool(1), rayon_pool(2)];
    let cps = [chili_pool(1), chili_pool(2)];
    let configs = if w.mc_plain.is_some() { 9 } else { 7 };
    let mut run_one = |k: usize| -> Duration {
        // Let the previous configuration's threads finish spinning and go to
        // sleep, so that no pool's idle threads compete with the next one.
        std::thread::sleep(Duration::from_millis(5));
        match k {
            0 => (w.seq)(),
            1 | 2 => (w.mc)(&rts[k - 1]),
            3 | 4 => (w.rayon)(&rps[k - 3]),
            5 | 6 => (w.chili)(&cps[k - 5]),
            _ => match w.mc_plain.as_mut() {
                Some(f) => f(&rts[k - 7]),
                None => Duration::ZERO,
            },
        }
    };
    // Warm-up, and a size estimate from the sequential run.
    let est = run_one(0).as_secs_f64().max(1e-6);
    for k in 1..configs {
        run_one(k);
    }
    let reps = ((opts.secs / est) as usize).clamp(3, 21);
    let mut v: Vec<Vec<f64>> = (0..configs).map(|_| Vec::with_capacity(reps)).collect();
    for _ in 0..reps {
        for (k, vk) in v.iter_mut().enumerate() {
            vk.push(run_one(k).as_secs_f64() * 1e3);
        }
    }
    for rt in &rts {
        rt.shutdown();
    }
    let med: Vec<f64> = v
        .iter_mut()
        .map(|x| {
            x.sort_by(|a, b| a.total_cmp(b));
            x[x.len() / 2]
        })
        .collect();
    let ts = med[0];
    out.push(Record::new(BENCH, &w.case, "sequential", "Ts", ts, "ms"));
    let cell = |name: &'static str, t1: f64, t2: f64, out: &mut Vec<Record>| {
        out.push(Record::new(BENCH, &w.case, name, "T1", t1, "ms"));
        out.push(Record::new(BENCH, &w.case, name, "T2", t2, "ms"));
        out.push(Record::new(BENCH, &w.case, name, "T1/Ts", t1 / ts, "ratio"));
        out.push(Record::new(BENCH, &w.case, name, "T2/Ts", t2 / ts, "ratio"));
        out.push(Record::new(
            BENCH,
            &w.case,
            name,
            "efficiency",
            (ts / t2) / s_cap,
            "ratio",
        ));
    };
    cell("manycore", med[1], med[2], out);
    cell("rayon", med[3], med[4], out);
    cell("chili", med[5], med[6], out);
    if configs == 9 {
        cell("manycore-plain-join", med[7], med[8], out);
    }
    Figures { ts }
}

/// Runs `f` on core 0 of `rt` and returns how long it took there.
fn on_rt<R: Send + 'static>(rt: &Runtime, f: impl FnOnce() -> R + Send + 'static) -> Duration {
    rt.install(move || time(f))
}

// ---------------------------------------------------------------- S_cap

fn spin_work(iters: u64) -> u64 {
    let mut x = 1u64;
    for _ in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}

/// S_cap = t(one spin loop) / (t(two loops at once on two threads) / 2).
fn parallel_capacity(quick: bool) -> f64 {
    let iters: u64 = if quick { 20_000_000 } else { 60_000_000 };
    let cpus = manycore_sync::cpu::original().to_vec();
    let one = |cpu: Option<usize>| {
        std::thread::spawn(move || {
            if let Some(c) = cpu {
                let _ = manycore_sync::cpu::pin_current(c);
            }
            time(|| spin_work(iters))
        })
    };
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let t1 = one(cpus.first().copied()).join().unwrap().as_secs_f64();
        let start = Instant::now();
        let (a, b) = (one(cpus.first().copied()), one(cpus.get(1).copied()));
        a.join().unwrap();
        b.join().unwrap();
        let t2 = start.elapsed().as_secs_f64();
        ratios.push(t1 / (t2 / 2.0));
    }
    ratios.sort_by(|a, b| a.total_cmp(b));
    ratios[1]
}

// ---------------------------------------------------------------- entry

/// Runs the whole steal section and returns its records.
pub fn run(opts: &StealBenchOpts) -> Vec<Record> {
    let mut out = Vec::new();
    let q = opts.quick;
    let s_cap = parallel_capacity(q);
    out.push(Record::new(
        BENCH, "capacity", "machine", "S_cap", s_cap, "ratio",
    ));

    // fib(n), no cutoff.
    let n = if q { 27 } else { 30 };
    let case = format!("fib({n})");
    let mut w = Workload {
        case: case.clone(),
        seq: Box::new(move || time(|| fib_seq(black_box(n)))),
        mc: Box::new(move |rt| {
            on_rt(rt, move || {
                manycore_steal::with_ctx(|s| fib_mc(s, black_box(n)))
            })
        }),
        // The plain (thread-local) join, for comparison with the context form.
        mc_plain: Some(Box::new(move |rt| {
            on_rt(rt, move || fib_mc_plain(black_box(n)))
        })),
        rayon: Box::new(move |p| p.install(|| time(|| fib_rayon(black_box(n))))),
        chili: Box::new(move |p| {
            let mut s = p.scope();
            time(|| fib_chili(&mut s, black_box(n)))
        }),
    };
    run_workload(opts, &mut w, s_cap, &mut out);
    {
        // Longest gap between two heartbeat polls while the tree runs.
        let rt = runtime(1);
        manycore_steal::attach(&rt).expect("attach");
        manycore_steal::measure_poll_gaps(true);
        let _ = on_rt(&rt, move || {
            manycore_steal::with_ctx(|s| fib_mc(s, black_box(n)))
        });
        let gap = manycore_steal::max_poll_gap();
        manycore_steal::measure_poll_gaps(false);
        out.push(Record::new(
            BENCH,
            &case,
            "manycore",
            "max_poll_gap",
            gap.as_secs_f64() * 1e6,
            "us",
        ));
        rt.shutdown();
    }

    // knary(4, m, i).
    let m = if q { 7 } else { 10 };
    let mut knary_1000 = None;
    for i in [0, 100, 1000] {
        let p = Knary { k: 4, m, i };
        let mut w = Workload {
            case: format!("knary(4,{m},{i})"),
            seq: Box::new(move || time(|| knary_seq(p, 0))),
            mc: Box::new(move |rt| {
                on_rt(rt, move || manycore_steal::with_ctx(|s| knary_mc(s, p, 0)))
            }),
            mc_plain: None,
            rayon: Box::new(move |pool| pool.install(|| time(|| knary_rayon(p, 0)))),
            chili: Box::new(move |pool| {
                let mut s = pool.scope();
                time(|| knary_chili(&mut s, p, 0))
            }),
        };
        let f = run_workload(opts, &mut w, s_cap, &mut out);
        if i == 1000 {
            knary_1000 = Some((p, f.ts));
        }
    }

    // Binary tree sum: 1,023 nodes repeated, and 10 million nodes.
    let reps = if q { 200 } else { 1000 };
    let small = Arc::new(build_tree(1023, &mut 0));
    let big_n = if q { 1_000_000 } else { 10_000_000 };
    let big = Arc::new(build_tree(big_n, &mut 0));
    for (case, tree, r) in [
        (format!("tree_sum(1023)x{reps}"), small.clone(), reps),
        (format!("tree_sum({big_n})"), big.clone(), 1),
    ] {
        let (t1, t2, t3, t4) = (tree.clone(), tree.clone(), tree.clone(), tree.clone());
        let mut w = Workload {
            case,
            seq: Box::new(move || time(|| (0..r).map(|_| sum_seq(black_box(&t1))).sum::<u64>())),
            mc: Box::new(move |rt| {
                let t = t2.clone();
                on_rt(rt, move || {
                    manycore_steal::with_ctx(|s| {
                        (0..r).map(|_| sum_mc(s, black_box(&t))).sum::<u64>()
                    })
                })
            }),
            mc_plain: None,
            rayon: Box::new(move |p| {
                p.install(|| time(|| (0..r).map(|_| sum_rayon(black_box(&t3))).sum::<u64>()))
            }),
            chili: Box::new(move |p| {
                let mut s = p.scope();
                time(|| {
                    (0..r)
                        .map(|_| sum_chili(&mut s, black_box(&t4)))
                        .sum::<u64>()
                })
            }),
        };
        run_workload(opts, &mut w, s_cap, &mut out);
    }
    drop(small);
    if let Ok(t) = Arc::try_unwrap(big) {
        drop_tree(t);
    }

    // Parallel quicksort of 10 million u64 (the copy is not timed).
    let qn = if q { 1_000_000 } else { 10_000_000 };
    let input = Arc::new(random_u64s(qn));
    let (i1, i2, i3, i4) = (input.clone(), input.clone(), input.clone(), input.clone());
    let mut w = Workload {
        case: format!("quicksort({qn})"),
        seq: Box::new(move || {
            let mut v = i1.to_vec();
            time(|| qsort_seq(&mut v))
        }),
        mc: Box::new(move |rt| {
            let mut v = i2.to_vec();
            rt.install(move || {
                let t = Instant::now();
                manycore_steal::with_ctx(|s| qsort_mc(s, &mut v));
                let d = t.elapsed();
                debug_assert!(v.windows(2).all(|w| w[0] <= w[1]));
                d
            })
        }),
        mc_plain: None,
        rayon: Box::new(move |p| {
            let mut v = i3.to_vec();
            p.install(|| time(|| qsort_rayon(&mut v)))
        }),
        chili: Box::new(move |p| {
            let mut v = i4.to_vec();
            let mut s = p.scope();
            time(|| qsort_chili(&mut s, &mut v))
        }),
    };
    run_workload(opts, &mut w, s_cap, &mut out);

    table1(opts, &mut out);
    if let Some((p, ts)) = knary_1000 {
        table2(opts, p, ts, &mut out);
    }
    idle_cpu(q, &mut out);
    out
}

/// The paper's Table 1: what a join costs when nobody steals, what promoting
/// a latent frame costs, and what a steal costs end to end.
fn table1(opts: &StealBenchOpts, out: &mut Vec<Record>) {
    const CASE: &str = "table1";
    let iters: u32 = if opts.quick { 2_000_000 } else { 10_000_000 };
    let base = || {
        time(|| {
            for i in 0..iters {
                black_box((black_box(i), black_box(i)));
            }
        })
    };
    let t_base = median_ms(opts.secs / 4.0, base) * 1e6 / f64::from(iters);
    out.push(Record::new(
        BENCH,
        CASE,
        "sequential",
        "call_pair",
        t_base,
        "ns",
    ));

    let rt = runtime(1);
    manycore_steal::attach(&rt).expect("attach");
    let t = median_ms(opts.secs / 4.0, || {
        on_rt(&rt, move || {
            manycore_steal::with_ctx(|s| {
                for i in 0..iters {
                    black_box(s.join(|_| black_box(i), |_| black_box(i)));
                }
            })
        })
    }) * 1e6
        / f64::from(iters);
    out.push(Record::new(
        BENCH,
        CASE,
        "manycore",
        "join_not_stolen",
        t - t_base,
        "ns",
    ));
    let t = median_ms(opts.secs / 4.0, || {
        on_rt(&rt, move || {
            for i in 0..iters {
                black_box(manycore_steal::join(|| black_box(i), || black_box(i)));
            }
        })
    }) * 1e6
        / f64::from(iters);
    out.push(Record::new(
        BENCH,
        CASE,
        "manycore-plain-join",
        "join_not_stolen",
        t - t_base,
        "ns",
    ));
    rt.shutdown();

    let p = rayon_pool(1);
    let t = median_ms(opts.secs / 4.0, || {
        p.install(|| {
            time(|| {
                for i in 0..iters {
                    black_box(rayon::join(|| black_box(i), || black_box(i)));
                }
            })
        })
    }) * 1e6
        / f64::from(iters);
    out.push(Record::new(
        BENCH,
        CASE,
        "rayon",
        "join_not_stolen",
        t - t_base,
        "ns",
    ));
    drop(p);
    let p = chili_pool(1);
    let t = median_ms(opts.secs / 4.0, || {
        let mut s = p.scope();
        time(|| {
            for i in 0..iters {
                black_box(s.join(|_| black_box(i), |_| black_box(i)));
            }
        })
    }) * 1e6
        / f64::from(iters);
    out.push(Record::new(
        BENCH,
        CASE,
        "chili",
        "join_not_stolen",
        t - t_base,
        "ns",
    ));
    drop(p);

    // Promotion (MuSE's t_spawn analog): claim demand, unlink, publish, take back.
    let mut v: Vec<f64> = (0..5)
        .map(|_| manycore_steal::probe::promotion_cost(iters / 20).as_secs_f64() * 1e9)
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    out.push(Record::new(
        BENCH,
        CASE,
        "manycore",
        "promotion",
        v[2],
        "ns",
    ));

    // Steal, end to end: a join of two equal halves of busy work with a
    // heartbeat at every join, on two cores. Cost = wall time of the join -
    // the longer half as timed inside it, over the joins whose second half
    // was run by the other core (demand, promotion, wake-up, result, wake-up).
    let work: u64 = 20_000;
    let rt = runtime(2);
    manycore_steal::attach(&rt).expect("attach");
    let old = manycore_steal::max_sequential();
    let rounds = if opts.quick { 300 } else { 1000 };
    let mut stolen: Vec<f64> = rt.install(move || {
        // On core 0 itself, so that it applies at once.
        manycore_steal::set_max_sequential(1);
        let mut v = Vec::new();
        for _ in 0..rounds {
            let before = manycore_steal::current_stats().unwrap_or_default();
            let t = Instant::now();
            let (ta, tb) =
                manycore_steal::join(|| time(|| spin_work(work)), || time(|| spin_work(work)));
            let d = t.elapsed();
            let after = manycore_steal::current_stats().unwrap_or_default();
            if after.promotions > before.promotions && after.reclaims == before.reclaims {
                v.push(d.saturating_sub(ta.max(tb)).as_secs_f64());
            }
        }
        manycore_steal::set_max_sequential(old);
        v
    });
    rt.shutdown();
    let n = stolen.len();
    stolen.sort_by(|a, b| a.total_cmp(b));
    let cost = if n > 0 { stolen[n / 2] * 1e9 } else { f64::NAN };
    out.push(Record::new(BENCH, CASE, "manycore", "steal", cost, "ns"));
    out.push(Record::new(
        BENCH,
        CASE,
        "manycore",
        "steal_samples",
        n as f64,
        "count",
    ));
}

/// The paper's Table 2: knary(4, m, 1000) on two cores while a busy thread
/// competes for the second CPU; the ideal is the sum of throughputs, 1 + 1/2.
fn table2(opts: &StealBenchOpts, p: Knary, ts: f64, out: &mut Vec<Record>) {
    let case = format!("table2 knary(4,{},{}) +1 busy", p.m, p.i);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let cpu = manycore_sync::cpu::original().get(1).copied();
    let bg = std::thread::spawn(move || {
        if let Some(c) = cpu {
            let _ = manycore_sync::cpu::pin_current(c);
        }
        let mut x = 0u64;
        while !s2.load(Ordering::Relaxed) {
            x = black_box(spin_work(10_000).wrapping_add(x));
        }
    });
    let rt = runtime(2);
    manycore_steal::attach(&rt).expect("attach");
    let t2 = median_ms(opts.secs, || {
        on_rt(&rt, move || manycore_steal::with_ctx(|s| knary_mc(s, p, 0)))
    });
    rt.shutdown();
    stop.store(true, Ordering::Relaxed);
    bg.join().unwrap();
    let s_max = 1.5;
    out.push(Record::new(BENCH, &case, "sequential", "Ts", ts, "ms"));
    out.push(Record::new(BENCH, &case, "manycore", "T2", t2, "ms"));
    out.push(Record::new(
        BENCH,
        &case,
        "manycore",
        "speedup",
        ts / t2,
        "ratio",
    ));
    out.push(Record::new(BENCH, &case, "ideal", "S_max", s_max, "ratio"));
    out.push(Record::new(
        BENCH,
        &case,
        "manycore",
        "utilized",
        ts / t2 / s_max,
        "ratio",
    ));
}

/// CPU burnt by an attached, idle two-core runtime.
fn idle_cpu(quick: bool, out: &mut Vec<Record>) {
    let rt = runtime(2);
    manycore_steal::attach(&rt).expect("attach");
    rt.install(|| manycore_steal::with_ctx(|s| fib_mc(s, 20)));
    std::thread::sleep(Duration::from_millis(100));
    let span = if quick {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(2)
    };
    let c0 = manycore_sync::cpu::process_cpu_time();
    let t0 = Instant::now();
    std::thread::sleep(span);
    let cpu = manycore_sync::cpu::process_cpu_time().saturating_sub(c0);
    let per_sec = cpu.as_secs_f64() * 1e3 / t0.elapsed().as_secs_f64();
    out.push(Record::new(
        BENCH, "idle", "manycore", "idle_cpu", per_sec, "ms/s",
    ));
    rt.shutdown();
}

// ---------------------------------------------------------------- acceptance

/// The acceptance lines of issue 4 (Markdown list items), computed from the
/// records of one run. Sizes are the run's own: a `--quick` run (as in
/// `manycore report`) has smaller workloads than the issue names.
pub fn summary(recs: &[Record]) -> String {
    use std::fmt::Write as _;
    let get = |case: &str, imp: &str, metric: &str| {
        recs.iter()
            .find(|r| r.case == case && r.impl_ == imp && r.metric == metric)
            .map(|r| r.value)
    };
    let cases: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in recs {
            if !v.contains(&r.case.as_str()) {
                v.push(&r.case);
            }
        }
        v
    };
    let mut s = String::from("Acceptance (issue 4; ratios of medians from this run):\n");
    let mut line = |what: String, v: Option<f64>, le: bool, target: f64| {
        let _ = match v {
            Some(v) => {
                let ok = if le { v <= target } else { v >= target };
                writeln!(
                    s,
                    "- {what}: {v:.2} (target {} {target}) {}",
                    if le { "<=" } else { ">=" },
                    if ok { "pass" } else { "FAIL" }
                )
            }
            None => writeln!(s, "- {what}: not measured"),
        };
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    for case in cases.iter().filter(|c| c.starts_with("fib(")) {
        let ts = get(case, "sequential", "Ts");
        for imp in ["manycore", "manycore-plain-join"] {
            let (t1, t2) = (get(case, imp, "T1"), get(case, imp, "T2"));
            line(format!("{case} {imp} T1/Ts"), ratio(t1, ts), true, 2.0);
            line(
                format!("{case} {imp} T2 / rayon T2"),
                ratio(t2, get(case, "rayon", "T2")),
                true,
                0.5,
            );
            line(
                format!("{case} {imp} T2 / chili T2"),
                ratio(t2, get(case, "chili", "T2")),
                true,
                0.8,
            );
            line(format!("{case} {imp} T2/Ts"), ratio(t2, ts), true, 1.5);
        }
    }
    for case in cases
        .iter()
        .filter(|c| c.starts_with("knary(") && c.ends_with(",1000)"))
    {
        line(
            format!("{case} manycore T1/Ts"),
            get(case, "manycore", "T1/Ts"),
            true,
            1.05,
        );
        line(
            format!("{case} manycore efficiency (Ts/T2)/S_cap"),
            get(case, "manycore", "efficiency"),
            false,
            0.9,
        );
    }
    for case in cases
        .iter()
        .filter(|c| c.starts_with("tree_sum(") && !c.starts_with("tree_sum(1023)"))
    {
        line(
            format!("{case} manycore T2 / rayon T2"),
            ratio(get(case, "manycore", "T2"), get(case, "rayon", "T2")),
            true,
            0.5,
        );
    }
    for case in cases.iter().filter(|c| {
        (c.starts_with("knary(") || c.starts_with("tree_sum(") || c.starts_with("quicksort("))
            && !c.starts_with("table")
    }) {
        line(
            format!("{case} manycore T2/Ts"),
            get(case, "manycore", "T2/Ts"),
            true,
            1.0,
        );
    }
    line(
        "idle runtime CPU (ms/s)".to_string(),
        get("idle", "manycore", "idle_cpu"),
        true,
        2.0,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_judges_each_line_from_the_records() {
        let r = |case: &str, imp: &str, metric: &str, v: f64| {
            Record::new(BENCH, case, imp, metric, v, "ms")
        };
        let recs = vec![
            r("fib(30)", "sequential", "Ts", 2.0),
            r("fib(30)", "manycore", "T1", 3.0),
            r("fib(30)", "manycore", "T2", 2.0),
            r("fib(30)", "rayon", "T2", 10.0),
            r("fib(30)", "chili", "T2", 2.2),
            r("knary(4,10,0)", "manycore", "T2/Ts", 1.3),
            r("idle", "manycore", "idle_cpu", 0.02),
        ];
        let s = summary(&recs);
        assert!(
            s.contains("fib(30) manycore T1/Ts: 1.50 (target <= 2) pass"),
            "{s}"
        );
        assert!(
            s.contains("fib(30) manycore T2 / rayon T2: 0.20 (target <= 0.5) pass"),
            "{s}"
        );
        // 2.0 / 2.2 = 0.91 > 0.8
        assert!(
            s.contains("fib(30) manycore T2 / chili T2: 0.91 (target <= 0.8) FAIL"),
            "{s}"
        );
        assert!(
            s.contains("fib(30) manycore-plain-join T1/Ts: not measured"),
            "{s}"
        );
        assert!(
            s.contains("knary(4,10,0) manycore T2/Ts: 1.30 (target <= 1) FAIL"),
            "{s}"
        );
        assert!(
            s.contains("idle runtime CPU (ms/s): 0.02 (target <= 2) pass"),
            "{s}"
        );
    }
}
