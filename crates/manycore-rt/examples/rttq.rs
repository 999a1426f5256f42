//! Dev probe: round trip of `call(|| x + 1).wait()` from core 0 to core 1
//! (the pingpong bench's round-trip row, alone, for `perf record`).
//!
//! `cargo run --release -p manycore-rt --example rttq -- [secs] [poll|hybrid]`
//! (`PIN=1` pins the cores, `CAP=n` sets the ring capacity).
use manycore_rt::{IdlePolicy, Runtime};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let idle = match args.get(2).map(String::as_str) {
        Some("hybrid") => IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        },
        _ => IdlePolicy::Poll,
    };
    let rt = Runtime::builder()
        .cores(2)
        .idle(idle)
        .pin(std::env::var("PIN").is_ok())
        .ring_capacity(
            std::env::var("CAP")
                .ok()
                .and_then(|c| c.parse().ok())
                .unwrap_or(256),
        )
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let mut v = rt
        .core(0)
        .call(move || {
            let mut per = Vec::new();
            let end = Instant::now() + Duration::from_secs_f64(secs);
            let mut x = 0u64;
            // MODE=spawn: the reply is a raw atomic store that core 0 spins
            // on (the message leg alone, without completion record or wait).
            let spawn = std::env::var("MODE").is_ok_and(|m| m == "spawn");
            let flag = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            while Instant::now() < end {
                let t = Instant::now();
                for _ in 0..10_000 {
                    if spawn {
                        let f = flag.clone();
                        let want = x + 1;
                        c1.spawn(move || f.store(want, std::sync::atomic::Ordering::Release))
                            .unwrap();
                        while flag.load(std::sync::atomic::Ordering::Acquire) != want {
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
    v.sort_by(|a, b| a.total_cmp(b));
    println!(
        "batches {}  median {:.1} ns  min {:.1} ns",
        v.len(),
        v[v.len() / 2],
        v[0]
    );
    rt.shutdown();
}
