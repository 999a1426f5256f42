//! `bench steal`'s parallel-iterator program: workloads of rayon's own
//! demos, run through the `rayon` crate on a pool of `--threads` threads,
//! one timed run of each, printed as one JSON record per line in the shape
//! of `manycore bench`'s records. The same source is built twice (see the
//! manifests in on-rayon-core/ and on-manycore/): once on the real
//! rayon-core and once with rayon-core patched to manycore's, so the
//! records name the rayon-core by the package that was built.
//!
//! ```text
//! pariter-on-manycore --threads 2 [--quick] [--only CASE,...]
//! ```
//!
//! The workloads (sizes with `--quick` in brackets):
//! - `sum`: `v.par_iter().map(..).sum()` over 10^7 u64 [10^5];
//! - `collect`: `v.par_iter().map(..).collect::<Vec<_>>()` over the same;
//! - `par_sort`, `par_sort_unstable`: of 10^7 pseudo-random u64 [10^5];
//! - `quicksort`: rayon-demo's quicksort in its shape (written here, not
//!   copied: rayon-demo is not published): Lomuto partition around the last
//!   element, the two parts in a recursive `rayon::join`, sequential below
//!   5 * 1024 elements; 10^7 pseudo-random u32 [10^5];
//! - `matmul`: rayon-demo's Z-order matrix multiply in its shape: square
//!   matrices of side 512 [128] laid out in Z order, split in quarters, the
//!   eight quarter products in nested joins (half of them into a scratch
//!   matrix), 32 x 32 blocks multiplied sequentially, then the scratch added
//!   into the result with `par_iter_mut().zip(..).for_each(..)`.
//!
//! Each workload checks its result (the sum against its closed form, the
//! collected vector element by element, the sorts for order and for the
//! sum of their elements, the product by Freivalds' check with an exact
//! integer vector) and the program exits with status 1 on a mismatch.
//! Inputs are made (and copied) outside the timed part; a warm-up pass at
//! the quick size runs every workload once first.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use rayon::prelude::*;

/// The rayon-core this binary was built on, from its package's name.
fn impl_name() -> &'static str {
    match env!("CARGO_PKG_NAME") {
        "pariter-on-manycore" => "rayon-on-manycore",
        _ => "rayon-on-rayon-core",
    }
}

/// The workloads, in the order they run.
const CASES: [&str; 6] = [
    "sum",
    "collect",
    "par_sort",
    "par_sort_unstable",
    "quicksort",
    "matmul",
];

struct Args {
    threads: usize,
    quick: bool,
    only: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: std::env::var("PARITER_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
        quick: false,
        only: CASES.iter().map(|c| c.to_string()).collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--threads" => {
                let v = it.next().ok_or("--threads needs a number")?;
                a.threads = v
                    .parse()
                    .map_err(|_| format!("--threads {v}: not a number"))?;
            }
            "--quick" => a.quick = true,
            "--only" => {
                let v = it.next().ok_or("--only needs a list")?;
                a.only = v.split(',').map(|s| s.trim().to_string()).collect();
                if let Some(bad) = a.only.iter().find(|c| !CASES.contains(&c.as_str())) {
                    return Err(format!("--only: unknown case {bad} (cases: {CASES:?})"));
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok(a)
}

/// Sizes: elements of the vectors, and the side of the matrices.
#[derive(Clone, Copy)]
struct Sizes {
    n: usize,
    side: usize,
}

const FULL: Sizes = Sizes {
    n: 10_000_000,
    side: 512,
};
const QUICK: Sizes = Sizes {
    n: 100_000,
    side: 128,
};

/// The record's case: the workload and its size.
fn case_name(case: &str, s: Sizes) -> String {
    match case {
        "sum" => format!("par_iter map sum({})", s.n),
        "collect" => format!("par_iter map collect({})", s.n),
        "quicksort" => format!("demo quicksort({})", s.n),
        "matmul" => format!("demo matmulz({0}x{0})", s.side),
        sort => format!("{sort}({})", s.n),
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pariter: {e}");
            return ExitCode::from(2);
        }
    };
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pariter: no pool of {} threads: {e}", args.threads);
            return ExitCode::from(2);
        }
    };
    let sizes = if args.quick { QUICK } else { FULL };
    let cases: Vec<&str> = CASES
        .iter()
        .copied()
        .filter(|c| args.only.iter().any(|o| o == c))
        .collect();
    // Warm-up: every workload once at the quick size (threads started, code
    // paged in), not recorded.
    for case in &cases {
        if let Err(e) = pool.install(|| run_case(case, QUICK)) {
            eprintln!("pariter: {case} (warm-up): {e}");
            return ExitCode::from(1);
        }
    }
    let metric = format!("T{}", args.threads);
    for case in &cases {
        match pool.install(|| run_case(case, sizes)) {
            Ok(ms) => println!(
                "{{\"bench\":\"steal\",\"case\":\"{}\",\"impl\":\"{}\",\"metric\":\"{metric}\",\"value\":{ms},\"unit\":\"ms\"}}",
                case_name(case, sizes),
                impl_name(),
            ),
            Err(e) => {
                eprintln!("pariter: {case}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// Runs one workload once, on the current pool; its time in ms, or what
/// was wrong with its result.
fn run_case(case: &str, s: Sizes) -> Result<f64, String> {
    match case {
        "sum" => {
            let v: Vec<u64> = (0..s.n as u64).collect();
            let t = Instant::now();
            let sum: u64 = black_box(&v).par_iter().map(|&x| 3 * x + 1).sum();
            let ms = ms_since(t);
            let n = s.n as u64;
            // sum of 3x + 1 for x in 0..n
            let want = 3 * (n * (n - 1) / 2) + n;
            check(sum == want, || format!("sum {sum}, expected {want}"))?;
            Ok(ms)
        }
        "collect" => {
            let v: Vec<u64> = (0..s.n as u64).collect();
            let t = Instant::now();
            let out: Vec<u64> = black_box(&v).par_iter().map(|&x| 3 * x + 1).collect();
            let ms = ms_since(t);
            let ok =
                out.len() == s.n && out.iter().enumerate().all(|(i, &y)| y == 3 * i as u64 + 1);
            check(ok, || "collected vector differs from 3i + 1".into())?;
            Ok(ms)
        }
        "par_sort" | "par_sort_unstable" => {
            let mut v = random_u64s(s.n);
            let want = v.iter().fold(0u64, |a, &x| a.wrapping_add(x));
            let t = Instant::now();
            if case == "par_sort" {
                v.par_sort();
            } else {
                v.par_sort_unstable();
            }
            let ms = ms_since(t);
            check_sorted(&v, want)?;
            Ok(ms)
        }
        "quicksort" => {
            let mut v: Vec<u32> = random_u64s(s.n)
                .into_iter()
                .map(|x| (x >> 32) as u32)
                .collect();
            let want = v.iter().fold(0u64, |a, &x| a.wrapping_add(u64::from(x)));
            let t = Instant::now();
            quick_sort::<Parallel, u32>(&mut v);
            let ms = ms_since(t);
            let ok = v.windows(2).all(|w| w[0] <= w[1]);
            let got = v.iter().fold(0u64, |a, &x| a.wrapping_add(u64::from(x)));
            check(ok && got == want, || {
                "quicksort: not sorted, or elements changed".into()
            })?;
            Ok(ms)
        }
        "matmul" => {
            let len = s.side * s.side;
            // Small integers, so that every sum is exact in f32.
            let a: Vec<f32> = (0..len).map(|i| (i % 7) as f32).collect();
            let b: Vec<f32> = (0..len).map(|i| ((i * 5 + 3) % 11) as f32 - 5.0).collect();
            let mut d = vec![0f32; len];
            let t = Instant::now();
            matmulz(&a, &b, &mut d);
            let ms = ms_since(t);
            check(freivalds(&a, &b, &d, s.side), || {
                "matmul: the product fails Freivalds' check".into()
            })?;
            Ok(ms)
        }
        other => Err(format!("unknown case {other}")),
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn check(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

fn check_sorted(v: &[u64], want_sum: u64) -> Result<(), String> {
    let sorted = v.windows(2).all(|w| w[0] <= w[1]);
    let sum = v.iter().fold(0u64, |a, &x| a.wrapping_add(x));
    check(sorted && sum == want_sum, || {
        "sort: not sorted, or elements changed".into()
    })
}

/// xorshift64: the same pseudo-random input in every run.
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

// ---- rayon-demo's quicksort, in its shape ----

/// How the two halves run: in parallel, or one after the other.
trait Joiner {
    fn is_parallel() -> bool;
    fn join<A, RA, B, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send;
}

struct Parallel;
struct Sequential;

impl Joiner for Parallel {
    fn is_parallel() -> bool {
        true
    }
    fn join<A, RA, B, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        rayon::join(a, b)
    }
}

impl Joiner for Sequential {
    fn is_parallel() -> bool {
        false
    }
    fn join<A, RA, B, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        (a(), b())
    }
}

/// Below this many elements the parallel sort goes sequential.
const QSORT_SEQ_BELOW: usize = 5 * 1024;

fn quick_sort<J: Joiner, T: PartialOrd + Send>(v: &mut [T]) {
    if v.len() < 2 {
        return;
    }
    if J::is_parallel() && v.len() <= QSORT_SEQ_BELOW {
        return quick_sort::<Sequential, T>(v);
    }
    let mid = lomuto(v);
    let (lo, hi) = v.split_at_mut(mid);
    J::join(
        || quick_sort::<J, T>(lo),
        || quick_sort::<J, T>(&mut hi[1..]),
    );
}

/// Partitions around the last element; returns where it ends up.
fn lomuto<T: PartialOrd>(v: &mut [T]) -> usize {
    let last = v.len() - 1;
    let mut store = 0;
    for k in 0..last {
        if v[k] <= v[last] {
            v.swap(store, k);
            store += 1;
        }
    }
    v.swap(store, last);
    store
}

// ---- rayon-demo's Z-order matrix multiply, in its shape ----

/// Matrices of at most this many elements (32 x 32) are multiplied
/// sequentially.
const BLOCK: usize = 32 * 32;

/// The four quarters of a Z-order matrix (top left, top right, bottom
/// left, bottom right): its four consecutive quarters.
fn quarters(m: &[f32]) -> [&[f32]; 4] {
    let q = m.len() / 4;
    let (x, y) = m.split_at(2 * q);
    let (m0, m1) = x.split_at(q);
    let (m2, m3) = y.split_at(q);
    [m0, m1, m2, m3]
}

fn quarters_mut(m: &mut [f32]) -> [&mut [f32]; 4] {
    let q = m.len() / 4;
    let (x, y) = m.split_at_mut(2 * q);
    let (m0, m1) = x.split_at_mut(q);
    let (m2, m3) = y.split_at_mut(q);
    [m0, m1, m2, m3]
}

/// Row `i`, column `j` of a Z-order matrix: their bits interleaved (i's in
/// the odd places).
fn z_index(i: usize, j: usize) -> usize {
    let mut z = 0;
    let mut bit = 0;
    while (i | j) >> bit != 0 {
        z |= ((j >> bit) & 1) << (2 * bit);
        z |= ((i >> bit) & 1) << (2 * bit + 1);
        bit += 1;
    }
    z
}

/// dest = a * b, sequentially, for Z-order matrices of side `side`.
fn seq_matmulz(a: &[f32], b: &[f32], dest: &mut [f32]) {
    let side = (a.len() as f64).sqrt() as usize;
    // Row-major copies of the block, then the plain triple loop.
    let mut ra = vec![0f32; a.len()];
    let mut rb = vec![0f32; b.len()];
    for i in 0..side {
        for j in 0..side {
            ra[i * side + j] = a[z_index(i, j)];
            rb[i * side + j] = b[z_index(i, j)];
        }
    }
    for i in 0..side {
        for j in 0..side {
            let mut sum = 0f32;
            for k in 0..side {
                sum += ra[i * side + k] * rb[k * side + j];
            }
            dest[z_index(i, j)] = sum;
        }
    }
}

/// dest = a * b for Z-order square matrices whose side is a power of two:
/// the eight quarter products in nested joins, then the scratch quarters
/// added in.
fn matmulz(a: &[f32], b: &[f32], dest: &mut [f32]) {
    if a.len() <= BLOCK {
        return seq_matmulz(a, b, dest);
    }
    let mut scratch = vec![0f32; dest.len()];
    let [a0, a1, a2, a3] = quarters(a);
    let [b0, b1, b2, b3] = quarters(b);
    {
        let [d0, d1, d2, d3] = quarters_mut(dest);
        let [s0, s1, s2, s3] = quarters_mut(&mut scratch);
        // d = [a0 a1; a2 a3] * [b0 b1; b2 b3]: each quarter of d is the sum
        // of two products, one into d and one into the scratch.
        rayon::join(
            || {
                rayon::join(
                    || rayon::join(|| matmulz(a0, b0, d0), || matmulz(a0, b1, d1)),
                    || rayon::join(|| matmulz(a2, b0, d2), || matmulz(a2, b1, d3)),
                )
            },
            || {
                rayon::join(
                    || rayon::join(|| matmulz(a1, b2, s0), || matmulz(a1, b3, s1)),
                    || rayon::join(|| matmulz(a3, b2, s2), || matmulz(a3, b3, s3)),
                )
            },
        );
    }
    dest.par_iter_mut()
        .zip(scratch.par_iter())
        .for_each(|(d, s)| *d += *s);
}

/// Freivalds' check of d = a * b with one vector x of small integers:
/// d x == a (b x), exactly (every figure is an integer well inside f64's
/// and f32's exact range).
fn freivalds(a: &[f32], b: &[f32], d: &[f32], side: usize) -> bool {
    let x: Vec<f64> = (0..side).map(|i| ((i * 3) % 5) as f64 - 2.0).collect();
    let mul = |m: &[f32], v: &[f64]| -> Vec<f64> {
        (0..side)
            .map(|i| (0..side).map(|j| f64::from(m[z_index(i, j)]) * v[j]).sum())
            .collect()
    };
    mul(d, &x) == mul(a, &mul(b, &x))
}
