//! The process-wide count of awake manycore threads that the idle policy
//! consults (`manycore_sync::Awake`): cores count but while they sleep,
//! outside threads only while they spin in a wait. One test in its own
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
fn cores_count_while_awake_and_outside_threads_while_they_spin() {
    assert_eq!(Awake::count(), 0, "no manycore thread yet");
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .build()
        .unwrap();
    eventually("idle cores sleep after their spin", || Awake::count() == 0);

    // A core running code is awake; an outside thread that waits for it
    // spins (counted) for at most 1 ms and then parks (not counted).
    let (seen_tx, seen_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let inv = rt.core(0).call(move || {
        seen_tx.send(Awake::count()).unwrap();
        go_rx.recv().unwrap();
        7
    });
    assert!(seen_rx.recv().unwrap() >= 1, "a core running code is awake");
    let waiter = std::thread::spawn(move || inv.wait());
    eventually("the outside waiter parks, the busy core stays", || {
        Awake::count() == 1
    });
    go_tx.send(()).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), 7);
    eventually("everyone sleeps again", || Awake::count() == 0);

    // The same for `block_on` on an outside thread.
    let (seen_tx, seen_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let inv = rt.core(1).call(move || {
        seen_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        8
    });
    seen_rx.recv().unwrap();
    let waiter = std::thread::spawn(move || manycore_rt::block_on(inv));
    eventually("the block_on waiter parks, the busy core stays", || {
        Awake::count() == 1
    });
    go_tx.send(()).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), 8);
    eventually("everyone sleeps again", || Awake::count() == 0);

    rt.shutdown();
    assert_eq!(Awake::count(), 0, "exited cores are not counted");
}
