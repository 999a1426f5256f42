//! Fork-join with `manycore-steal`: Fibonacci numbers, computed three ways.
//!
//! ```text
//! cargo run --release -p manycore-steal --example join_fib [n]
//! ```
//!
//! * [`join`] on a [`ThreadPool`] of plain threads: write the recursion as
//!   if it were sequential, and put the two calls in `join`. While no worker
//!   is idle, a join costs a few instructions more than the two calls; when
//!   one is, it takes the biggest piece of work that is still waiting.
//! * The context form, [`with_ctx`] and [`Ctx::join`]: the same, with a
//!   small handle passed down the recursion, which makes deep joins cheaper.
//! * On a manycore runtime, [`StealExt::install`]: the runtime's cores are
//!   the workers, and they keep serving their messages while they fork.
//!
//! Outside a pool or runtime, `join` runs on the global pool (started on
//! first use) while the calling thread waits.
//! Workers only take work from each other when one of them is idle, so
//! small inputs often run on one worker: the steal counters show what
//! happened.

use manycore_rt::Runtime;
use manycore_steal::{join, with_ctx, Ctx, StealExt, ThreadPool};

/// fib with the plain `join`: the sequential recursion, forked.
fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// fib with the context form: each closure gets the `Ctx` of the worker that
/// runs it.
fn fib_ctx(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_ctx(s, n - 1), |s| fib_ctx(s, n - 2));
    a + b
}

/// The sequential recursion, to check the answers.
fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("n: a number"))
        .unwrap_or(30);
    let want = fib_seq(n);

    // Plain threads: the calling thread becomes worker 0 for the duration
    // of `install`, and the pool's other thread steals from it.
    let pool = ThreadPool::new(2);
    let got = pool.install(|| fib(n));
    assert_eq!(got, want);
    println!("thread pool, join:        fib({n}) = {got}");

    let got = pool.install(|| with_ctx(|s| fib_ctx(s, n)));
    assert_eq!(got, want);
    println!("thread pool, Ctx::join:   fib({n}) = {got}");
    println!("  steals: {:?}", pool.stats());

    // A manycore runtime of two cores: `install` runs the closure on core 0
    // and core 1 steals from it.
    let rt = Runtime::builder()
        .cores(2)
        .pin(false)
        .build()
        .expect("a runtime");
    let got = rt.install(move || with_ctx(|s| fib_ctx(s, n)));
    assert_eq!(got, want);
    println!("runtime, Ctx::join:       fib({n}) = {got}");
    println!("  steals: {:?}", manycore_steal::steal_stats(&rt));

    // No pool, no runtime: the same code runs sequentially.
    let got = fib(n.min(25));
    assert_eq!(got, fib_seq(n.min(25)));
    println!("no pool, join:            fib({}) = {got}", n.min(25));
}
