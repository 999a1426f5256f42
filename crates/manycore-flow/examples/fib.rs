//! Fibonacci as dataflow zero-wait threads on a manycore runtime.
//!
//! Each call `fib(n)` is an instance. A call with children makes a *join*
//! instance with two slots on its own core, forks the two children (on the
//! cores in turn near the root, locally further down) and the join continues
//! to the caller's slot when both children have continued to it.
//!
//! `cargo run --release -p manycore-flow --example fib -- [n] [cores]`

use manycore_flow::{Ctx, Instance, Outcome, Slot, User};
use manycore_rt::{Core, Runtime};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls with `n` above this fork their children onto other cores.
const SPREAD: u64 = 12;

fn fib(ctx: &Ctx<'_, User>, cores: Arc<[Core]>, n: u64, k: Slot<u64>) {
    if n < 2 {
        let _ = ctx.signal(&k, n);
        return;
    }
    let Ok(join) = Instance::<u64>::new(ctx.core(), 2, move |ctx, xs| {
        let _ = ctx.signal(&k, xs[0] + xs[1]);
    }) else {
        return; // the runtime is shutting down
    };
    for (i, m) in [n - 1, n - 2].into_iter().enumerate() {
        let on = if n > SPREAD {
            &cores[(ctx.core().index() + i) % cores.len()]
        } else {
            ctx.core()
        };
        let (slot, cores) = (join.slot(i), cores.clone());
        let _ = ctx.spawn(on, move |ctx| fib(ctx, cores, m, slot));
    }
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(22);
    let cores: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2);

    let rt = Runtime::builder().cores(cores).build()?;
    let all: Arc<[Core]> = rt.cores().into();
    let (result, out) = Outcome::new(rt.core(0))?;
    let t = Instant::now();
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| fib(ctx, all, n, result))?;
    let r = out.wait_timeout(Duration::from_secs(120))?;
    let took = t.elapsed();
    assert_eq!(r, fib_seq(n));
    // fib(n) makes fib(n+1)*2-1 calls, and a join per call with children.
    println!(
        "fib({n}) = {r} on {cores} cores as dataflow: {:?} ({} instances)",
        took,
        3 * fib_seq(n + 1) - 2
    );
    rt.shutdown();
    Ok(())
}
