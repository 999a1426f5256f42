//! Spawns from a core inside `batch_spawns` are published in batches
//! (src/README.md, "Deferred publication"): none is left unpublished while
//! its sender waits for it through the runtime, after the closure that sent
//! it returns, or after the scope ends. Outside a scope every spawn is
//! visible at once, so code that waits for one by other means does not
//! hang. The timeouts below only turn a hang into a failure.
use manycore_rt::{batch_spawns, IdlePolicy, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const HANG: Duration = Duration::from_secs(20);

fn runtime(cores: usize, idle: IdlePolicy) -> Runtime {
    Runtime::builder().cores(cores).idle(idle).build().unwrap()
}

/// A core spawns to core 1, then waits for the spawn's effect by calls to
/// core 2 (a wait on another destination's result): the spawn is published
/// before the wait.
#[test]
fn spawn_then_wait_on_another_core() {
    for idle in [IdlePolicy::Sleep, IdlePolicy::default()] {
        let rt = runtime(3, idle);
        let (c1, c2) = (rt.core(1).clone(), rt.core(2).clone());
        let done = rt
            .core(0)
            .call(move || {
                let flag = Arc::new(AtomicBool::new(false));
                let f = flag.clone();
                batch_spawns(|| c1.spawn(move || f.store(true, Ordering::Release)).unwrap());
                let mut calls = 0u64;
                while !flag.load(Ordering::Acquire) {
                    c2.call(|| ()).wait().unwrap();
                    calls += 1;
                }
                calls
            })
            .wait_timeout(HANG);
        assert!(done.is_ok(), "{idle:?}: {done:?}");
    }
}

/// A closure spawns fewer messages than a batch and returns: they are
/// published when it returns, though its core then has nothing to do.
#[test]
fn spawns_published_when_the_closure_returns() {
    for idle in [IdlePolicy::Sleep, IdlePolicy::default()] {
        let rt = runtime(2, idle);
        let c1 = rt.core(1).clone();
        let (tx, rx) = mpsc::channel();
        rt.core(0)
            .spawn(move || {
                for i in 0..3 {
                    let tx = tx.clone();
                    batch_spawns(|| c1.spawn(move || tx.send(i).unwrap()).unwrap());
                }
            })
            .unwrap();
        for i in 0..3 {
            assert_eq!(rx.recv_timeout(HANG), Ok(i), "{idle:?}");
        }
    }
}

/// A long closure streams spawns of every size (one to four cells) and
/// then waits for all of them through the runtime: each runs once, in
/// order, and none is left behind a partial batch.
#[test]
fn stream_of_mixed_sizes_runs_once_in_order() {
    let rt = runtime(2, IdlePolicy::default());
    let c1 = rt.core(1).clone();
    let next = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(AtomicBool::new(false));
    let (n2, bad2) = (next.clone(), bad.clone());
    let r = rt
        .core(0)
        .call(move || {
            const N: usize = 10_000;
            // Half inside a scope, half outside: one order for both.
            for i in 0..N {
                let scoped = i % 1000 < 500;
                let (next, bad) = (n2.clone(), bad2.clone());
                let check = move |i: usize| {
                    if next.fetch_add(1, Ordering::Relaxed) != i {
                        bad.store(true, Ordering::Relaxed);
                    }
                };
                let send = || match i % 4 {
                    0 => c1.spawn(move || check(i)),
                    1 => {
                        let pad = [i as u64; 2];
                        c1.spawn(move || check(pad[1] as usize))
                    }
                    2 => {
                        let pad = [i as u64; 4];
                        c1.spawn(move || check(pad[3] as usize))
                    }
                    _ => {
                        let pad = [i as u64; 5];
                        c1.spawn(move || check(pad[4] as usize))
                    }
                };
                if scoped { batch_spawns(send) } else { send() }.unwrap();
            }
            let n3 = n2.clone();
            c1.call(move || n3.load(Ordering::Relaxed)).wait().unwrap()
        })
        .wait_timeout(HANG);
    assert_eq!(r, Ok(10_000));
    assert!(!bad.load(Ordering::Relaxed), "a spawn ran out of order");
}

/// Outside a scope, a closure on a core that spawns and then waits for the
/// spawn's effect by means the runtime does not see (spinning on an
/// atomic, a std channel) gets it: the default publishes every spawn.
#[test]
fn spawn_then_wait_outside_the_runtime_without_a_scope() {
    for idle in [IdlePolicy::Sleep, IdlePolicy::default()] {
        let rt = runtime(2, idle);
        let c1 = rt.core(1).clone();
        let r = rt
            .core(0)
            .call(move || {
                let flag = Arc::new(AtomicBool::new(false));
                let f = flag.clone();
                c1.spawn(move || f.store(true, Ordering::Release)).unwrap();
                let t = std::time::Instant::now();
                while !flag.load(Ordering::Acquire) {
                    if t.elapsed() > HANG {
                        return Err("spin: the spawn never ran");
                    }
                    std::thread::yield_now();
                }
                let (tx, rx) = mpsc::channel();
                c1.spawn(move || tx.send(7).unwrap()).unwrap();
                rx.recv_timeout(HANG)
                    .map_err(|_| "channel: the spawn never ran")
            })
            .wait_timeout(HANG);
        assert_eq!(r, Ok(Ok(7)), "{idle:?}");
    }
}

/// A scope publishes when it ends, also when its body panics; scopes
/// nest (only the outer end publishes); off the cores the body just runs.
#[test]
fn scope_ends_publish_nest_and_survive_panics() {
    assert_eq!(batch_spawns(|| 5), 5);
    let rt = runtime(2, IdlePolicy::default());
    let c1 = rt.core(1).clone();
    let r = rt
        .core(0)
        .call(move || {
            let wait_for = |rx: &mpsc::Receiver<u32>| rx.recv_timeout(HANG).ok();
            let (tx, rx) = mpsc::channel();
            batch_spawns(|| {
                batch_spawns(|| {
                    let tx = tx.clone();
                    c1.spawn(move || tx.send(1).unwrap()).unwrap();
                });
                let tx = tx.clone();
                c1.spawn(move || tx.send(2).unwrap()).unwrap();
            });
            let got = (wait_for(&rx), wait_for(&rx));
            let tx2 = tx.clone();
            let c = c1.clone();
            let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                batch_spawns(|| {
                    c.spawn(move || tx2.send(3).unwrap()).unwrap();
                    panic!("inside the scope");
                })
            }));
            // The scope is closed: this spawn is visible at once.
            c1.spawn(move || tx.send(4).unwrap()).unwrap();
            (got, p.is_err(), wait_for(&rx), wait_for(&rx))
        })
        .wait_timeout(HANG);
    assert_eq!(r, Ok(((Some(1), Some(2)), true, Some(3), Some(4))));
}
