//! A panic in either closure of `join` propagates after both have run, and
//! the worker stays usable afterwards.
#![cfg(not(loom))]

mod common;

use common::fib as busy;
use manycore_steal::{join, scope, ThreadPool};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

fn msg(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

fn check(pool: Option<&ThreadPool>) {
    let run = |f: &(dyn Fn() + Sync)| match pool {
        Some(p) => catch_unwind(AssertUnwindSafe(|| p.install(f))),
        None => catch_unwind(AssertUnwindSafe(f)),
    };
    for _ in 0..50 {
        // Panic in a: b still runs.
        let ran_b = AtomicUsize::new(0);
        let r = run(&|| {
            join(
                || {
                    busy(12);
                    panic!("in a")
                },
                || {
                    busy(12);
                    ran_b.fetch_add(1, Ordering::SeqCst);
                },
            );
        });
        assert_eq!(msg(r.unwrap_err()), "in a");
        assert_eq!(ran_b.load(Ordering::SeqCst), 1);

        // Panic in b: a has run.
        let ran_a = AtomicUsize::new(0);
        let r = run(&|| {
            join(
                || {
                    busy(12);
                    ran_a.fetch_add(1, Ordering::SeqCst);
                },
                || {
                    busy(12);
                    panic!("in b")
                },
            );
        });
        assert_eq!(msg(r.unwrap_err()), "in b");
        assert_eq!(ran_a.load(Ordering::SeqCst), 1);

        // Both: a's panic wins.
        let r = run(&|| {
            join(|| panic!("first"), || panic!("second"));
        });
        assert_eq!(msg(r.unwrap_err()), "first");

        // Deep inside a tree, then the worker is still usable.
        let r = run(&|| {
            join(
                || busy(14),
                || join(|| busy(10), || -> u64 { panic!("deep") }),
            );
        });
        assert_eq!(msg(r.unwrap_err()), "deep");
        let ok = match pool {
            Some(p) => p.install(|| busy(15)),
            None => busy(15),
        };
        assert_eq!(ok, 610);
    }
}

#[test]
fn panics_propagate_outside_pool() {
    check(None);
}

#[test]
fn panics_propagate_in_pool() {
    let pool = ThreadPool::builder().workers(2).max_sequential(2).build();
    check(Some(&pool));
    assert_eq!(pool.install(|| busy(18)), 2584);
}

#[test]
fn scope_panic_propagates_after_all_spawns() {
    let pool = ThreadPool::new(2);
    let n = AtomicUsize::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        pool.install(|| {
            scope(|s| {
                for i in 0..16 {
                    let n = &n;
                    s.spawn(move |_| {
                        busy(10);
                        n.fetch_add(1, Ordering::SeqCst);
                        if i == 3 {
                            panic!("spawned");
                        }
                    });
                }
            })
        })
    }));
    assert_eq!(msg(r.unwrap_err()), "spawned");
    assert_eq!(n.load(Ordering::SeqCst), 16);
    assert_eq!(pool.install(|| busy(10)), 55);
}

/// A context-form tree whose node panics in `a` at height `at`; closures of
/// five words (passed in memory: the inlined join) or of one word each (the
/// out-of-line join) alike. Returns the leaves that ran.
fn ctx_tree_big(s: manycore_steal::Ctx<'_>, h: u32, at: u32, pad: [u64; 3], ran: &AtomicUsize) {
    if h == 0 {
        ran.fetch_add(pad[0] as usize, Ordering::Relaxed);
        return;
    }
    s.join(
        |s| {
            if h == at {
                panic!("ctx a");
            }
            ctx_tree_big(s, h - 1, at, pad, ran)
        },
        |s| ctx_tree_big(s, h - 1, at, pad, ran),
    );
}

fn plain_tree_big(h: u32, at: u32, pad: [u64; 3], ran: &AtomicUsize) {
    if h == 0 {
        ran.fetch_add(pad[0] as usize, Ordering::Relaxed);
        return;
    }
    join(
        || {
            if h == at {
                panic!("ctx a");
            }
            plain_tree_big(h - 1, at, pad, ran)
        },
        || plain_tree_big(h - 1, at, pad, ran),
    );
}

fn ctx_tree_small(s: manycore_steal::Ctx<'_>, h: (u32, u32), ran: &AtomicUsize) {
    if h.0 == 0 {
        ran.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let next = (h.0 - 1, h.1);
    s.join(
        // Two words each (`next` and `ran`): passed in registers.
        move |s| {
            if next.0 + 1 == next.1 {
                panic!("ctx a");
            }
            ctx_tree_small(s, next, ran)
        },
        move |s| ctx_tree_small(s, next, ran),
    );
}

fn plain_tree_small(h: (u32, u32), ran: &AtomicUsize) {
    if h.0 == 0 {
        ran.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let next = (h.0 - 1, h.1);
    join(
        // Two words each: the out-of-line join.
        move || {
            if next.0 + 1 == next.1 {
                panic!("ctx a");
            }
            plain_tree_small(next, ran)
        },
        move || plain_tree_small(next, ran),
    );
}

#[test]
fn ctx_join_panics_run_b_deep_in_the_tree() {
    let pool = ThreadPool::builder().workers(2).max_sequential(3).build();
    for in_pool in [false, true] {
        for kind in 0..4 {
            let big = kind == 1 || kind == 2;
            let ran = AtomicUsize::new(0);
            let f = || match kind {
                0 => manycore_steal::with_ctx(|s| ctx_tree_small(s, (10, 2), &ran)),
                1 => manycore_steal::with_ctx(|s| ctx_tree_big(s, 10, 2, [1, 2, 3], &ran)),
                // The plain join with big closures (inlined as well).
                2 => plain_tree_big(10, 2, [1, 2, 3], &ran),
                // The plain join with small closures (out of line).
                _ => plain_tree_small((10, 2), &ran),
            };
            let r = if in_pool {
                catch_unwind(AssertUnwindSafe(|| pool.install(f)))
            } else {
                catch_unwind(AssertUnwindSafe(f))
            };
            assert_eq!(msg(r.unwrap_err()), "ctx a");
            // Every node of height 2 lost its `a` half (2 leaves of 4); every
            // `b` ran, whichever panic went on.
            assert_eq!(
                ran.load(Ordering::Relaxed),
                1024 / 2,
                "kind {kind}, big {big}, pool {in_pool}"
            );
        }
    }
    assert_eq!(pool.install(|| busy(18)), 2584);
}
