//! Shutdown always ends: dropped on one of its own cores, a runtime still
//! ends every thread it started; `shutdown_timeout` bounds the wait and
//! names the cores that kept it waiting.
use manycore_rt::{IdlePolicy, InvokeError, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .filter(|comm| comm.starts_with(prefix))
                .count()
        })
        .unwrap_or(0)
}

/// Waits (bounded) until no thread named `prefix...` is left; returns how
/// many are.
fn wait_threads_gone(prefix: &str) -> usize {
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        let n = threads_named(prefix);
        if n == 0 || Instant::now() >= give_up {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Spins until `flag` is set or a bound that only guards a broken test.
fn spin_until(flag: &AtomicBool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !flag.load(Ordering::Acquire) && Instant::now() < give_up {
        std::thread::yield_now();
    }
}

#[test]
fn dropping_a_runtime_on_its_own_core_ends_its_threads() {
    for _ in 0..200 {
        let rt = Runtime::builder()
            .cores(2)
            .idle(IdlePolicy::Sleep)
            .name("dropme")
            .build()
            .unwrap();
        let c0 = rt.core(0).clone();
        // The runtime is dropped inside work running on its core 0.
        assert_eq!(c0.call(move || drop(rt)).wait(), Ok(()));
    }
    assert_eq!(
        wait_threads_gone("dropme"),
        0,
        "runtime threads were left running"
    );
}

#[test]
fn a_runtime_dropped_on_its_core_finishes_work_in_flight() {
    let rt = Runtime::builder()
        .cores(2)
        .name("dropwork")
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let later = c1.call(|| 7);
    let c0 = rt.core(0).clone();
    // Core 0 drops the runtime, then keeps working a little: the shutdown
    // ends once it returns.
    let r = c0.call(move || {
        drop(rt);
        c1.call(|| 5).wait()
    });
    assert_eq!(r.wait(), Ok(Ok(5)));
    assert_eq!(later.wait(), Ok(7));
    assert_eq!(wait_threads_gone("dropwork"), 0);
}

#[test]
fn shutdown_timeout_names_the_busy_core() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .name("stuckcore")
        .build()
        .unwrap();
    let (started, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (s, r) = (started.clone(), release.clone());
    let stuck = rt.core(1).call(move || {
        s.store(true, Ordering::Release);
        spin_until(&r)
    });
    // Core 1 is inside the call, and stays there until after the shutdown.
    spin_until(&started);
    let err = rt
        .shutdown_timeout(Duration::from_millis(20))
        .expect_err("core 1 never finishes on its own");
    assert!(err.busy_cores().contains(&1), "{err}");
    assert!(err.running_cores().contains(&1), "{err}");
    // New work is refused; the stuck core exits once its code returns.
    assert_eq!(rt.core(0).call(|| 1).wait(), Err(InvokeError::Shutdown));
    release.store(true, Ordering::Release);
    assert_eq!(stuck.wait(), Ok(()));
    assert_eq!(wait_threads_gone("stuckcore"), 0);
    // Nothing is left to wait for.
    assert_eq!(rt.shutdown_timeout(Duration::ZERO), Ok(()));
    drop(rt);
}

#[test]
fn shutdown_timeout_stops_work_that_never_ends() {
    // Two cores bounce a message between them forever: `shutdown` would
    // wait for ever, `shutdown_timeout` stops them.
    fn bounce(to: manycore_rt::Core, back: manycore_rt::Core) {
        let _ = to.spawn(move || bounce(back, manycore_rt::current().unwrap()));
    }
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .name("pingpong")
        .build()
        .unwrap();
    let (c0, c1) = (rt.core(0).clone(), rt.core(1).clone());
    rt.core(0).spawn(move || bounce(c1, c0)).unwrap();
    let err = rt.shutdown_timeout(Duration::from_millis(20));
    assert!(err.is_err(), "the bouncing never stops on its own");
    assert_eq!(wait_threads_gone("pingpong"), 0);
}

#[test]
fn shutdown_timeout_with_zero_and_max() {
    for d in [Duration::ZERO, Duration::MAX] {
        let rt = Runtime::builder().cores(2).name("zeromax").build().unwrap();
        assert_eq!(rt.core(1).call(|| 3).wait(), Ok(3));
        let r = rt.shutdown_timeout(d);
        if d == Duration::MAX {
            assert_eq!(r, Ok(()));
        }
        // Either way the runtime is shut down and its threads end.
        assert_eq!(rt.core(0).call(|| 1).wait(), Err(InvokeError::Shutdown));
        assert_eq!(wait_threads_gone("zeromax"), 0);
    }
}

#[test]
fn shutdown_timeout_on_its_own_core_reports_that_core() {
    let rt = Arc::new(Runtime::builder().cores(2).name("owncore").build().unwrap());
    let rt2 = rt.clone();
    let r = rt
        .core(1)
        .call(move || rt2.shutdown_timeout(Duration::from_secs(1)));
    let err = r
        .wait()
        .unwrap()
        .expect_err("a core cannot wait for itself");
    assert_eq!(err.busy_cores(), &[1]);
    // The last handle is dropped here, off the cores: it finishes the shutdown.
    drop(rt);
    assert_eq!(wait_threads_gone("owncore"), 0);
}
