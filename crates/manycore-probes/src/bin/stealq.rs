//! Probe `stealq`: the end-to-end cost of a steal, as `manycore bench steal`
//! measures it for its Table 1: on a 2-core runtime, 1000 joins of two
//! halves of busy work with a heartbeat at every join; for each join whose
//! second half the other core ran, the join's wall time minus its longer
//! half. Prints how many joins were stolen, the 10th, 50th and 90th
//! percentiles (ns) and the runtime's steal counters.
//!
//! `cargo run --release -p manycore-probes --bin stealq`
//!
//! No knobs.

use manycore_cli::benches::steal::steal_costs;
use manycore_probes::{percentile, steal_runtime};
use manycore_steal::StealExt;

const ROUNDS: u32 = 1000;

fn main() {
    let rt = steal_runtime(2);
    let stolen: Vec<f64> = rt
        .install(|| steal_costs(ROUNDS, 20_000))
        .into_iter()
        .map(|s| s * 1e9)
        .collect();
    let p = |q| percentile(&stolen, q).unwrap_or(f64::NAN);
    println!(
        "stolen {}/{ROUNDS}: p10 {:.0} p50 {:.0} p90 {:.0} ns  {:?}",
        stolen.len(),
        p(10.0),
        p(50.0),
        p(90.0),
        manycore_steal::steal_stats(&rt)
    );
}
