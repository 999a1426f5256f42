//! Public-API smoke tests: join, the context form, scope, ThreadPool.
#![cfg(not(loom))]

mod common;

use common::{fib, fib_ctx};
use manycore_steal::{join, scope, with_ctx, ThreadPool};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn join_outside_any_pool_uses_the_global_pool() {
    assert_eq!(fib(15), 610);
    let (i, j) = join(manycore_steal::current_thread_index, || 0);
    assert!(i.is_some() && j == 0, "ran on a worker of the global pool");
    assert_eq!(with_ctx(|s| fib_ctx(s, 15)), 610);
    let mut v = [0u32; 2];
    let (l, r) = v.split_at_mut(1);
    join(|| l[0] = 1, || r[0] = 2);
    assert_eq!(v, [1, 2]);
}

#[test]
fn pool_computes_and_steals() {
    let pool = ThreadPool::builder().workers(2).max_sequential(1).build();
    // Correct whatever happens; repeat until the thief (which may not be
    // scheduled at all for a while on a loaded machine) has taken some work.
    for i in 0..5000 {
        assert_eq!(pool.install(|| fib(16)), 987);
        assert_eq!(pool.install(|| with_ctx(|s| fib_ctx(s, 16))), 987);
        if pool.stats().promotions > 0 && i > 10 {
            break;
        }
    }
    assert!(pool.stats().promotions > 0, "{:?}", pool.stats());
}

#[test]
fn single_worker_pool() {
    let pool = ThreadPool::new(1);
    assert_eq!(pool.install(|| fib(20)), 6765);
    assert_eq!(pool.stats().promotions, 0);
}

#[test]
fn nested_install_runs_inline() {
    let pool = ThreadPool::new(2);
    let r = pool.install(|| pool.install(|| fib(12)));
    assert_eq!(r, 144);
}

#[test]
fn scope_runs_every_spawn() {
    let pool = ThreadPool::new(2);
    let n = AtomicUsize::new(0);
    let mut out = vec![0u64; 64];
    pool.install(|| {
        scope(|s| {
            for (i, o) in out.iter_mut().enumerate() {
                let n = &n;
                s.spawn(move |s| {
                    *o = fib(i as u64 % 16);
                    n.fetch_add(1, Ordering::Relaxed);
                    s.spawn(move |_| {
                        n.fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
        })
    });
    assert_eq!(n.load(Ordering::Relaxed), 128);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(*o, fib(i as u64 % 16));
    }
    // Outside any pool, too.
    let r = scope(|s| {
        s.spawn(|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        7
    });
    assert_eq!(r, 7);
    assert_eq!(n.load(Ordering::Relaxed), 129);
}

#[test]
fn pools_come_and_go() {
    for w in 1..=4 {
        let pool = ThreadPool::new(w);
        assert_eq!(pool.install(|| fib(14)), 377);
    }
}

#[test]
fn pool_inside_another_pools_join() {
    // B's workers must not be handed A's frames (install hides them).
    let a = ThreadPool::builder().workers(2).max_sequential(1).build();
    let b = ThreadPool::builder().workers(2).max_sequential(1).build();
    for _ in 0..20 {
        let r = a.install(|| join(|| b.install(|| fib(14)), || fib(14)));
        assert_eq!(r, (377, 377));
    }
}
