//! Probe `pollq`: the cost of one empty scheduling round (`poll_once`) on a
//! core of a 2-core polling runtime, averaged over 5 million rounds.
//!
//! `cargo run --release -p manycore-probes --bin pollq`
//!
//! No knobs.

use std::time::Instant;

use manycore_rt::{IdlePolicy, Runtime};

fn main() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Poll)
        .build()
        .expect("runtime");
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
        .expect("probe");
    println!("empty poll_once: {ns:.1} ns");
    rt.shutdown();
}
