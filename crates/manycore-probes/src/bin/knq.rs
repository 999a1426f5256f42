//! Probe `knq`: knary(4, m, i) on the calling thread, no pool: sequential,
//! the same tree split into binary halves but still sequential, the context
//! form (`Ctx::join`) and the plain `join`; the minimum of 15 interleaved
//! runs of each, and its ratio to the sequential time: the cost of the join
//! code itself.
//!
//! `cargo run --release -p manycore-probes --bin knq -- [M=9] [I=1000]`
//!
//! No knobs.

use std::hint::black_box;

use manycore_cli::benches::steal::workloads::{idle, knary_mc, knary_mc_plain, knary_seq, Knary};
use manycore_cli::measure::time;
use manycore_probes::arg;
use manycore_steal::with_ctx;

/// knary's `n` children at `depth` split into binary halves as the
/// parallel versions split them, but run one after the other.
fn split_seq(p: Knary, depth: u32, n: u32) -> u64 {
    if n == 1 {
        let acc = idle(p.i, u64::from(depth));
        return if depth + 1 < p.m {
            acc.wrapping_add(split_seq(p, depth + 1, p.k))
        } else {
            acc
        };
    }
    let h = n / 2;
    split_seq(p, depth, h).wrapping_add(split_seq(p, depth, n - h))
}

fn main() {
    let p = Knary {
        k: 4,
        m: arg(1, 9),
        i: arg(2, 1000),
    };
    let fs: [(&str, &dyn Fn() -> u64); 4] = [
        ("seq", &|| knary_seq(p, 0)),
        ("binary-split seq", &|| split_seq(p, 0, 1)),
        ("ctx", &|| with_ctx(|s| knary_mc(s, p, 0))),
        ("plain join", &|| knary_mc_plain(p, 0)),
    ];
    let mut best = [f64::MAX; 4];
    for _ in 0..15 {
        for (k, (_, f)) in fs.iter().enumerate() {
            best[k] = best[k].min(time(|| black_box(f())).as_secs_f64() * 1e3);
        }
    }
    for (k, (name, _)) in fs.iter().enumerate() {
        println!("{name:18} {:.2} ms ({:.3}x)", best[k], best[k] / best[0]);
    }
}
