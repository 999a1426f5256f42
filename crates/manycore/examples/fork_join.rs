//! Fork-join on a runtime's cores (MuSE): every `join` runs on the stack like
//! a sequential call, and a fork is handed to another core only when that
//! core is idle and asks for work.
//!
//! Run with `cargo run --release -p manycore --example fork_join`.

use manycore::steal::{join, scope, StealExt};
use manycore::Runtime;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// Sums a slice by splitting it in halves until the pieces are small.
fn sum(v: &[u64]) -> u64 {
    if v.len() <= 4096 {
        return v.iter().sum();
    }
    let (l, r) = v.split_at(v.len() / 2);
    let (a, b) = join(|| sum(l), || sum(r));
    a + b
}

fn main() -> Result<(), manycore::Error> {
    let rt = Runtime::builder().build()?;
    println!("{} cores", rt.cores().len());

    let f = rt.install(|| fib(30));
    println!("fib(30) = {f}");
    assert_eq!(f, 832_040);

    let v: Vec<u64> = (0..1_000_000).collect();
    let v = std::sync::Arc::new(v);
    let v2 = v.clone();
    let s = rt.install(move || sum(&v2));
    println!("sum(0..1e6) = {s}");
    assert_eq!(s, v.iter().sum::<u64>());

    // A scope runs borrowed closures; every spawn has finished when it returns.
    let squares = rt.install(|| {
        let mut out = vec![0u64; 8];
        scope(|s| {
            for (i, slot) in out.iter_mut().enumerate() {
                s.spawn(move |_| *slot = (i as u64) * (i as u64));
            }
        });
        out
    });
    println!("squares = {squares:?}");
    assert_eq!(squares[7], 49);

    rt.shutdown();
    Ok(())
}
