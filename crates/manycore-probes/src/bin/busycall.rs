//! Probe `busycall`: the latency of a call into a runtime core that is busy
//! in a fork-join tree. Core 0 of a 1-core runtime runs fib(30) through
//! `Ctx::join` in a loop while an outside thread makes `core(0).call(|| ())`
//! and waits for it, 100 us apart. The core runs the call only when it
//! polls its messages inside the tree (a heartbeat), so this measures how
//! soon a busy core looks at its messages. Prints the round trip's median,
//! 90th and 99th percentile and maximum (us) and the number of calls.
//!
//! `cargo run --release -p manycore-probes --bin busycall`
//!
//! No knobs.

use manycore_cli::benches::steal::workloads::fib_mc;
use manycore_probes::steal_runtime;
use manycore_steal::{with_ctx, StealExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let rt = steal_runtime(1);
    let stop = AtomicBool::new(false);
    let mut rtt: Vec<f64> = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            rt.install(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(with_ctx(|c| fib_mc(c, 30)));
                }
            })
        });
        std::thread::sleep(Duration::from_millis(50));
        let core = rt.core(0);
        let end = Instant::now() + Duration::from_secs(2);
        while Instant::now() < end {
            let t = Instant::now();
            core.call(|| ()).wait().expect("call");
            rtt.push(t.elapsed().as_secs_f64() * 1e6);
            std::thread::sleep(Duration::from_micros(100));
        }
        stop.store(true, Ordering::Relaxed);
    });
    rtt.sort_by(f64::total_cmp);
    let q = |p: f64| rtt[((rtt.len() - 1) as f64 * p) as usize];
    println!(
        "busycall: median {:.1} us, p90 {:.1}, p99 {:.1}, max {:.1} ({} calls)",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0),
        rtt.len()
    );
}
