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
