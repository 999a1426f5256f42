//! Probe `kickq`: how long latent work waits behind a long leaf. On a
//! 2-worker `ThreadPool`, `join(|| join(leaf(L), leaf(L)), leaf(S))`: the
//! idle worker takes the outer `b` (short) at once, comes back hungry while
//! the owner runs the first long leaf, and gets the inner `b` only when the
//! owner kicked (or, without kicks, after the leaf: about 2L in all).
//! Prints the median time of a run against L, and kicks per run.
//!
//! `cargo run --release -p manycore-probes --bin kickq -- [REPS=50] [L_US=5000]`
//!
//! `MANYCORE_KICK=0` turns kicks off for comparison.

use std::hint::black_box;
use std::time::{Duration, Instant};

use manycore_probes::{arg, median};
use manycore_steal::{join, ThreadPool};

/// Busy work for `d` (no join inside: a leaf).
fn leaf(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        for _ in 0..100 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

fn main() {
    let reps: usize = arg(1, 50);
    let l = Duration::from_micros(arg(2, 5000));
    let s = Duration::from_micros(50);
    let pool = ThreadPool::new(2);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        // Both workers idle and asleep before each run.
        std::thread::sleep(Duration::from_millis(2));
        let t = Instant::now();
        black_box(pool.install(|| join(|| join(|| leaf(l), || leaf(l)), || leaf(s))));
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let st = pool.stats();
    let kicks = st.kicks as f64 / reps as f64;
    let med = median(&times).unwrap_or(f64::NAN);
    let l_ms = l.as_secs_f64() * 1e3;
    println!(
        "kickq: L = {l_ms:.1} ms, median run {med:.2} ms ({:.2} L), kicks/run {kicks:.2}, \
         promotions/run {:.2}",
        med / l_ms,
        st.promotions as f64 / reps as f64
    );
}
