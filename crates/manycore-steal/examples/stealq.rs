//! Dev probe: end-to-end steal cost (as `bench steal` table1 measures it).
use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::StealExt;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn spin_work(iters: u64) -> u64 {
    let mut x = 1u64;
    for _ in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}
fn time<R>(f: impl FnOnce() -> R) -> Duration {
    let t = Instant::now();
    black_box(f());
    t.elapsed()
}

fn main() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .build()
        .unwrap();
    manycore_steal::attach(&rt).unwrap();
    let (mut v, rounds) = rt.install(move || {
        manycore_steal::set_max_sequential(1);
        let mut v = Vec::new();
        let mut n = 0;
        for _ in 0..1000 {
            let before = manycore_steal::current_stats().unwrap_or_default();
            let t = Instant::now();
            let (ta, tb) =
                manycore_steal::join(|| time(|| spin_work(20_000)), || time(|| spin_work(20_000)));
            let d = t.elapsed();
            let after = manycore_steal::current_stats().unwrap_or_default();
            n += 1;
            if after.promotions > before.promotions && after.reclaims == before.reclaims {
                v.push(d.saturating_sub(ta.max(tb)).as_secs_f64() * 1e9);
            }
        }
        (v, n)
    });
    v.sort_by(|a, b| a.total_cmp(b));
    println!(
        "stolen {}/{rounds}: p10 {:.0} p50 {:.0} p90 {:.0} ns  {:?}",
        v.len(),
        v[v.len() / 10],
        v[v.len() / 2],
        v[v.len() * 9 / 10],
        manycore_steal::steal_stats(&rt)
    );
}
