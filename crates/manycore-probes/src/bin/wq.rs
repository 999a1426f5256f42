//! Probe `wq`: one workload of `manycore bench steal`, sequential against
//! manycore-steal on runtimes of 1 and 2 cores (T1, T2), with interleaved
//! repetitions; prints the minimum and the median of each, the ratios to
//! the sequential median, and the steal counters of the 2-core runtime.
//!
//! `cargo run --release -p manycore-probes --bin wq -- WORKLOAD [REPS=21] [ONLY]`
//!
//! WORKLOAD is one of `fib N` (default, N=30), `pfib N` (fib through the
//! plain `join`), `tree N REPS` (tree sum of N nodes, REPS times; 1023,
//! 1000), `knary M I` (knary(4, M, I); 10, 1000) or `qsort N` (10 million;
//! here the copy of the input is inside the timing, unlike the bench).
//! ONLY = `seq`, `t1` or `t2` runs just that configuration (for `perf
//! record`).
//!
//! Knobs: `GAP_MS=n` sets the pause before each run (default 2; the bench's
//! is 5: a longer pause lets idle cores fall asleep); `PIN=1` pins the
//! cores; `MAXSEQ=n` fixes how many joins run between heartbeats; `BUSY=1`
//! runs a spinning thread pinned to the second CPU against the cores (the
//! bench's Table 2).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use manycore_cli::benches::steal::workloads::*;
use manycore_cli::measure::time;
use manycore_probes::{arg, arg_str, env_num, min_median, steal_runtime};
use manycore_steal::{with_ctx, StealExt};

/// A workload: sequential with `false`, through manycore-steal with `true`.
type Job = Arc<dyn Fn(bool) -> u64 + Send + Sync>;

/// The workload the arguments name, its label, and the index of the next argument.
fn job() -> (String, Job, usize) {
    match arg_str(1).as_deref() {
        Some("tree") => {
            let (n, r): (usize, u64) = (arg(2, 1023), arg(3, 1000));
            let t = Arc::new(build_tree(n, &mut 0));
            let job: Job = Arc::new(move |par| {
                if par {
                    with_ctx(|s| (0..r).map(|_| sum_mc(s, black_box(&t))).sum())
                } else {
                    (0..r).map(|_| sum_seq(black_box(&t))).sum()
                }
            });
            (format!("tree({n})x{r}"), job, 4)
        }
        Some("pfib") => {
            let n: u64 = arg(2, 30);
            let job: Job = Arc::new(move |par| {
                if par {
                    fib_mc_plain(black_box(n))
                } else {
                    fib_seq(black_box(n))
                }
            });
            (format!("plain fib({n})"), job, 3)
        }
        Some("qsort") => {
            let n: usize = arg(2, 10_000_000);
            let input = Arc::new(random_u64s(n));
            let job: Job = Arc::new(move |par| {
                let mut v = input.to_vec();
                if par {
                    with_ctx(|s| qsort_mc(s, &mut v));
                } else {
                    qsort_seq(&mut v);
                }
                v[n / 2]
            });
            (format!("quicksort({n})"), job, 3)
        }
        Some("knary") => {
            let p = Knary {
                k: 4,
                m: arg(2, 10),
                i: arg(3, 1000),
            };
            let job: Job = Arc::new(move |par| {
                if par {
                    with_ctx(|s| knary_mc(s, p, 0))
                } else {
                    knary_seq(p, 0)
                }
            });
            (format!("knary(4,{},{})", p.m, p.i), job, 4)
        }
        _ => {
            let n: u64 = arg(2, 30);
            let job: Job = Arc::new(move |par| {
                if par {
                    with_ctx(|s| fib_mc(s, black_box(n)))
                } else {
                    fib_seq(black_box(n))
                }
            });
            (format!("fib({n})"), job, 3)
        }
    }
}

fn main() {
    let (name, job, rest) = job();
    let reps: usize = arg(rest, 21);
    let only = arg_str(rest + 1);
    if let Some(n) = env_num("MAXSEQ") {
        manycore_steal::set_max_sequential(n);
    }
    let stop = Arc::new(AtomicBool::new(false));
    if std::env::var("BUSY").is_ok_and(|v| v == "1") {
        let stop = stop.clone();
        std::thread::spawn(move || {
            if let Some(&c) = manycore_sync::cpu::original().get(1) {
                let _ = manycore_sync::cpu::pin_current(c);
            }
            while !stop.load(Ordering::Relaxed) {
                black_box(idle(10_000, 1));
            }
        });
    }
    let rts = [1, 2].map(steal_runtime);
    let gap = Duration::from_millis(env_num("GAP_MS").unwrap_or(2));
    let mut t: [Vec<f64>; 3] = Default::default();
    for _ in 0..reps {
        for (k, tk) in t.iter_mut().enumerate() {
            if only.as_deref().is_some_and(|o| o != ["seq", "t1", "t2"][k]) {
                continue;
            }
            std::thread::sleep(gap);
            let d = if k == 0 {
                time(|| job(false))
            } else {
                let j = job.clone();
                rts[k - 1].install(move || time(|| j(true)))
            };
            tk.push(d.as_secs_f64() * 1e3);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let [s, t1, t2] = t.each_ref().map(|v| min_median(v));
    println!(
        "{name}: Ts {:.3}/{:.3}  T1 {:.3}/{:.3} ({:.2}x)  T2 {:.3}/{:.3} ({:.2}x Ts)  (min/med)  {:?}",
        s.0,
        s.1,
        t1.0,
        t1.1,
        t1.1 / s.1,
        t2.0,
        t2.1,
        t2.1 / s.1,
        manycore_steal::steal_stats(&rts[1])
    );
}
