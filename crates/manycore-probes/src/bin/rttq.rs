//! Probe `rttq`: the round trip of `core1.call(|| x + 1).wait()` from core 0
//! to core 1 of a 2-core runtime (the round-trip row of `manycore bench
//! pingpong`, alone, for `perf record`). Prints the median and the minimum
//! over batches of 10,000 round trips.
//!
//! `cargo run --release -p manycore-probes --bin rttq -- [SECS=3] [poll|hybrid]`
//!
//! Knobs: `PIN=1` pins the cores; `CAP=n` sets the ring capacity;
//! `MODE=spawn` replies with a raw atomic store that core 0 spins on instead
//! of a call (the message leg alone, without completion record or wait).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use manycore_probes::{arg, arg_str, hybrid, min_median, runtime};
use manycore_rt::IdlePolicy;

fn main() {
    let secs: f64 = arg(1, 3.0);
    let idle = match arg_str(2).as_deref() {
        Some("hybrid") => hybrid(),
        _ => IdlePolicy::Poll,
    };
    let spawn = std::env::var("MODE").is_ok_and(|m| m == "spawn");
    let rt = runtime(2, idle);
    let c1 = rt.core(1).clone();
    let per_batch = rt
        .core(0)
        .call(move || {
            let mut per = Vec::new();
            let end = Instant::now() + Duration::from_secs_f64(secs);
            let mut x = 0u64;
            let flag = Arc::new(AtomicU64::new(0));
            while Instant::now() < end {
                let t = Instant::now();
                for _ in 0..10_000 {
                    if spawn {
                        let f = flag.clone();
                        let want = x + 1;
                        c1.spawn(move || f.store(want, Ordering::Release)).unwrap();
                        while flag.load(Ordering::Acquire) != want {
                            std::hint::spin_loop();
                        }
                        x = want;
                    } else {
                        x = c1.call(move || x + 1).wait().unwrap();
                    }
                }
                per.push(t.elapsed().as_nanos() as f64 / 10_000.0);
            }
            per
        })
        .wait()
        .unwrap();
    let (min, med) = min_median(&per_batch);
    println!(
        "batches {}  median {med:.1} ns  min {min:.1} ns",
        per_batch.len()
    );
    rt.shutdown();
}
