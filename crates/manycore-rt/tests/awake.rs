//! The process-wide count of awake manycore threads that the idle policy
//! consults (`manycore_sync::Awake`): cores count but while they sleep,
//! outside threads while they have calls in flight and are not parked, or
//! spin in a wait. One test in its own
//! binary, since the count is per process.

use manycore_rt::{IdlePolicy, Runtime};
use manycore_sync::Awake;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Waits (polling, at most 30 s) until `f` holds; panics with `what` if it
/// never does.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < end, "{what}: count is {}", Awake::count());
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn cores_count_while_awake_and_outside_threads_while_they_call_or_spin() {
    assert_eq!(Awake::count(), 0, "no manycore thread yet");
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .build()
        .unwrap();
    eventually("idle cores sleep after their spin", || Awake::count() == 0);

    // A core running code is awake. An outside thread with a call in
    // flight is awake too, until it parks or the call is dropped (here on
    // another thread, which waits for it: spinning, counted, for at most
    // 1 ms, and then parked, not counted).
    let (seen_tx, seen_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let inv = rt.core(0).call(move || {
        seen_tx.send(Awake::count()).unwrap();
        go_rx.recv().unwrap();
        7
    });
    assert!(seen_rx.recv().unwrap() >= 1, "a core running code is awake");
    eventually("the busy core and the caller with a call in flight", || {
        Awake::count() == 2
    });
    let waiter = std::thread::spawn(move || inv.wait());
    eventually(
        "the waiter parks; the busy core and the caller stay",
        || Awake::count() == 2,
    );
    go_tx.send(()).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), 7);
    eventually("the call was dropped: everyone sleeps again", || {
        Awake::count() == 0
    });

    // A thread that makes its call and waits for it (`wait`, then
    // `block_on`) is counted until it parks.
    for (i, blocking) in [(0, false), (1, true)] {
        let (seen_tx, seen_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let core = rt.core(i).clone();
        let waiter = std::thread::spawn(move || {
            let inv = core.call(move || {
                seen_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                8
            });
            if blocking {
                manycore_rt::block_on(inv)
            } else {
                inv.wait()
            }
        });
        seen_rx.recv().unwrap();
        eventually("the waiter parks, the busy core stays", || {
            Awake::count() == 1
        });
        go_tx.send(()).unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), 8);
        eventually("everyone sleeps again", || Awake::count() == 0);
    }

    rt.shutdown();
    assert_eq!(Awake::count(), 0, "exited cores are not counted");
}
