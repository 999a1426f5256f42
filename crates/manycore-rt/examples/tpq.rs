//! Dev probe: one-way throughput of fire-and-forget `spawn`s from core 0 to
//! core 1 (the pingpong bench's throughput row, alone, for `perf record`).
//!
//! `cargo run --release -p manycore-rt --example tpq -- [secs] [batch]`
//! (`PIN=1` pins the cores, `POLL=1` idles by polling instead of the
//! hybrid policy, `CAP=n` sets the ring capacity).
use manycore_rt::{IdlePolicy, Runtime};
use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static SUM: Cell<u64> = const { Cell::new(0) };
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let batch: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1 << 16);
    let rt = Runtime::builder()
        .cores(2)
        .idle(if std::env::var_os("POLL").is_some() {
            IdlePolicy::Poll
        } else {
            IdlePolicy::Hybrid {
                spin: Duration::from_micros(50),
            }
        })
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
    let mut r = rates.clone();
    r.sort_by(|a, b| a.total_cmp(b));
    println!(
        "batches {}  median {:.1}  max {:.1} Mmsg/s",
        r.len(),
        r[r.len() / 2],
        r[r.len() - 1]
    );
    rt.shutdown();
}
