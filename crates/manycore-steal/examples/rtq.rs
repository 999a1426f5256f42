//! Dev probe: fib on a manycore runtime with 1 and 2 cores, with steal counters.
use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{with_ctx, Ctx, StealExt};
use std::time::{Duration, Instant};

fn fib_ctx(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_ctx(s, n - 1), |s| fib_ctx(s, n - 2));
    a + b
}
fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(30, |s| s.parse().unwrap());
    if let Some(ms) = std::env::args().nth(2) {
        manycore_steal::set_max_sequential(ms.parse().unwrap());
    }
    let mut v: Vec<f64> = (0..11)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(fib_seq(std::hint::black_box(n)));
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    println!("Ts {:.2} ms", v[5]);
    for cores in [1, 2] {
        let rt = Runtime::builder()
            .cores(cores)
            .idle(IdlePolicy::Hybrid {
                spin: Duration::from_micros(50),
            })
            .pin(true)
            .build()
            .unwrap();
        let mut v: Vec<f64> = (0..11)
            .map(|_| {
                rt.install(move || {
                    let t = Instant::now();
                    std::hint::black_box(with_ctx(|s| fib_ctx(s, n)));
                    t.elapsed().as_secs_f64() * 1e3
                })
            })
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let mut w: Vec<f64> = (0..11)
            .map(|_| {
                rt.install(move || {
                    let t = Instant::now();
                    std::hint::black_box(fib_seq(std::hint::black_box(n)));
                    t.elapsed().as_secs_f64() * 1e3
                })
            })
            .collect();
        w.sort_by(|a, b| a.total_cmp(b));
        println!("seq on core0 {:.2} ms", w[5]);
        let mut w: Vec<f64> = (0..11)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(with_ctx(|s| fib_ctx(s, std::hint::black_box(n))));
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        w.sort_by(|a, b| a.total_cmp(b));
        println!("ctx on main {:.2} ms", w[5]);
        println!(
            "T{cores} {:.2} ms  {:?}  all {:?}",
            v[5],
            manycore_steal::steal_stats(&rt),
            v.iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
        rt.shutdown();
    }
}
