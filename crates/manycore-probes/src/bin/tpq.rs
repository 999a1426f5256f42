//! Probe `tpq`: one-way throughput of fire-and-forget `spawn`s from core 0
//! to core 1 of a 2-core runtime (the throughput row of `manycore bench
//! pingpong`, alone, for `perf record`). Prints the median and the maximum
//! over batches, in millions of messages per second.
//!
//! `cargo run --release -p manycore-probes --bin tpq -- [SECS=3] [BATCH=65536]`
//!
//! Knobs: `PIN=1` pins the cores; `POLL=1` idles by polling instead of the
//! hybrid policy; `CAP=n` sets the ring capacity.

use std::cell::Cell;
use std::time::{Duration, Instant};

use manycore_probes::{arg, env_set, hybrid, median, runtime};
use manycore_rt::IdlePolicy;

thread_local! {
    static SUM: Cell<u64> = const { Cell::new(0) };
}

fn main() {
    let secs: f64 = arg(1, 3.0);
    let batch: u64 = arg(2, 1 << 16);
    let idle = if env_set("POLL") {
        IdlePolicy::Poll
    } else {
        hybrid()
    };
    let rt = runtime(2, idle);
    let c1 = rt.core(1).clone();
    let rates = rt
        .core(0)
        .call(move || {
            let mut rates = Vec::new();
            let end = Instant::now() + Duration::from_secs_f64(secs);
            while Instant::now() < end {
                let t = Instant::now();
                for v in 0..batch {
                    c1.spawn(move || SUM.with(|s| s.set(s.get().wrapping_add(v))))
                        .unwrap();
                }
                c1.call(|| SUM.with(|s| s.replace(0))).wait().unwrap();
                rates.push(batch as f64 / t.elapsed().as_secs_f64() / 1e6);
            }
            rates
        })
        .wait()
        .unwrap();
    let max = rates.iter().copied().fold(f64::NAN, f64::max);
    println!(
        "batches {}  median {:.1}  max {max:.1} Mmsg/s",
        rates.len(),
        median(&rates).unwrap_or(f64::NAN)
    );
    rt.shutdown();
}
