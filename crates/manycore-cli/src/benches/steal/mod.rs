//! `manycore bench steal`: fork-join side by side, after "The MuSE System: A
//! Flexible Combination of On-Stack Execution and Work-Stealing". For each
//! workload ([`workloads`]), in one run: the sequential time Ts and T1, T2
//! (1 and 2 cores) for manycore-steal (on a manycore runtime), rayon and
//! chili; the paper's Table 1 (costs of a join that is not stolen, a
//! promotion, a steal), its Table 2 (T2 with a busy background thread against
//! the ideal sum of throughputs), the machine's parallel capacity S_cap, the
//! efficiency (Ts/T2)/S_cap, the longest gap between heartbeat polls and the
//! CPU an idle runtime burns. Every figure is a median of several repetitions.
//! Its `pariter` part ([`pariter`]) runs workloads of rayon's own demos
//! through the `rayon` crate on the real rayon-core and on manycore's.

pub mod pariter;
pub mod workloads;

use std::hint::black_box;
use std::num::NonZero;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use manycore::{IdlePolicy, Runtime};
use manycore_steal::StealExt;

use crate::bench::{cases, find, ratio, Bench, Cmp, Opt, Options, Target};
use crate::measure::{idle_cpu_ms_per_s, time};
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::median;
use workloads::*;

/// `manycore bench steal`.
pub const BENCH: Bench = Bench {
    name: "steal",
    about: "fork-join fib, knary, sorts, par_iter vs rayon and chili",
    title: "Fork-join: on-stack execution, stolen on demand (MuSE)",
    method: "Ts, and T1/T2 on 1 and 2 cores for manycore, rayon and chili, of fib, knary, \
             a tree sum and quicksort (smaller sizes with --quick); the configurations stay \
             up and their repetitions interleave, 3 to 21 of them as --secs allows per \
             cell. Efficiency is (Ts/T2)/S_cap, S_cap the speedup two busy threads get on \
             this machine. Table 1 and Table 2 after \"The MuSE System: A Flexible \
             Combination of On-Stack Execution and Work-Stealing\". Cores are not pinned \
             (--pin pins them): on a shared machine a pinned core cannot move off a CPU \
             that another tenant is using. Part pariter: the `rayon` crate on the real \
             rayon-core against rayon on manycore's rayon-core (crates/manycore-rayon-core), \
             T1 and T2 of par_iter().map().sum() and collect over 10^7 u64, par_sort and \
             par_sort_unstable of 10^7 u64, and, written in the shape of rayon-demo's, its \
             recursive-join quicksort of 10^7 u32 and its Z-order matrix multiply of side 512 \
             (10^5 elements and side 128 with --quick). One program \
             (crates/manycore-rayon-core/pariter-bench) is built twice with cargo, once per \
             rayon-core; its runs alternate (rayon-core T1, manycore T1, rayon-core T2, \
             manycore T2), --reps times, each timing every workload once after a warm-up \
             and checking its results; figures are the medians. --reps is this part's \
             alone: the fork-join part sizes its repetitions by --secs.",
    secs: 1.0,
    report_secs: [0.2, 0.3, 0.3],
    repeats: true,
    options: &[
        Opt::switch(
            "--pin",
            "pin the runtimes' cores to CPUs [default: not pinned]",
        ),
        Opt {
            flag: "--only",
            value: Some("PARTS"),
            help: "run only these parts: fork-join (the workloads on\nmanycore-steal, rayon and chili, Tables 1 and 2, the\nidle runtime), pariter (the rayon crate on both\nrayon-cores) (comma-separated)",
            parse: parse_parts,
        },
    ],
    expected_secs,
    run,
    targets,
    notes: |_| pariter::notes(),
    ..Bench::DEFAULT
};

/// The parts `--only` chooses from.
const PARTS: [&str; 2] = ["fork-join", "pariter"];

fn parse_parts(v: &str) -> Result<Vec<String>, String> {
    v.split(',')
        .map(str::trim)
        .map(|p| match PARTS.contains(&p) {
            true => Ok(p.to_string()),
            false => Err("expected fork-join or pariter".to_string()),
        })
        .collect()
}

/// Whether `--only` (or its absence) selects `part`.
fn wanted(o: &Options, part: &str) -> bool {
    o.get("--only").is_none_or(|v| v.iter().any(|p| p == part))
}

/// Repetitions of one cell: as many runs of about `est` seconds as `secs`
/// allows, 3 to 21.
fn reps_for(secs: f64, est: f64) -> usize {
    ((secs / est.max(1e-6)) as usize).clamp(3, 21)
}

/// The expected time of a run, from the sequential time each workload took
/// on a 2-CPU AMD EPYC VM (quick size, default size): each cell runs its
/// configurations (reps + 1) times, about 1.2 Ts each after a 5 ms pause;
/// plus S_cap, the trees, Table 1 and the idle runtime.
fn expected_secs(o: &Options) -> f64 {
    let fork_join = if wanted(o, "fork-join") {
        fork_join_secs(o)
    } else {
        0.0
    };
    let pariter = if wanted(o, "pariter") {
        pariter::expected_secs(o)
    } else {
        0.0
    };
    fork_join + pariter
}

/// The expected time of the fork-join part.
fn fork_join_secs(o: &Options) -> f64 {
    // (configurations, Ts in seconds at the quick size, at the default size)
    const CELLS: [(f64, f64, f64); 7] = [
        (9.0, 0.4e-3, 1.7e-3),   // fib
        (7.0, 0.013e-3, 0.8e-3), // knary i = 0
        (7.0, 0.43e-3, 28e-3),   // knary i = 100
        (7.0, 5.8e-3, 0.37),     // knary i = 1000
        (7.0, 0.26e-3, 1.3e-3),  // tree_sum(1023) repeated
        (7.0, 1.9e-3, 30e-3),    // tree_sum(big)
        (7.0, 59e-3, 0.84),      // quicksort
    ];
    let cells: f64 = CELLS
        .iter()
        .map(|&(configs, quick, full)| {
            let ts = if o.quick { quick } else { full };
            configs * (reps_for(o.secs, ts) + 1) as f64 * (0.005 + 1.2 * ts)
        })
        .sum();
    let fixed = if o.quick { 1.5 } else { 5.0 };
    cells + fixed
}

/// Median of `f`'s durations (ms), repeated within the time budget.
fn median_ms(secs: f64, mut f: impl FnMut() -> Duration) -> f64 {
    let first = f(); // warm-up, and a size estimate
    let reps = reps_for(secs, first.as_secs_f64());
    let v: Vec<f64> = (0..reps).map(|_| f().as_secs_f64() * 1e3).collect();
    median(&v).unwrap_or(f64::NAN)
}

/// A runtime of `cores` cores with manycore-steal attached. Cores are not
/// pinned unless `--pin` says so, like the peers' threads: on a shared
/// machine a pinned core cannot move off a CPU that another tenant is using
/// (and other manycore benchmarks pin their core 0 to the same CPU).
fn runtime(o: &Options, cores: usize) -> Runtime {
    let rt = Runtime::builder()
        .cores(cores)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .pin(o.switch("--pin"))
        .build()
        .expect("runtime");
    manycore_steal::attach(&rt).expect("attach");
    rt
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

/// One workload in every implementation, each a closure that runs it once
/// and returns how long it took.
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

/// Measures Ts, and T1/T2 for each implementation, of one workload, adds
/// their records to `out` and returns Ts (ms).
fn run_workload(o: &Options, w: &mut Workload<'_>, s_cap: f64, out: &mut Vec<Record>) -> f64 {
    // All configurations stay up, and the repetitions interleave them (seq,
    // manycore T1, T2, rayon T1, T2, chili T1, T2, then the plain join's T1,
    // T2 where there is one, seq, ...), so that a burst of load from other
    // tenants of the machine hits all of them alike.
    let rts = [runtime(o, 1), runtime(o, 2)];
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
    let est = run_one(0).as_secs_f64();
    for k in 1..configs {
        run_one(k);
    }
    let reps = reps_for(o.secs, est);
    let mut v: Vec<Vec<f64>> = (0..configs).map(|_| Vec::with_capacity(reps)).collect();
    for _ in 0..reps {
        for (k, vk) in v.iter_mut().enumerate() {
            vk.push(run_one(k).as_secs_f64() * 1e3);
        }
    }
    for rt in &rts {
        rt.shutdown();
    }
    let med: Vec<f64> = v.iter().map(|x| median(x).unwrap_or(f64::NAN)).collect();
    let ts = med[0];
    out.push(BENCH.record(&w.case, "sequential", "Ts", ts, "ms"));
    let names = ["manycore", "rayon", "chili", "manycore-plain-join"];
    for (name, t) in names.iter().zip(med[1..].chunks(2)) {
        let (t1, t2) = (t[0], t[1]);
        out.extend([
            BENCH.record(&w.case, name, "T1", t1, "ms"),
            BENCH.record(&w.case, name, "T2", t2, "ms"),
            BENCH.record(&w.case, name, "T1/Ts", t1 / ts, "ratio"),
            BENCH.record(&w.case, name, "T2/Ts", t2 / ts, "ratio"),
            BENCH.record(&w.case, name, "efficiency", (ts / t2) / s_cap, "ratio"),
        ]);
    }
    ts
}

/// Runs the parts chosen: every fork-join workload, then Table 1, Table 2
/// and the idle runtime; then the rayon crate on both rayon-cores.
fn run(opts: &Options, progress: &Progress) -> Vec<Record> {
    let mut out = Vec::new();
    if wanted(opts, "fork-join") {
        run_fork_join(opts, progress, &mut out);
    }
    if wanted(opts, "pariter") {
        pariter::run(opts, progress, &mut out);
    }
    out
}

/// Every workload on manycore-steal, rayon and chili, then Table 1, Table 2
/// and the idle runtime.
fn run_fork_join(opts: &Options, progress: &Progress, out: &mut Vec<Record>) {
    let q = opts.quick;
    progress.set_message("steal: parallel capacity");
    let s_cap = parallel_capacity(q);
    out.push(BENCH.record("capacity", "machine", "S_cap", s_cap, "ratio"));

    // fib(n), no cutoff.
    let n = if q { 27 } else { 30 };
    let case = format!("fib({n})");
    progress.set_message(&format!("steal: {case}"));
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
    run_workload(opts, &mut w, s_cap, out);
    {
        // Longest gap between two heartbeat polls while the tree runs.
        let rt = runtime(opts, 1);
        manycore_steal::measure_poll_gaps(true);
        let _ = on_rt(&rt, move || {
            manycore_steal::with_ctx(|s| fib_mc(s, black_box(n)))
        });
        let gap = manycore_steal::max_poll_gap();
        manycore_steal::measure_poll_gaps(false);
        let us = gap.as_secs_f64() * 1e6;
        out.push(BENCH.record(&case, "manycore", "max_poll_gap", us, "us"));
        rt.shutdown();
    }

    // knary(4, m, i).
    let m = if q { 7 } else { 10 };
    let mut knary_1000 = None;
    for i in [0, 100, 1000] {
        let p = Knary { k: 4, m, i };
        let case = format!("knary(4,{m},{i})");
        progress.set_message(&format!("steal: {case}"));
        let mut w = Workload {
            case,
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
        let ts = run_workload(opts, &mut w, s_cap, out);
        if i == 1000 {
            knary_1000 = Some((p, ts));
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
        progress.set_message(&format!("steal: {case}"));
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
        run_workload(opts, &mut w, s_cap, out);
    }
    drop(small);
    if let Ok(t) = Arc::try_unwrap(big) {
        drop_tree(t);
    }

    // Parallel quicksort of 10 million u64 (the copy is not timed).
    let qn = if q { 1_000_000 } else { 10_000_000 };
    progress.set_message(&format!("steal: quicksort({qn})"));
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
    run_workload(opts, &mut w, s_cap, out);

    progress.set_message("steal: table 1");
    table1(opts, out);
    if let Some((p, ts)) = knary_1000 {
        progress.set_message("steal: table 2");
        table2(opts, p, ts, out);
    }
    progress.set_message("steal: idle runtime");
    // CPU burnt by an attached, idle two-core runtime.
    let span = Duration::from_millis(if q { 500 } else { 2000 });
    let idle = idle_cpu_ms_per_s(Duration::from_millis(100), span, || {
        let rt = runtime(opts, 2);
        rt.install(|| manycore_steal::with_ctx(|s| fib_mc(s, 20)));
        Ok(rt)
    });
    out.extend(idle.ok().map(|ms| BENCH.record("idle", "manycore", "idle_cpu", ms, "ms/s")));
}

/// Runs `f` on core 0 of `rt` and returns how long it took there.
fn on_rt<R: Send + 'static>(rt: &Runtime, f: impl FnOnce() -> R + Send + 'static) -> Duration {
    rt.install(move || time(f))
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
    let ratios: Vec<f64> = (0..3)
        .map(|_| {
            let t1 = one(cpus.first().copied()).join().unwrap().as_secs_f64();
            let start = Instant::now();
            let (a, b) = (one(cpus.first().copied()), one(cpus.get(1).copied()));
            a.join().unwrap();
            b.join().unwrap();
            let t2 = start.elapsed().as_secs_f64();
            t1 / (t2 / 2.0)
        })
        .collect();
    median(&ratios).unwrap_or(f64::NAN)
}

/// The paper's Table 1: what a join costs when nobody steals, what promoting
/// a latent frame costs, and what a steal costs end to end.
fn table1(opts: &Options, out: &mut Vec<Record>) {
    const CASE: &str = "table1";
    let iters: u32 = if opts.quick { 2_000_000 } else { 10_000_000 };
    let secs = opts.secs / 4.0;
    // ns per iteration of a loop of `iters` timed by `f`.
    let per_iter = |f: &mut dyn FnMut() -> Duration| median_ms(secs, f) * 1e6 / f64::from(iters);
    let t_base = per_iter(&mut || {
        time(|| {
            for i in 0..iters {
                black_box((black_box(i), black_box(i)));
            }
        })
    });
    out.push(BENCH.record(CASE, "sequential", "call_pair", t_base, "ns"));
    // A join of two trivial closures, less the loop and the calls themselves.
    let mut join_cost = |imp: &str, f: &mut dyn FnMut() -> Duration| {
        let t = per_iter(f);
        out.push(BENCH.record(CASE, imp, "join_not_stolen", t - t_base, "ns"));
    };
    let rt = runtime(opts, 1);
    join_cost("manycore", &mut || {
        on_rt(&rt, move || {
            manycore_steal::with_ctx(|s| {
                for i in 0..iters {
                    black_box(s.join(|_| black_box(i), |_| black_box(i)));
                }
            })
        })
    });
    join_cost("manycore-plain-join", &mut || {
        on_rt(&rt, move || {
            for i in 0..iters {
                black_box(manycore_steal::join(|| black_box(i), || black_box(i)));
            }
        })
    });
    rt.shutdown();
    let p = rayon_pool(1);
    join_cost("rayon", &mut || {
        p.install(|| {
            time(|| {
                for i in 0..iters {
                    black_box(rayon::join(|| black_box(i), || black_box(i)));
                }
            })
        })
    });
    drop(p);
    let p = chili_pool(1);
    join_cost("chili", &mut || {
        let mut s = p.scope();
        time(|| {
            for i in 0..iters {
                black_box(s.join(|_| black_box(i), |_| black_box(i)));
            }
        })
    });
    drop(p);

    // Promotion (MuSE's t_spawn analog): claim demand, unlink, publish, take back.
    let v: Vec<f64> = (0..5)
        .map(|_| manycore_steal::probe::promotion_cost(iters / 20).as_secs_f64() * 1e9)
        .collect();
    let promotion = median(&v).unwrap_or(f64::NAN);
    out.push(BENCH.record(CASE, "manycore", "promotion", promotion, "ns"));

    // Steal, end to end: a join of two equal halves of busy work with a
    // heartbeat at every join, on two cores. Cost = wall time of the join -
    // the longer half as timed inside it, over the joins whose second half
    // was run by the other core (demand, promotion, wake-up, result, wake-up).
    let rt = runtime(opts, 2);
    let rounds = if opts.quick { 300 } else { 1000 };
    let stolen: Vec<f64> = rt.install(move || steal_costs(rounds, 20_000));
    rt.shutdown();
    let cost = median(&stolen).map_or(f64::NAN, |s| s * 1e9);
    out.push(BENCH.record(CASE, "manycore", "steal", cost, "ns"));
    let n = stolen.len() as f64;
    out.push(BENCH.record(CASE, "manycore", "steal_samples", n, "count"));
}

/// On a core of a 2-core runtime: `rounds` joins of two halves of `work`
/// spin steps with a heartbeat at every join; for each join whose second
/// half the other core ran, the wall time of the join minus its longer half
/// (seconds).
pub fn steal_costs(rounds: u32, work: u64) -> Vec<f64> {
    let old = manycore_steal::max_sequential();
    // On the core itself, so that it applies at once.
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
}

/// The paper's Table 2: knary(4, m, 1000) on two cores while a busy thread
/// competes for the second CPU; the ideal is the sum of throughputs, 1 + 1/2.
fn table2(opts: &Options, p: Knary, ts: f64, out: &mut Vec<Record>) {
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
    let rt = runtime(opts, 2);
    let t2 = median_ms(opts.secs, || {
        on_rt(&rt, move || manycore_steal::with_ctx(|s| knary_mc(s, p, 0)))
    });
    rt.shutdown();
    stop.store(true, Ordering::Relaxed);
    bg.join().unwrap();
    let s_max = 1.5;
    out.extend([
        BENCH.record(&case, "sequential", "Ts", ts, "ms"),
        BENCH.record(&case, "manycore", "T2", t2, "ms"),
        BENCH.record(&case, "manycore", "speedup", ts / t2, "ratio"),
        BENCH.record(&case, "ideal", "S_max", s_max, "ratio"),
        BENCH.record(&case, "manycore", "utilized", ts / t2 / s_max, "ratio"),
    ]);
}

/// The targets, from the records of one run. Sizes are the run's own: a
/// `--quick` run has smaller workloads than the targets were set for.
fn targets(recs: &[Record]) -> Vec<Target> {
    let get = |case: &str, imp: &str, metric: &str| find(recs, case, imp, metric);
    let cases = cases(recs);
    let with = |prefix: &str| {
        cases
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
    };
    let at_most = |what: String, value: Option<f64>, limit: f64| {
        Target::new(what, value, "x", Cmp::AtMost, limit)
    };
    let mut v = Vec::new();
    for case in with("fib(") {
        let ts = get(&case, "sequential", "Ts");
        for imp in ["manycore", "manycore-plain-join"] {
            let (t1, t2) = (get(&case, imp, "T1"), get(&case, imp, "T2"));
            v.push(at_most(format!("{case} {imp} T1/Ts"), ratio(t1, ts), 2.0));
            for (peer, limit) in [("rayon", 0.5), ("chili", 0.8)] {
                let other = get(&case, peer, "T2");
                let label = format!("{case} {imp} T2 / {peer} T2");
                v.push(at_most(label, ratio(t2, other), limit));
            }
            v.push(at_most(format!("{case} {imp} T2/Ts"), ratio(t2, ts), 1.5));
        }
    }
    for case in with("knary(").iter().filter(|c| c.ends_with(",1000)")) {
        let t1 = get(case, "manycore", "T1/Ts");
        v.push(at_most(format!("{case} manycore T1/Ts"), t1, 1.05));
        let e = get(case, "manycore", "efficiency");
        let label = format!("{case} manycore efficiency (Ts/T2)/S_cap");
        v.push(Target::new(label, e, "x", Cmp::AtLeast, 0.9));
    }
    for case in with("tree_sum(").iter().filter(|c| !c.starts_with("tree_sum(1023)")) {
        let t2 = ratio(get(case, "manycore", "T2"), get(case, "rayon", "T2"));
        v.push(at_most(format!("{case} manycore T2 / rayon T2"), t2, 0.5));
    }
    for case in ["knary(", "tree_sum(", "quicksort("].into_iter().flat_map(with) {
        let t2 = get(&case, "manycore", "T2/Ts");
        v.push(at_most(format!("{case} manycore T2/Ts"), t2, 1.0));
    }
    // The idle runtime's target, unless the run was the pariter part alone.
    let pariter_only = !recs.is_empty() && recs.iter().all(pariter::is_pariter);
    if !pariter_only {
        let idle = get("idle", "manycore", "idle_cpu");
        v.push(Target::new("idle runtime CPU", idle, "ms/s", Cmp::AtMost, 2.0));
    }
    v.extend(pariter::targets(recs));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_judges_each_line_from_the_records() {
        let r = |case: &str, imp: &str, metric: &str, v: f64| {
            BENCH.record(case, imp, metric, v, "ms")
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
        let s = BENCH.summary(&recs);
        assert!(
            s.contains("fib(30) manycore T1/Ts: 1.50x (target <= 2) pass"),
            "{s}"
        );
        assert!(
            s.contains("fib(30) manycore T2 / rayon T2: 0.20x (target <= 0.5) pass"),
            "{s}"
        );
        // 2.0 / 2.2 = 0.91 > 0.8
        assert!(
            s.contains("fib(30) manycore T2 / chili T2: 0.91x (target <= 0.8) FAIL"),
            "{s}"
        );
        assert!(
            s.contains("fib(30) manycore-plain-join T1/Ts: not measured"),
            "{s}"
        );
        assert!(
            s.contains("knary(4,10,0) manycore T2/Ts: 1.30x (target <= 1) FAIL"),
            "{s}"
        );
        assert!(
            s.contains("idle runtime CPU: 0.02 ms/s (target <= 2) pass"),
            "{s}"
        );
    }
}
