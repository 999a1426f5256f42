//! rayon-core's semantics on the lazy engine: the global pool, `install`
//! with borrows, eager scope spawns, the panic handler. Every wait here is
//! bounded, and no test needs two threads to run at the same moment.
#![cfg(not(loom))]

mod common;

use common::{fib, rt};
use manycore_steal::{
    current_thread_index, join, scope, spawn, StealExt, ThreadPool, ThreadPoolBuilder,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

/// Long enough that only a hang reaches it.
const BOUND: Duration = Duration::from_secs(60);

#[test]
fn scope_body_waits_for_its_own_spawn() {
    let pool = ThreadPool::new(2);
    let got = pool.install(|| {
        scope(|s| {
            let (tx, rx) = channel();
            s.spawn(move |_| tx.send(42).unwrap());
            // The spawn is stealable as soon as it is spawned: the other
            // worker takes it while this body blocks.
            rx.recv_timeout(BOUND)
                .expect("the spawn ran while the body waited")
        })
    });
    assert_eq!(got, 42);
}

#[test]
fn join_from_a_plain_thread_runs_in_parallel() {
    // A thread that is no worker: the join goes to the global pool, and `b`
    // is stolen by another worker while `a` keeps joining (its ticks hand
    // `b` to an idle worker once that worker asks for work).
    if manycore_steal::current_num_threads() < 2 {
        // One worker (one CPU, or RAYON_NUM_THREADS=1): nobody to run `b`
        // beside `a`, which spins until `b` ran.
        eprintln!("skipped: the global pool has one worker");
        return;
    }
    let t = std::thread::spawn(|| {
        assert_eq!(current_thread_index(), None);
        let b_ran = AtomicBool::new(false);
        join(
            || {
                let me = current_thread_index();
                let deadline = Instant::now() + BOUND;
                while !b_ran.load(Ordering::Acquire) {
                    assert!(Instant::now() < deadline, "b was never stolen");
                    // Joins tick: they serve a hungry worker.
                    std::hint::black_box(fib(10));
                }
                me
            },
            || {
                b_ran.store(true, Ordering::Release);
                current_thread_index()
            },
        )
    });
    let (a, b) = t.join().unwrap();
    assert!(a.is_some() && b.is_some(), "both ran on workers");
    assert_ne!(a, b, "a and b ran on two workers");
}

#[test]
fn install_borrows_a_slice() {
    let v: Vec<u64> = (1..=1000).collect();
    let slice = &v[..];
    let pool = ThreadPool::new(2);
    let sum = pool.install(|| {
        let (l, r) = slice.split_at(slice.len() / 2);
        let (a, b) = join(|| l.iter().sum::<u64>(), || r.iter().sum::<u64>());
        a + b
    });
    assert_eq!(sum, 500_500);

    // On a runtime too: the closure borrows, the caller waits.
    let rt = rt(2);
    let mut out = vec![0u64; 4];
    rt.install(|| {
        for (i, x) in out.iter_mut().enumerate() {
            *x = slice[i] * 2;
        }
    });
    assert_eq!(out, [2, 4, 6, 8]);
    rt.shutdown();
}

#[test]
fn install_resumes_the_panic_after_the_job_finished() {
    let pool = ThreadPool::new(2);
    let data = [1, 2, 3];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| {
            assert_eq!(data.len(), 3);
            std::panic::panic_any(7u8)
        })
    }));
    assert_eq!(*r.unwrap_err().downcast::<u8>().unwrap(), 7);
    assert_eq!(pool.install(|| data.len()), 3);
}

#[test]
fn panic_handler_is_called() {
    let (tx, rx) = channel();
    let tx = std::sync::Mutex::new(tx);
    let pool = ThreadPoolBuilder::new()
        .num_threads(1)
        .panic_handler(move |p| {
            let msg = p.downcast::<&str>().map(|s| *s).unwrap_or("?");
            tx.lock().unwrap().send(msg.to_owned()).unwrap();
        })
        .build();
    pool.spawn(|| panic!("boom"));
    assert_eq!(rx.recv_timeout(BOUND).unwrap(), "boom");
}

#[test]
fn spawn_from_outside_runs_on_the_global_pool() {
    let (tx, rx) = channel();
    spawn(move || tx.send(current_thread_index()).unwrap());
    assert!(rx.recv_timeout(BOUND).unwrap().is_some());
}

#[test]
fn global_pool_size_follows_the_cpus() {
    // Unless the environment says otherwise (then it follows that).
    let n = manycore_steal::current_num_threads();
    assert_eq!(n, manycore_steal::default_num_threads());
    assert!((1..=64).contains(&n));
}

#[test]
fn scope_on_a_runtime_body_waits_for_its_own_spawn() {
    // The same on runtime cores: the idle core takes the spawn in its idle
    // hook, woken through its demand bit.
    let rt = rt(2);
    let got = rt.install(|| {
        scope(|s| {
            let (tx, rx) = channel();
            s.spawn(move |_| tx.send(7).unwrap());
            rx.recv_timeout(BOUND)
                .expect("the spawn ran while the body waited")
        })
    });
    assert_eq!(got, 7);
    rt.shutdown();
}
