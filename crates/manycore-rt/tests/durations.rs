//! Every `Duration` and `Instant` is accepted wherever a timeout, deadline
//! or sleep is: zero is "now", `Duration::MAX` is "never" (paired here with
//! something that ends the wait: a result, a message, or shutdown).
use manycore_rt::{
    block_on, current, park_current, poll_once, sleep, sleep_until, Deadline, IdlePolicy,
    InvokeError, Runtime, Scheduler,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A bound on the test's own waits, so that a broken test fails instead of
/// hanging.
const BOUND: Duration = Duration::from_secs(60);

/// An instant far beyond any deadline a test reaches.
fn far() -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_secs(u64::MAX / 4))
        .unwrap_or(now + Duration::from_secs(365 * 86400))
}

#[test]
fn sleep_zero_is_ready_and_sleep_max_ends_with_shutdown() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    // On a core and off the cores, a zero sleep is ready at once.
    assert_eq!(
        rt.core(0)
            .spawn_async(async { sleep(Duration::ZERO).await })
            .wait_timeout(BOUND),
        Ok(())
    );
    block_on(sleep(Duration::ZERO));
    block_on(sleep_until(Instant::now()));
    // Sleeps that never end: the core keeps serving, and shutdown drops
    // them (their invocations resolve to Shutdown).
    let forever = rt.core(0).spawn_async(async { sleep(Duration::MAX).await });
    let until_far = rt.core(0).spawn_async(async { sleep_until(far()).await });
    assert_eq!(rt.core(0).call(|| 1).wait_timeout(BOUND), Ok(1));
    assert!(!forever.is_finished() && !until_far.is_finished());
    rt.shutdown();
    assert_eq!(forever.wait_timeout(BOUND), Err(InvokeError::Shutdown));
    assert_eq!(until_far.wait_timeout(BOUND), Err(InvokeError::Shutdown));
}

#[test]
fn invocation_timeouts_zero_and_max() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let slow = || std::thread::sleep(Duration::from_millis(20));
    // Zero: a result not in yet loses (off the cores and on a core).
    assert_eq!(
        rt.core(1).call(slow).wait_timeout(Duration::ZERO),
        Err(InvokeError::Timeout)
    );
    let c1 = rt.core(1).clone();
    assert_eq!(
        rt.core(0)
            .call(move || c1.call(slow).wait_timeout(Duration::ZERO))
            .wait_timeout(BOUND),
        Ok(Err(InvokeError::Timeout))
    );
    assert_eq!(
        rt.core(1).call(slow).wait_deadline(Instant::now()),
        Err(InvokeError::Timeout)
    );
    // Max and far deadlines: the result arrives and wins.
    assert_eq!(rt.core(1).call(|| 2).wait_timeout(Duration::MAX), Ok(2));
    assert_eq!(rt.core(1).call(|| 3).wait_deadline(far()), Ok(3));
    let c1 = rt.core(1).clone();
    assert_eq!(
        rt.core(0)
            .call(move || {
                let a = c1.call(|| 4).wait_timeout(Duration::MAX)?;
                let b = c1.call(|| 5).wait_deadline(far())?;
                Ok::<_, InvokeError>(a + b)
            })
            .wait_timeout(BOUND),
        Ok(Ok(9))
    );
    // Awaited, on a core (its timers) and off the cores (the timer thread).
    let c1 = rt.core(1).clone();
    let awaited = rt.core(0).spawn_async(async move {
        let a = c1.call(|| 6).timeout(Duration::MAX).await;
        let b = c1.call(|| 7).deadline(far()).await;
        let z = c1.call(slow).timeout(Duration::ZERO).await;
        (a, b, z)
    });
    assert_eq!(
        awaited.wait_timeout(BOUND),
        Ok((Ok(6), Ok(7), Err(InvokeError::Timeout)))
    );
    assert_eq!(
        block_on(rt.core(1).call(|| 8).timeout(Duration::MAX)),
        Ok(8)
    );
    assert_eq!(
        block_on(rt.core(1).call(slow).timeout(Duration::ZERO)),
        Err(InvokeError::Timeout)
    );
}

#[test]
fn park_current_zero_and_max() {
    // Off the cores, zero returns at once.
    park_current(Duration::ZERO);
    let rt = Runtime::builder().cores(2).build().unwrap();
    let c1 = rt.core(1).clone();
    let r = rt.core(0).call(move || {
        park_current(Duration::ZERO);
        // Max: core 1 answers with a message that raises the flag here, and
        // that message ends the park.
        let flag = Arc::new(AtomicBool::new(false));
        let (f, c0) = (flag.clone(), current().unwrap());
        c1.spawn(move || drop(c0.spawn(move || f.store(true, Ordering::Relaxed))))
            .unwrap();
        while !flag.load(Ordering::Relaxed) {
            park_current(Duration::MAX);
            poll_once();
        }
    });
    assert_eq!(r.wait_timeout(BOUND), Ok(()));
}

#[test]
fn deadlines_now_and_far_order_edf_tasks() {
    let rt = Runtime::builder()
        .cores(1)
        .scheduler(Scheduler::Edf)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    // Hold the core so that all three are queued before any runs.
    let gate = Arc::new(AtomicBool::new(false));
    let g = gate.clone();
    rt.core(0)
        .spawn(move || {
            let give_up = Instant::now() + BOUND;
            while !g.load(Ordering::Acquire) && Instant::now() < give_up {
                std::thread::yield_now();
            }
        })
        .unwrap();
    let c = rt.core(0);
    c.spawn_with(Deadline(far()), move || t1.send("far").unwrap())
        .unwrap();
    c.spawn_with(
        Deadline(Instant::now() + Duration::from_secs(3600)),
        move || t2.send("hour").unwrap(),
    )
    .unwrap();
    c.spawn_with(Deadline(Instant::now()), move || t3.send("now").unwrap())
        .unwrap();
    gate.store(true, Ordering::Release);
    let got: Vec<_> = (0..3).map(|_| rx.recv_timeout(BOUND).unwrap()).collect();
    assert_eq!(got, ["now", "hour", "far"]);
}

#[test]
fn hybrid_spin_zero_and_max() {
    for spin in [Duration::ZERO, Duration::MAX] {
        let rt = Runtime::builder()
            .cores(1)
            .idle(IdlePolicy::Hybrid { spin })
            .build()
            .unwrap();
        assert_eq!(rt.core(0).call(|| 1).wait_timeout(BOUND), Ok(1));
        let c0 = rt.core(0).clone();
        assert_eq!(
            rt.core(0)
                .call(move || c0.call(|| 2).wait())
                .wait_timeout(BOUND),
            Ok(Ok(2))
        );
        assert_eq!(rt.shutdown_timeout(Duration::MAX), Ok(()));
    }
}
