//! What the flow tests share: a runtime of sleeping cores, and a bounded
//! wait for a condition.

#![allow(dead_code)]

use manycore_rt::{IdlePolicy, Runtime};
use std::time::{Duration, Instant};

/// How long a test waits for anything before it fails.
const WAIT: Duration = Duration::from_secs(30);

/// A runtime of `cores` cores that sleep when idle (tests never spin).
pub fn runtime(cores: usize) -> Runtime {
    Runtime::builder()
        .cores(cores)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap()
}

/// Waits (bounded) until `cond` holds.
pub fn eventually(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}
