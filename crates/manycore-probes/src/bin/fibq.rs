//! Probe `fibq`: fib(n) sequentially and through manycore-steal's two join
//! forms (the plain `join` and the context `Ctx::join`), on the calling
//! thread and on thread pools of 1 and 2 workers; prints the median of 15
//! runs of each (ms) and the pools' steal counters.
//!
//! `cargo run --release -p manycore-probes --bin fibq -- [N=30] [MAX_SEQUENTIAL]`
//!
//! `MAX_SEQUENTIAL` sets how many joins run between heartbeats. Knob:
//! `MINS=1` prints instead the minimum of 40 interleaved runs of the three
//! forms on the calling thread, with their ratios to the sequential time.

use std::hint::black_box;

use manycore_cli::benches::steal::workloads::{fib_mc, fib_mc_plain, fib_seq};
use manycore_cli::measure::time;
use manycore_probes::{arg, arg_str, env_set, median};
use manycore_steal::{with_ctx, ThreadPool};

/// Median of 15 runs of `f`, in ms.
fn med(mut f: impl FnMut() -> u64) -> f64 {
    let v: Vec<f64> = (0..15).map(|_| time(&mut f).as_secs_f64() * 1e3).collect();
    median(&v).unwrap_or(f64::NAN)
}

/// The minimum of 40 interleaved runs of each form, in ms.
fn mins(n: u64) {
    let mut m = [f64::MAX; 3];
    let fs: [&dyn Fn() -> u64; 3] = [&|| fib_seq(n), &|| fib_mc_plain(n), &|| {
        with_ctx(|s| fib_mc(s, n))
    }];
    for _ in 0..40 {
        for (k, f) in fs.iter().enumerate() {
            m[k] = m[k].min(time(f).as_secs_f64() * 1e3);
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
    let n = black_box(arg(1, 30u64));
    if env_set("MINS") {
        return mins(n);
    }
    if let Some(ms) = arg_str(2) {
        manycore_steal::set_max_sequential(ms.parse().expect("MAX_SEQUENTIAL: a number"));
    }
    println!("Ts        {:.2} ms", med(|| fib_seq(n)));
    println!("join seq  {:.2} ms", med(|| fib_mc_plain(n)));
    println!("ctx seq   {:.2} ms", med(|| with_ctx(|s| fib_mc(s, n))));
    for w in [1, 2] {
        let pool = ThreadPool::builder().workers(w).build();
        println!(
            "T{w} join   {:.2} ms",
            med(|| pool.install(|| fib_mc_plain(n)))
        );
        println!(
            "T{w} ctx    {:.2} ms  {:?}",
            med(|| pool.install(|| with_ctx(|s| fib_mc(s, n)))),
            pool.stats()
        );
    }
}
