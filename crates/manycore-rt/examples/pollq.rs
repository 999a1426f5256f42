//! Dev probe: the cost of one empty scheduling round (`poll_once`) on a core.
use manycore_rt::{IdlePolicy, Runtime};
use std::time::Instant;

fn main() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Poll)
        .build()
        .unwrap();
    let ns = rt
        .core(0)
        .call(|| {
            let n = 5_000_000;
            let t = Instant::now();
            for _ in 0..n {
                std::hint::black_box(manycore_rt::poll_once());
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .wait()
        .unwrap();
    println!("empty poll_once: {ns:.1} ns");
    rt.shutdown();
}
