//! Dev probe: longest heartbeat gap of fib on a 1-core runtime.
use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{with_ctx, Ctx, StealExt};
use std::time::Duration;

fn fib_ctx(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_ctx(s, n - 1), |s| fib_ctx(s, n - 2));
    a + b
}

fn main() {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .build()
        .unwrap();
    manycore_steal::attach(&rt).unwrap();
    for _ in 0..5 {
        manycore_steal::measure_poll_gaps(true);
        let t = std::time::Instant::now();
        rt.install(|| with_ctx(|s| fib_ctx(s, 30)));
        println!("{:?} gap {:?}", t.elapsed(), manycore_steal::max_poll_gap());
    }
}
