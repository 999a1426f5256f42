//! Loom models of the [`EventCount`] protocol: no wakeup is ever lost.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p manycore-sync --lib loom_tests
//! ```

use crate::EventCount;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;

#[test]
fn no_lost_wakeup() {
    loom::model(|| {
        let ec = Arc::new(EventCount::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (e2, f2) = (ec.clone(), flag.clone());
        let t = loom::thread::spawn(move || {
            f2.store(true, Ordering::Relaxed);
            e2.notify_one();
        });
        loop {
            if flag.load(Ordering::Relaxed) {
                break;
            }
            let key = ec.prepare_wait();
            if flag.load(Ordering::Relaxed) {
                ec.cancel_wait();
                break;
            }
            // If the protocol could lose the wakeup, loom reports a deadlock here.
            ec.wait(key);
        }
        t.join().unwrap();
    });
}

#[test]
fn two_waiters_notify_all() {
    // Three threads with retry loops: bound preemptions to keep the state space finite.
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| {
        let ec = Arc::new(EventCount::new());
        let flag = Arc::new(AtomicBool::new(false));
        let mut hs = Vec::new();
        for _ in 0..2 {
            let (e, f) = (ec.clone(), flag.clone());
            hs.push(loom::thread::spawn(move || loop {
                if f.load(Ordering::Relaxed) {
                    break;
                }
                let key = e.prepare_wait();
                if f.load(Ordering::Relaxed) {
                    e.cancel_wait();
                    break;
                }
                e.wait(key);
            }));
        }
        flag.store(true, Ordering::Relaxed);
        ec.notify_all();
        for h in hs {
            h.join().unwrap();
        }
    });
}

/// [`TryLock`](crate::TryLock): two threads try the lock, each increments
/// the value non-atomically under it (loom's cell reports any overlap as a
/// race) and a third reads it after both; every increment made under a
/// guard is seen by the next guard.
#[test]
fn try_lock_excludes_and_orders() {
    loom::model(|| {
        let l = Arc::new(crate::TryLock::new(0u32));
        let won: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                loom::thread::spawn(move || match l.try_lock() {
                    Some(mut g) => {
                        let v = *g;
                        *g = v + 1;
                        1
                    }
                    None => 0,
                })
            })
            .collect();
        let n: u32 = won.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(n >= 1, "a free lock was never taken");
        let g = l.try_lock().expect("free once both guards are gone");
        assert_eq!(*g, n);
    });
}

/// A loser that retries: once the holder releases, the retry succeeds and
/// sees the holder's write.
#[test]
fn try_lock_retry_sees_release() {
    loom::model(|| {
        let l = Arc::new(crate::TryLock::new(0u32));
        let l2 = l.clone();
        let t = loom::thread::spawn(move || {
            if let Some(mut g) = l2.try_lock() {
                *g = 7;
            }
        });
        let mut seen = None;
        for _ in 0..3 {
            if let Some(g) = l.try_lock() {
                seen = Some(*g);
                break;
            }
            loom::thread::yield_now();
        }
        t.join().unwrap();
        let g = l.try_lock().expect("free at the end");
        assert!(*g == 0 || *g == 7);
        if let Some(v) = seen {
            assert!(v == 0 || v == 7);
        }
    });
}
