//! Probe `gapq`: the longest gap between two heartbeat polls while fib(30)
//! runs through `Ctx::join` on a 1-core runtime (the `max_poll_gap` figure
//! of `manycore bench steal`); prints the time and the gap of 5 runs.
//!
//! `cargo run --release -p manycore-probes --bin gapq`
//!
//! No knobs.

use manycore_cli::benches::steal::workloads::fib_mc;
use manycore_probes::steal_runtime;
use manycore_steal::{with_ctx, StealExt};

fn main() {
    let rt = steal_runtime(1);
    for _ in 0..5 {
        manycore_steal::measure_poll_gaps(true);
        let t = std::time::Instant::now();
        rt.install(|| with_ctx(|s| fib_mc(s, 30)));
        println!("{:?} gap {:?}", t.elapsed(), manycore_steal::max_poll_gap());
    }
}
