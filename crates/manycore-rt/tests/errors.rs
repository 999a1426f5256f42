//! Errors: panics reach the caller and the core lives on; calls after shutdown
//! fail; dropping a runtime with calls in flight never hangs or loses a result.
use manycore_rt::{IdlePolicy, InvokeError, Runtime};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn panic_in_call_reaches_caller_and_core_lives() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    for _ in 0..3 {
        let r = rt
            .core(1)
            .call(|| -> u8 { panic!("bad input {}", 7) })
            .wait();
        assert_eq!(r, Err(InvokeError::Panicked("bad input 7".into())));
        assert_eq!(rt.core(1).call(|| 1).wait(), Ok(1));
    }
    // A panic in fire-and-forget work is counted, and the core still runs.
    rt.core(1).spawn(|| panic!("spawned")).unwrap();
    assert_eq!(rt.core(1).call(|| 2).wait(), Ok(2));
    assert_eq!(rt.stats()[1].panics, 4);
    assert_eq!(rt.stats()[0].panics, 0);
    // A panic inside an async task reaches its invocation.
    let r = rt.core(0).spawn_async(async { panic!("in task") }).wait();
    assert_eq!(r, Err::<(), _>(InvokeError::Panicked("in task".into())));
}

#[test]
fn calls_after_shutdown_fail() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let c = rt.core(0).clone();
    rt.shutdown();
    rt.shutdown(); // idempotent
    assert_eq!(c.call(|| 1).wait(), Err(InvokeError::Shutdown));
    assert_eq!(c.spawn(|| ()), Err(InvokeError::Shutdown));
    assert_eq!(
        c.spawn_async(async { 1 }).wait(),
        Err(InvokeError::Shutdown)
    );
    drop(rt);
    assert_eq!(
        c.call(|| 1).wait_timeout(Duration::from_secs(30)),
        Err(InvokeError::Shutdown)
    );
}

#[test]
fn drop_with_calls_in_flight_resolves_every_call() {
    for p in [IdlePolicy::Sleep, IdlePolicy::default()] {
        let rt = Runtime::builder()
            .cores(2)
            .idle(p)
            .ring_capacity(4)
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let mut invs = Vec::new();
        for i in 0..2000usize {
            let r = ran.clone();
            let c1 = rt.core(1).clone();
            // Work that itself sends more work across cores.
            invs.push(rt.core(i % 2).call(move || {
                let r2 = r.clone();
                c1.spawn(move || {
                    r2.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
                r.fetch_add(1, Ordering::SeqCst);
                i
            }));
        }
        drop(rt);
        // Shutdown drains: everything accepted before it ran.
        for (i, inv) in invs.into_iter().enumerate() {
            assert_eq!(inv.wait_timeout(Duration::from_secs(30)), Ok(i));
        }
        assert_eq!(ran.load(Ordering::SeqCst), 4000);
    }
}

#[test]
fn dropped_invocation_result_is_freed() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    let token = Arc::new(());
    let t2 = token.clone();
    drop(rt.core(0).call(move || t2));
    rt.core(0).call(|| ()).wait().unwrap();
    drop(rt);
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn wait_timeout_then_late_result_is_dropped() {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let token = Arc::new(());
    let t2 = token.clone();
    let inv = rt.core(0).call(move || {
        std::thread::sleep(Duration::from_millis(30));
        t2
    });
    assert_eq!(
        inv.wait_timeout(Duration::from_millis(1)).err(),
        Some(InvokeError::Timeout)
    );
    rt.core(0).call(|| ()).wait().unwrap();
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn timeout_on_await_and_late_result_counted() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let token = Arc::new(());
    let t2 = token.clone();
    let r = rt
        .core(0)
        .spawn_async(async move {
            c1.call(move || {
                std::thread::sleep(Duration::from_millis(50));
                t2
            })
            .timeout(Duration::from_millis(2))
            .await
            .map(|_| ())
        })
        .wait();
    assert_eq!(r, Ok(Err(InvokeError::Timeout)));
    // The late result is dropped on core 1 and counted there.
    rt.core(1).call(|| ()).wait().unwrap();
    assert_eq!(Arc::strong_count(&token), 1);
    assert_eq!(rt.stats()[1].late_results, 1);
    // A timeout that does not fire changes nothing.
    assert_eq!(
        rt.core(1)
            .call(|| 5)
            .timeout(Duration::from_secs(60))
            .wait(),
        Ok(5)
    );
    // Off the cores, awaiting with a timeout uses the fallback timer thread.
    let slow = rt
        .core(1)
        .call(|| std::thread::sleep(Duration::from_millis(50)));
    let r = manycore_rt::block_on(slow.timeout(Duration::from_millis(1)));
    assert_eq!(r, Err(InvokeError::Timeout));
}

#[test]
fn sleep_in_tasks() {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let t0 = std::time::Instant::now();
    let order = rt
        .core(0)
        .spawn_async(async {
            let a = manycore_rt::current().unwrap().spawn_async(async {
                manycore_rt::sleep(Duration::from_millis(20)).await;
                2
            });
            manycore_rt::sleep(Duration::from_millis(5)).await;
            let first = 1;
            (first, a.await.unwrap())
        })
        .wait();
    assert_eq!(order, Ok((1, 2)));
    assert!(t0.elapsed() >= Duration::from_millis(20));
}

/// A panic payload whose destructor panics too.
struct Bomb;
impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the payload's destructor panicked");
    }
}

fn throw_bomb() -> u32 {
    std::panic::panic_any(Bomb)
}

#[test]
fn a_payload_that_panics_on_drop_is_still_reported_as_a_panic() {
    let panicked = || Err(InvokeError::Panicked("non-string panic payload".into()));
    let rt = Runtime::builder().cores(2).build().unwrap();
    assert_eq!(rt.core(1).call(throw_bomb).wait(), panicked());
    assert_eq!(
        rt.core(1).spawn_async(async { throw_bomb() }).wait(),
        panicked()
    );
    assert_eq!(rt.core(1).spawn_coroutine(throw_bomb).wait(), panicked());
    let o = rt.core(1).place(0u32).unwrap();
    assert_eq!(o.invoke(|_| throw_bomb()).wait(), panicked());
    let g = manycore_rt::Group::new(vec![o.clone()]);
    assert_eq!(
        g.reduce(|_| throw_bomb(), |a, b| a + b).wait(),
        Err(InvokeError::Member {
            index: 0,
            error: Box::new(InvokeError::Panicked("non-string panic payload".into()))
        })
    );
    // Fire and forget, on an object and on the core: the core lives on.
    o.spawn(|_| {
        throw_bomb();
    })
    .unwrap();
    rt.core(1)
        .spawn(|| {
            throw_bomb();
        })
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    rt.core(1)
        .call_then(throw_bomb, rt.core(0), move |r| tx.send(r).unwrap());
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(60)).unwrap(),
        panicked()
    );
    assert_eq!(rt.core(1).call(|| 5).wait(), Ok(5));
    assert_eq!(o.invoke(|x| *x).wait(), Ok(0));
}
