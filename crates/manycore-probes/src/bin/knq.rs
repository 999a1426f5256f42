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

use manycore_cli::benches::steal::workloads::{idle, knary_mc, knary_seq, Knary};
use manycore_cli::measure::time;
use manycore_probes::arg;
use manycore_steal::with_ctx;

/// knary's children split into binary halves, with the plain `join` when
/// `par`, else one after the other.
fn children(p: Knary, depth: u32, n: u32, par: bool) -> u64 {
    if n == 1 {
        let acc = idle(p.i, u64::from(depth));
        return if depth + 1 < p.m {
            acc.wrapping_add(children(p, depth + 1, p.k, par))
        } else {
            acc
        };
    }
    let h = n / 2;
    let (a, b) = if par {
        manycore_steal::join(
            || children(p, depth, h, par),
            || children(p, depth, n - h, par),
        )
    } else {
        (children(p, depth, h, par), children(p, depth, n - h, par))
    };
    a.wrapping_add(b)
}

fn main() {
    let p = Knary {
        k: 4,
        m: arg(1, 9),
        i: arg(2, 1000),
    };
    let fs: [(&str, &dyn Fn() -> u64); 4] = [
        ("seq", &|| knary_seq(p, 0)),
        ("binary-split seq", &|| children(p, 0, 1, false)),
        ("ctx", &|| with_ctx(|s| knary_mc(s, p, 0))),
        ("plain join", &|| children(p, 0, 1, true)),
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
