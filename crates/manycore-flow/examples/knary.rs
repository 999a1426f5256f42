//! MuSE's synthetic knary(k, m, i) as dataflow zero-wait threads: a tree of
//! height `m` in which every node does `i` steps of work and has `k`
//! children; a node with children makes a join instance with `k` slots and
//! forks the children round the cores; the join continues to its parent.
//!
//! `cargo run --release -p manycore-flow --example knary -- [k] [m] [i] [cores]`

use manycore_flow::{Ctx, Instance, Outcome, Slot, User};
use manycore_rt::{Core, Runtime};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The work of one node: `i` steps of a generator seeded by its depth.
fn idle(i: u32, d: u32) -> u64 {
    let mut x = u64::from(d) + 1;
    for _ in 0..i {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

fn knary_seq(k: u32, m: u32, i: u32, d: u32) -> u64 {
    let mut acc = idle(i, d);
    if d + 1 < m {
        for _ in 0..k {
            acc = acc.wrapping_add(knary_seq(k, m, i, d + 1));
        }
    }
    acc
}

type Shape = (u32, u32, u32);

fn knary(ctx: &Ctx<'_, User>, cores: Arc<[Core]>, (k, m, i): Shape, d: u32, to: Slot<u64>) {
    let own = idle(i, d);
    if d + 1 >= m {
        let _ = ctx.signal(&to, own);
        return;
    }
    let Ok(join) = Instance::<u64>::new(ctx.core(), k as usize, move |ctx, xs| {
        let _ = ctx.signal(&to, xs.into_iter().fold(own, u64::wrapping_add));
    }) else {
        return;
    };
    for c in 0..k as usize {
        let on = &cores[(ctx.core().index() + c) % cores.len()];
        let (slot, cores) = (join.slot(c), cores.clone());
        let _ = ctx.spawn(on, move |ctx| knary(ctx, cores, (k, m, i), d + 1, slot));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let arg = |n: usize, d: u32| args.get(n).copied().unwrap_or(d);
    let (k, m, i, cores) = (arg(0, 4), arg(1, 7), arg(2, 1000), arg(3, 2) as usize);

    let rt = Runtime::builder().cores(cores).build()?;
    let all: Arc<[Core]> = rt.cores().into();
    let (result, out) = Outcome::new(rt.core(0))?;
    let t = Instant::now();
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        knary(ctx, all, (k, m, i), 0, result)
    })?;
    let r = out.wait_timeout(Duration::from_secs(120))?;
    let took = t.elapsed();
    let t = Instant::now();
    let want = knary_seq(k, m, i, 0);
    let seq = t.elapsed();
    assert_eq!(r, want);
    let nodes: u64 = (0..m).map(|d| u64::from(k).pow(d)).sum();
    println!("knary({k}, {m}, {i}) on {cores} cores as dataflow: {took:?} ({nodes} nodes); sequential: {seq:?}");
    rt.shutdown();
    Ok(())
}
