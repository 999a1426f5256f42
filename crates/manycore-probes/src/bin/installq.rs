//! Probe `installq`: the per-job costs of a pool of 2 threads, on the real
//! rayon-core (the `rayon` crate's pool) and on manycore-steal's pool (what
//! manycore's rayon-core wraps), alternated round by round in one process.
//! What `manycore bench steal --only pariter` cannot separate: each of its
//! workloads is one `install` of a job that starts with idle thieves.
//!
//! `cargo run --release -p manycore-probes --bin installq -- [ROUNDS=30] [REPS=50]`
//!
//! `ONLY_IDLE=0` (rayon-core) or `ONLY_IDLE=1` (manycore) times only that
//! runtime's idle `install`s, `REPS` of them (for strace or perf).
//!
//! Rows (each a median over `REPS` jobs per round, then the median and the
//! interquartile range over rounds of the ratio manycore / rayon-core):
//!
//! - `install empty (idle)`: `install(|| ())` from the main thread after
//!   2 ms of quiet (the workers asleep): injection, the wake-up of a
//!   worker, the caller's wake-up at the end;
//! - `install empty (hot)`: the same back to back;
//! - `install 1ms job`: `install` of 1 ms of spinning, minus 1 ms;
//! - `join 2x0.5ms (in)`: inside `install` (timed there, as the bench
//!   times its workloads), a `join` of two 0.5 ms spins, minus 0.5 ms: how
//!   soon the idle thief gets the second half and how soon the owner sees
//!   it back;
//! - `join serial share %`: the share of those joins that took 0.9 ms or
//!   more (the second half ran after the first: nobody took it; its ratio
//!   is meaningless when rayon-core's share is 0);
//! - `bridge sum 1e7 (in)`: inside `install`, rayon's `bridge` splitting
//!   (its `Splitter`/`LengthSplitter`, `current_num_threads` and
//!   `FnContext::migrated`) over a sum of `3x + 1` for 10^7 u64, with the
//!   number of leaves it made;
//! - `bridge sum 1e5 (in)`: the same over 10^5.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use manycore_probes::arg;

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

static LEAVES: AtomicUsize = AtomicUsize::new(0);

/// rayon's `bridge_producer_consumer` over a slice summed: its splitter
/// (`Splitter`: `current_num_threads()` splits, reset on migration;
/// `LengthSplitter` with min 1), written for one `join_context`.
macro_rules! bridge_sum {
    ($name:ident, $join:path, $threads:path) => {
        fn $name(v: &[u64]) -> u64 {
            fn helper(v: &[u64], migrated: bool, mut splits: usize) -> u64 {
                let split = if v.len() / 2 >= 1 {
                    if migrated {
                        splits = ($threads)().max(splits / 2);
                        true
                    } else if splits > 0 {
                        splits /= 2;
                        true
                    } else {
                        false
                    }
                } else {
                    false
                };
                if split {
                    let (l, r) = v.split_at(v.len() / 2);
                    let (a, b) = $join(
                        |c| helper(l, c.migrated(), splits),
                        |c| helper(r, c.migrated(), splits),
                    );
                    a + b
                } else {
                    LEAVES.fetch_add(1, Ordering::Relaxed);
                    v.iter().map(|&x| 3 * x + 1).sum()
                }
            }
            helper(v, false, ($threads)())
        }
    };
}

bridge_sum!(sum_rc, rayon::join_context, rayon::current_num_threads);
bridge_sum!(
    sum_mc,
    manycore_steal::join_context,
    manycore_steal::current_num_threads
);

/// One runtime under test: `install` and the bridge on it.
trait Rt {
    fn install_unit(&self, f: &(dyn Fn() + Sync));
    fn join_halves(&self, d: Duration) -> Duration;
    fn sum(&self, v: &[u64]) -> (Duration, u64);
}

struct Rc(rayon::ThreadPool);
struct Mc(manycore_steal::ThreadPool);

impl Rt for Rc {
    fn install_unit(&self, f: &(dyn Fn() + Sync)) {
        self.0.install(f)
    }
    fn join_halves(&self, d: Duration) -> Duration {
        self.0.install(|| {
            let t = Instant::now();
            rayon::join(|| spin(d), || spin(d));
            t.elapsed()
        })
    }
    fn sum(&self, v: &[u64]) -> (Duration, u64) {
        self.0.install(|| {
            let t = Instant::now();
            let s = sum_rc(black_box(v));
            (t.elapsed(), s)
        })
    }
}

impl Rt for Mc {
    fn install_unit(&self, f: &(dyn Fn() + Sync)) {
        self.0.install(f)
    }
    fn join_halves(&self, d: Duration) -> Duration {
        self.0.install(|| {
            let t = Instant::now();
            manycore_steal::join(|| spin(d), || spin(d));
            t.elapsed()
        })
    }
    fn sum(&self, v: &[u64]) -> (Duration, u64) {
        self.0.install(|| {
            let t = Instant::now();
            let s = sum_mc(black_box(v));
            (t.elapsed(), s)
        })
    }
}

const ROWS: [&str; 7] = [
    "install empty (idle)",
    "install empty (hot)",
    "install 1ms job",
    "join 2x0.5ms (in)",
    "join serial share %",
    "bridge sum 1e7 (in)",
    "bridge sum 1e5 (in)",
];

/// One round of every row on `rt`: the median of each, in us, and the
/// leaves the bridge made (1e7, 1e5), per job.
fn round(rt: &dyn Rt, reps: usize, big: &[u64], small: &[u64]) -> ([f64; 7], [f64; 2]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut out = [0.0; 7];
    let mut leaves = [0.0; 2];
    out[0] = med((0..reps)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(2));
            let t = Instant::now();
            rt.install_unit(&|| {});
            us(t.elapsed())
        })
        .collect());
    out[1] = med((0..reps)
        .map(|_| {
            let t = Instant::now();
            rt.install_unit(&|| {});
            us(t.elapsed())
        })
        .collect());
    out[2] = med((0..reps)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(2));
            let t = Instant::now();
            rt.install_unit(&|| spin(Duration::from_millis(1)));
            us(t.elapsed()) - 1000.0
        })
        .collect());
    let joins: Vec<f64> = (0..reps)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(2));
            us(rt.join_halves(Duration::from_micros(500))) - 500.0
        })
        .collect();
    // Serial: the second half started after the first was done (or nearly).
    out[4] = 100.0 * joins.iter().filter(|&&x| x > 400.0).count() as f64 / reps as f64;
    out[3] = med(joins);
    for (k, v) in [(5, big), (6, small)] {
        LEAVES.store(0, Ordering::Relaxed);
        let n = v.len() as u64;
        let want = 3 * (n * (n - 1) / 2) + n;
        let reps_here = if k == 5 { reps.min(10) } else { reps };
        out[k] = med((0..reps_here)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                let (d, s) = rt.sum(v);
                assert_eq!(s, want, "bridge sum");
                us(d)
            })
            .collect());
        leaves[k - 5] = LEAVES.load(Ordering::Relaxed) as f64 / reps_here as f64;
    }
    (out, leaves)
}

fn quartiles(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

fn main() {
    let rounds: usize = arg(1, 30);
    let reps: usize = arg(2, 50);
    let rc = Rc(rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("rayon pool"));
    let mc = Mc(manycore_steal::ThreadPool::new(2));
    let big: Vec<u64> = (0..10_000_000).collect();
    let small: Vec<u64> = (0..100_000).collect();
    let rts: [(&str, &dyn Rt); 2] = [("rayon-core", &rc), ("manycore", &mc)];
    if let Some(which) = manycore_probes::env_num::<usize>("ONLY_IDLE") {
        // One runtime's idle installs alone (0: rayon-core, 1: manycore),
        // for strace or perf.
        let rt = rts[which.min(1)].1;
        let mut v: Vec<f64> = (0..reps)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                let t = Instant::now();
                rt.install_unit(&|| {});
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        v.sort_by(f64::total_cmp);
        println!(
            "{}: idle install median {:.1} us",
            rts[which.min(1)].0,
            v[v.len() / 2]
        );
        return;
    }
    // Warm-up.
    for (_, rt) in rts {
        round(rt, 3, &big, &small);
    }
    let mut vals = vec![[Vec::new(), Vec::new()]; ROWS.len()];
    let mut ratios = vec![Vec::new(); ROWS.len()];
    let mut leaves = [[0.0; 2]; 2];
    for r in 0..rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut got = [[0.0; 7]; 2];
        for i in order {
            let (o, l) = round(rts[i].1, reps, &big, &small);
            got[i] = o;
            leaves[i] = l;
        }
        for k in 0..ROWS.len() {
            vals[k][0].push(got[0][k]);
            vals[k][1].push(got[1][k]);
            ratios[k].push(got[1][k] / got[0][k]);
        }
        eprint!(".");
    }
    eprintln!();
    println!(
        "{rounds} rounds x {reps} jobs, alternated; medians over rounds of per-round medians (us)"
    );
    println!(
        "{:<22} {:>11} {:>11} {:>7} {:>15}",
        "row", "rayon-core", "manycore", "ratio", "ratio IQR"
    );
    for k in 0..ROWS.len() {
        let (_, a, _) = quartiles(&vals[k][0]);
        let (_, b, _) = quartiles(&vals[k][1]);
        let (q1, m, q3) = quartiles(&ratios[k]);
        println!(
            "{:<22} {a:>11.1} {b:>11.1} {m:>7.3} {:>15}",
            ROWS[k],
            format!("{q1:.3}-{q3:.3}")
        );
    }
    println!(
        "bridge leaves per sum (last round): 1e7 rayon-core {} manycore {}; 1e5 rayon-core {} manycore {}",
        leaves[0][0], leaves[1][0], leaves[0][1], leaves[1][1]
    );
}
