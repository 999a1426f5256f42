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

/// A thief that has slept is steered off its victim's CPU when it is handed
/// a job (wake-affine placement would queue it behind the victim), and gets
/// its full CPU set back when it starts the job: no worker stays narrowed.
#[test]
fn a_sleeping_thief_is_steered_and_restored() {
    let cpus = manycore_sync::cpu::original().to_vec();
    let rt = rt(2);
    manycore_steal::attach(&rt).unwrap();
    let steered = || manycore_steal::steal_stats(&rt).steered;
    // Bounded; with one CPU there is nowhere to steer to: one round.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut rounds = 0;
    while rounds == 0 || (cpus.len() > 1 && steered() == 0 && std::time::Instant::now() < deadline)
    {
        rounds += 1;
        // Let core 1 go idle, ask for work and fall asleep.
        rt.core(1).call(|| ()).wait().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(rt.install(|| with_ctx(|s| fib_ctx(s, 24))), 46368);
    }
    if cpus.len() > 1 {
        assert!(
            steered() > 0,
            "no promotion to a sleeping thief was steered"
        );
    } else {
        assert_eq!(steered(), 0, "nowhere to steer to with one CPU");
    }
    // Every core has (or gets back, at its next job or idle round) the full
    // CPU set.
    for i in 0..2 {
        assert_full_affinity_soon(&rt, i, &cpus);
    }
    rt.shutdown();
}

/// Asks core `i` for its CPU set until it is `cpus` (each call is followed
/// by an idle round of the core); fails after 10 s.
fn assert_full_affinity_soon(rt: &manycore_rt::Runtime, i: usize, cpus: &[usize]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let aff = rt
            .core(i)
            .call(manycore_sync::cpu::current_affinity)
            .wait()
            .unwrap()
            .unwrap();
        if aff == cpus {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "core {i} left narrowed: {aff:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn a_thief_steered_for_a_job_taken_back_restores_itself() {
    let cpus = manycore_sync::cpu::original().to_vec();
    if cpus.len() < 2 {
        return; // nowhere to steer to
    }
    let rt = rt(2);
    manycore_steal::attach(&rt).unwrap();
    // Core 1 goes idle (asks for work), long enough to count as asleep...
    rt.core(1).call(|| ()).wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    // ...then runs a message that blocks, still asking for work.
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    rt.core(1)
        .spawn(move || {
            started_tx.send(()).unwrap();
            let _ = go_rx.recv_timeout(std::time::Duration::from_secs(10));
        })
        .unwrap();
    started_rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    // Core 0's join hands `b` to core 1 (steering it), cannot get it run
    // there, and takes it back.
    let r = rt.install(|| {
        with_ctx(|s| {
            s.join(
                |_| {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    1
                },
                |_| 2,
            )
        })
    });
    assert_eq!(r, (1, 2));
    let st = manycore_steal::steal_stats(&rt);
    assert!(st.steered >= 1 && st.reclaims >= 1, "{st:?}");
    go_tx.send(()).unwrap();
    // Core 1, idle again, gives itself its full CPU set back.
    assert_full_affinity_soon(&rt, 1, &cpus);
    rt.shutdown();
}
