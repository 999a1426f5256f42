//! Loom model of the latent-list / promotion / steal / join protocol: an owner
//! runs a join tree with a heartbeat at every join while a thief announces
//! demand and sleeps; loom explores every interleaving (up to a preemption
//! bound) of demand, promotion, hand-off, reclaim, the thief's `done` and the
//! owner's wait, and checks results, panics and that nobody sleeps forever.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release
//! -p manycore-steal --lib loom_tests`

use crate::{join, scope, with_ctx, ThreadPool};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A pool of `workers` whose threads tick every `max_sequential` joins (its
/// own setting: the models run in parallel and must not share one).
/// Worker 0 is the model's own thread, in `install_here`; the models of
/// the injector (below) use `install` from outside instead.
fn pool(workers: usize, max_sequential: u32) -> ThreadPool {
    ThreadPool::builder()
        .workers(workers)
        .max_sequential(max_sequential)
        .caller_is_worker0()
        .build()
}

/// A pool of `workers` threads, entered from outside.
fn threads(workers: usize) -> ThreadPool {
    ThreadPool::builder()
        .workers(workers)
        .max_sequential(1)
        .build()
}

/// Announces the calling worker's demand, as a runtime core's idle hook does
/// before its scheduler runs a message: a worker that then runs a join tree
/// has *stale* demand, which its next tick withdraws.
fn register_demand() {
    let (p, me) = crate::pool::current().expect("a worker of the pool");
    p.register(me);
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

#[test]
fn steal_and_join() {
    // Std atomics: they count across loom's executions, outside the model.
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    static STOLEN: AtomicUsize = AtomicUsize::new(0);
    static RECLAIMED: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let pool = pool(2, 1);
        let r = pool.install_here(|| join(|| join(|| 1, || 2), || 3));
        assert_eq!(r, ((1, 2), 3));
        let s = pool.stats();
        RUNS.fetch_add(1, Relaxed);
        STOLEN.fetch_add((s.promotions > s.reclaims) as usize, Relaxed);
        RECLAIMED.fetch_add((s.reclaims > 0) as usize, Relaxed);
        drop(pool);
    });
    // The model did explore the interesting paths.
    println!("runs {RUNS:?} stolen {STOLEN:?} reclaimed {RECLAIMED:?}");
    assert!(STOLEN.load(Relaxed) > 0);
    assert!(RECLAIMED.load(Relaxed) > 0);
}

#[test]
fn handback_serves_the_returning_thief() {
    // Two joins in a row: a thief that returns the first one's `b` marks
    // itself HUNGRY before its DONE, and the owner's next tick may hand it
    // the second `b` directly (`Local::handback`), racing with the thief
    // setting its demand bit after DONE and with its idle loop.
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    static HANDBACKS: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let pool = pool(2, 1);
        let r = pool.install_here(|| {
            let x = join(|| 1, || 2);
            let y = join(|| 3, || 4);
            (x, y)
        });
        assert_eq!(r, ((1, 2), (3, 4)));
        HANDBACKS.fetch_add(pool.stats().handbacks as usize, Relaxed);
        drop(pool);
    });
    assert!(HANDBACKS.load(Relaxed) > 0);
}

#[test]
fn stale_demand_is_withdrawn_at_a_tick() {
    // Worker 0, once its root join may have been stolen, asks for work (as a
    // runtime core's idle hook does before its scheduler runs a message)
    // and goes on with its tree: its next tick withdraws that stale demand
    // (`Pool::withdraw_stale`), racing with the thief, which, ticking in the
    // stolen piece, may claim it and hand worker 0 a frame (then worker 0's
    // withdrawal fails and the frame stays: the thief takes it back at its
    // join, or worker 0 runs it while it waits).
    model(|| {
        let pool = pool(2, 1);
        let r = pool.install_here(|| {
            join(
                || {
                    register_demand();
                    join(|| 1, || 2)
                },
                || join(|| 3, || 4),
            )
        });
        assert_eq!(r, ((1, 2), (3, 4)));
        drop(pool);
    });
}

#[test]
fn stolen_panic_propagates() {
    model(|| {
        let pool = pool(2, 1);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.install_here(|| join(|| 1, || -> u32 { std::panic::panic_any(7u32) }))
        }));
        assert_eq!(*r.unwrap_err().downcast::<u32>().unwrap(), 7);
        // The worker is still usable.
        assert_eq!(pool.install_here(|| join(|| 4, || 5)), (4, 5));
        drop(pool);
    });
}

#[test]
fn three_workers_leapfrog() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(|| {
        let pool = pool(3, 1);
        let r = pool.install_here(|| join(|| join(|| 1, || 2), || join(|| 3, || 4)));
        assert_eq!(r, ((1, 2), (3, 4)));
        drop(pool);
    });
}

#[test]
fn context_form_chain() {
    model(|| {
        let pool = pool(2, 1);
        let r = pool.install_here(|| {
            with_ctx(|s| s.join(|s| s.join(|_| 1, |_| 2), |s| s.join(|_| 3, |_| 4)))
        });
        assert_eq!(r, ((1, 2), (3, 4)));
        drop(pool);
    });
}

#[test]
fn context_form_eager() {
    // Ticks every other join, so recorded joins between ticks serve demand
    // eagerly (serve_if_hungry) as well as at ticks.
    model(|| {
        let pool = pool(2, 2);
        let r = pool.install_here(|| {
            with_ctx(|s| {
                s.join(
                    |s| s.join(|_| 1, |s| s.join(|_| 2, |_| 3)),
                    |s| s.join(|_| 4, |_| 5),
                )
            })
        });
        assert_eq!(r, ((1, (2, 3)), (4, 5)));
        drop(pool);
    });
}

#[test]
fn install_from_outside() {
    // The injector: a thread that is no worker pushes a job borrowing its
    // stack and blocks; the one worker, idle or about to sleep, must see it
    // (its demand bit and the pusher's fence, or its re-check after
    // `prepare_wait`), and its latch must wake the caller.
    model(|| {
        let pool = threads(1);
        let x = 5;
        assert_eq!(pool.install(|| x + 1), 6);
        drop(pool);
    });
}

#[test]
fn spawn_is_stolen_or_run_inline() {
    // A scope's spawn is on the owner's deque from the moment it is spawned:
    // the idle worker may take it (woken through its demand bit) while the
    // body still runs, or the owner runs it at the end of the scope.
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    static ELSEWHERE: AtomicUsize = AtomicUsize::new(0);
    static INLINE: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let pool = pool(2, 1);
        let (owner, ran_on) = pool.install_here(|| {
            let owner = crate::current_thread_index();
            let mut ran_on = None;
            scope(|s| {
                s.spawn(|_| ran_on = crate::current_thread_index());
            });
            (owner, ran_on)
        });
        assert!(ran_on.is_some());
        if owner == ran_on {
            INLINE.fetch_add(1, Relaxed);
        } else {
            ELSEWHERE.fetch_add(1, Relaxed);
        }
        drop(pool);
    });
    assert!(INLINE.load(Relaxed) > 0);
    assert!(ELSEWHERE.load(Relaxed) > 0);
}

#[test]
fn scope_body_waits_for_its_spawn() {
    // The body waits for its own spawn; yielding runs it on the owner if the
    // other worker has not taken it.
    model(|| {
        let pool = pool(2, 1);
        pool.install_here(|| {
            let done = loom::sync::atomic::AtomicBool::new(false);
            scope(|s| {
                s.spawn(|_| done.store(true, std::sync::atomic::Ordering::Release));
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    if crate::yield_now() == Some(crate::Yield::Idle) {
                        loom::thread::yield_now();
                    }
                }
            });
        });
        drop(pool);
    });
}

#[test]
fn kick_moves_the_b_of_a_blocked_a() {
    // Rayon's `join_context_second`: `a` waits for something that only `b`
    // does, and reaches no join meanwhile. The idle worker kicks the busy
    // one before it sleeps (a kick is a flag here; `deliver_kick` in `a`'s
    // loop stands for the signal landing at that point); the kicked
    // worker's handler promotes `b` to it, unless the join's own tick (if
    // the thief asked before it) already has. Checks that `a` always ends
    // (no lost demand, kick or wake-up) and that kicks did move `b`.
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    static KICKED: AtomicUsize = AtomicUsize::new(0);
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let pool = ThreadPool::builder()
            .workers(2)
            .max_sequential(1)
            .caller_is_worker0()
            .kicking()
            .build();
        let done = loom::sync::atomic::AtomicBool::new(false);
        let r = pool.install_here(|| {
            join(
                || {
                    while !done.load(std::sync::atomic::Ordering::Acquire) {
                        crate::pool::deliver_kick();
                        loom::thread::yield_now();
                    }
                    1
                },
                || {
                    done.store(true, std::sync::atomic::Ordering::Release);
                    2
                },
            )
        });
        assert_eq!(r, (1, 2));
        let s = pool.stats();
        assert!(s.promotions > s.reclaims, "b ran on the other worker");
        RUNS.fetch_add(1, Relaxed);
        KICKED.fetch_add((s.kicks > 0) as usize, Relaxed);
        drop(pool);
    });
    println!("runs {RUNS:?} kicked {KICKED:?}");
    assert!(KICKED.load(Relaxed) > 0);
}
