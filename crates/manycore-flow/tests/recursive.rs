//! Recursive programs written as dataflow with the dynamic API: fib and
//! MuSE's knary(k, m, i). Each call is an instance; a call with children
//! makes a join instance with one slot per child, forks the children, and
//! the join continues to the caller's slot. Checked against plain code.

mod common;
use common::runtime;
use manycore_flow::{Ctx, Instance, Outcome, Slot, User};
use manycore_rt::{Core, Runtime};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

/// fib(n) continued to `k`; children of calls above `spread` go round the
/// cores, deeper ones stay local.
fn fib(ctx: &Ctx<'_, User>, cores: Arc<[Core]>, spread: u64, n: u64, k: Slot<u64>) {
    if n < 2 {
        let _ = ctx.signal(&k, n);
        return;
    }
    let Ok(join) = Instance::<u64>::new(ctx.core(), 2, move |ctx, xs| {
        let _ = ctx.signal(&k, xs[0] + xs[1]);
    }) else {
        return;
    };
    for (i, m) in [n - 1, n - 2].into_iter().enumerate() {
        let on = if n > spread {
            &cores[(ctx.core().index() + i) % cores.len()]
        } else {
            ctx.core()
        };
        let (slot, cores) = (join.slot(i), cores.clone());
        let _ = ctx.spawn(on, move |ctx| fib(ctx, cores, spread, m, slot));
    }
}

fn run_fib(rt: &Runtime, n: u64, spread: u64) -> u64 {
    let cores: Arc<[Core]> = rt.cores().into();
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        fib(ctx, cores, spread, n, result)
    })
    .unwrap();
    out.wait_timeout(WAIT).unwrap()
}

#[test]
fn fib_as_dataflow() {
    let rt = runtime(2);
    for n in [0, 1, 2, 10, 18] {
        assert_eq!(run_fib(&rt, n, 8), fib_seq(n), "fib({n})");
    }
    // Everything local, and everything spread.
    assert_eq!(run_fib(&rt, 15, u64::MAX), fib_seq(15));
    assert_eq!(run_fib(&rt, 15, 0), fib_seq(15));
}

/// The work of one knary node: `i` steps of a generator seeded by depth.
fn idle(i: u32, d: u32) -> u64 {
    let mut x = u64::from(d) + 1;
    for _ in 0..i {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
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

/// knary at depth `d`, continued to `to`: k children on the cores in turn.
fn knary(
    ctx: &Ctx<'_, User>,
    cores: Arc<[Core]>,
    (k, m, i): (u32, u32, u32),
    d: u32,
    to: Slot<u64>,
) {
    let own = idle(i, d);
    if d + 1 >= m {
        let _ = ctx.signal(&to, own);
        return;
    }
    let Ok(join) = Instance::<u64>::new(ctx.core(), k as usize, move |ctx, xs| {
        let sum = xs.into_iter().fold(own, u64::wrapping_add);
        let _ = ctx.signal(&to, sum);
    }) else {
        return;
    };
    for c in 0..k as usize {
        let on = &cores[(ctx.core().index() + c) % cores.len()];
        let (slot, cores) = (join.slot(c), cores.clone());
        let _ = ctx.spawn(on, move |ctx| knary(ctx, cores, (k, m, i), d + 1, slot));
    }
}

#[test]
fn knary_as_dataflow() {
    let rt = runtime(2);
    for (k, m, i) in [(4, 1, 10), (2, 6, 10), (4, 5, 100), (3, 4, 0)] {
        let cores: Arc<[Core]> = rt.cores().into();
        let (result, out) = Outcome::new(rt.core(0)).unwrap();
        Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
            knary(ctx, cores, (k, m, i), 0, result)
        })
        .unwrap();
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok(knary_seq(k, m, i, 0)),
            "knary({k}, {m}, {i})"
        );
    }
}
