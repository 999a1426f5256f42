//! Fork-join on manycore-rt cores: install, stealing between cores, panics,
//! and heartbeat polling of cross-core messages while a join tree runs.
#![cfg(not(loom))]

mod common;

use common::{fib, fib_ctx, rt};
use manycore_steal::{join, scope, with_ctx, StealExt};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

#[test]
fn install_computes_on_cores() {
    let rt = rt(2);
    assert_eq!(rt.install(|| fib(20)), 6765);
    assert_eq!(rt.install(|| with_ctx(|s| fib_ctx(s, 20))), 6765);
    let n = Arc::new(AtomicU64::new(0));
    let n2 = n.clone();
    rt.install(move || {
        scope(|s| {
            for i in 0..32 {
                let n = &n2;
                s.spawn(move |_| {
                    n.fetch_add(fib(i % 12), Ordering::Relaxed);
                });
            }
        })
    });
    let want: u64 = (0..32).map(|i| fib(i % 12)).sum();
    assert_eq!(n.load(Ordering::Relaxed), want);
    rt.shutdown();
}

#[test]
fn joins_from_any_core() {
    let rt = rt(2);
    manycore_steal::attach(&rt).unwrap();
    manycore_steal::attach(&rt).unwrap(); // idempotent
    let r = rt.core(1).call(|| fib(18)).wait().unwrap();
    assert_eq!(r, 2584);
    rt.shutdown();
}

#[test]
fn panic_propagates_and_core_lives() {
    let rt = rt(2);
    for _ in 0..20 {
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.install(|| join(|| fib(14), || -> u64 { std::panic::panic_any(42u32) }))
        }));
        assert_eq!(*r.unwrap_err().downcast::<u32>().unwrap(), 42);
        assert_eq!(rt.install(|| fib(16)), 987);
    }
    rt.shutdown();
}

#[test]
fn heartbeat_polls_messages() {
    // The join tree on core 0 ends only when a message sent to core 0 has run,
    // which happens only if the heartbeat polls (MuSE's MAX_SEQUENTIAL).
    let rt = rt(2);
    let flag = Arc::new(AtomicBool::new(false));
    let c0 = rt.core(0).clone();
    let rounds = rt.install(move || {
        // Sent from outside while core 0 is busy in this closure.
        let f3 = flag.clone();
        let sender = std::thread::spawn(move || {
            c0.spawn(move || f3.store(true, Ordering::Relaxed)).unwrap();
        });
        let mut rounds = 0u64;
        while !flag.load(Ordering::Relaxed) {
            fib(15);
            rounds += 1;
        }
        sender.join().unwrap();
        rounds
    });
    assert!(rounds >= 1);
    rt.shutdown();
}

#[test]
fn idle_cores_steal() {
    manycore_steal::set_max_sequential(4);
    let rt = rt(2);
    for i in 0..5000 {
        assert_eq!(rt.install(|| fib(16)), 987);
        if manycore_steal::steal_stats(&rt).promotions > 0 && i > 10 {
            break;
        }
    }
    assert!(manycore_steal::steal_stats(&rt).promotions > 0);
    manycore_steal::set_max_sequential(manycore_steal::DEFAULT_MAX_SEQUENTIAL);
    rt.shutdown();
}
