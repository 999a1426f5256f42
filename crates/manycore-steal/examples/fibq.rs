//! Quick timing of fib for development: `cargo run --release -p manycore-steal --example fibq [n] [ms]`.
use manycore_steal::{join, with_ctx, Ctx, ThreadPool};
use std::time::Instant;

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}
fn fib_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib_join(n - 1), || fib_join(n - 2));
    a + b
}
fn fib_ctx(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(move |s| fib_ctx(s, n - 1), move |s| fib_ctx(s, n - 2));
    a + b
}

fn med(mut f: impl FnMut() -> u64) -> f64 {
    let mut v: Vec<f64> = (0..15)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn mins(n: u64) {
    let mut m = [f64::MAX; 3];
    for _ in 0..40 {
        let fs: [&dyn Fn() -> u64; 3] = [&|| fib_seq(n), &|| fib_join(n), &|| {
            with_ctx(|s| fib_ctx(s, n))
        }];
        for (k, f) in fs.iter().enumerate() {
            let t = Instant::now();
            std::hint::black_box(f());
            m[k] = m[k].min(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!(
        "min: Ts {:.2}  join {:.2} ({:.2}x)  ctx {:.2} ({:.2}x)",
        m[0],
        m[1],
        m[1] / m[0],
        m[2],
        m[2] / m[0]
    );
}

fn main() {
    if std::env::var("MINS").is_ok() {
        return mins(std::hint::black_box(
            std::env::args().nth(1).map_or(30, |s| s.parse().unwrap()),
        ));
    }
    let n: u64 = std::env::args().nth(1).map_or(30, |s| s.parse().unwrap());
    if let Some(ms) = std::env::args().nth(2) {
        manycore_steal::set_max_sequential(ms.parse().unwrap());
    }
    let n = std::hint::black_box(n);
    println!("Ts        {:.2} ms", med(|| fib_seq(n)));
    println!("join seq  {:.2} ms", med(|| fib_join(n)));
    println!("ctx seq   {:.2} ms", med(|| with_ctx(|s| fib_ctx(s, n))));
    for w in [1, 2] {
        let pool = ThreadPool::builder().workers(w).build();
        println!("T{w} join   {:.2} ms", med(|| pool.install(|| fib_join(n))));
        println!(
            "T{w} ctx    {:.2} ms  {:?}",
            med(|| pool.install(|| with_ctx(|s| fib_ctx(s, n)))),
            pool.stats()
        );
    }
}
