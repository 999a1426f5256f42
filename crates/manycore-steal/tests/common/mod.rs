//! Shared by the integration tests: the fork-join kernels and a small runtime.
#![allow(dead_code)] // each test crate uses a part

use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{join, Ctx};
use std::time::Duration;

/// fib with the plain `join`.
pub fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// fib with the context form.
pub fn fib_ctx(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_ctx(s, n - 1), |s| fib_ctx(s, n - 2));
    a + b
}

/// An unpinned runtime of `n` cores whose idle cores spin briefly, then sleep.
pub fn rt(n: usize) -> Runtime {
    Runtime::builder()
        .cores(n)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(20),
        })
        .pin(false)
        .build()
        .unwrap()
}
