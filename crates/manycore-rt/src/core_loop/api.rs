//! What code running on a core may ask of its core: serve it once
//! ([`poll_once`]), run urgent work ([`preempt_point`]), sleep until there
//! is work ([`park_current`]), publish its spawns in batches
//! ([`batch_spawns`]); and the counters the core keeps about it.
//! `debug_counts` exists only with the `internals` feature, for tests.

use super::with_local;
use manycore_sync::atomic::Ordering;

/// On a core: (live remote objects, collectives waiting for children) on
/// this core. For tests that check nothing leaks; (0, 0) elsewhere.
///
/// Only with the `internals` feature: a probe for tests, not an API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn debug_counts() -> (usize, usize) {
    with_local(|l| l.map_or((0, 0), |l| (l.objects.len(), l.pending.len())))
}

/// Runs `f` with the spawns this core makes published in batches: a
/// [`Core::spawn`](crate::Core::spawn) made inside `f`, to another core,
/// may stay invisible to its destination until 64 small messages wait for
/// that destination, `f` returns, or this core waits or polls through the
/// runtime (a `wait`, `block_on`, `.await` that is pending, `poll_once`,
/// `park_current`). A stream of spawns then costs one fence per batch
/// instead of one per message.
///
/// The price is the one rule of the scope: inside `f`, do not wait for
/// a spawn's effect by other means than the runtime (spinning on an
/// atomic, a `std` channel or lock): the spawn may not be visible yet, and
/// that wait would last for ever. Outside a scope (the default) every
/// spawn is visible at once. Scopes nest; off the cores `f` simply runs.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
/// let (c1, sum) = (rt.core(1).clone(), Arc::new(AtomicU64::new(0)));
/// let s = sum.clone();
/// rt.core(0).call(move || {
///     manycore_rt::batch_spawns(|| {
///         for i in 0..1000u64 {
///             let s = s.clone();
///             c1.spawn(move || { s.fetch_add(i, Ordering::Relaxed); }).unwrap();
///         }
///     });
///     // Published: a call to core 1 now runs after all of them.
///     c1.call(|| ()).wait().unwrap();
/// }).wait().unwrap();
/// assert_eq!(sum.load(Ordering::Relaxed), 499_500);
/// ```
pub fn batch_spawns<R>(f: impl FnOnce() -> R) -> R {
    /// Closes the scope, also when `f` unwinds.
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            with_local(|l| {
                if let Some(l) = l {
                    let open = l.out.batching.get().saturating_sub(1);
                    l.out.batching.set(open);
                    if open == 0 {
                        l.publish_deferred();
                    }
                }
            });
        }
    }
    let on_core = with_local(|l| {
        l.map(|l| l.out.batching.set(l.out.batching.get().saturating_add(1)))
            .is_some()
    });
    if !on_core {
        return f();
    }
    let _scope = Scope;
    f()
}

/// A cheap scheduling point for long computations on a core: if urgent
/// invocations wait in this core's front lane, runs them now and returns
/// true. Costs a thread-local access and one load otherwise; off the cores
/// it does nothing.
///
/// ```
/// let rt = manycore_rt::Runtime::builder().cores(1).build().unwrap();
/// let r = rt.core(0).call(|| {
///     let mut acc = 0u64;
///     for i in 0..1_000_000u64 {
///         acc = acc.wrapping_add(i);
///         if i % 4096 == 0 { manycore_rt::preempt_point(); }
///     }
///     acc
/// }).wait();
/// assert!(r.is_ok());
/// ```
pub fn preempt_point() -> bool {
    with_local(|l| l.is_some_and(|l| l.run_urgent() > 0))
}

/// On a core: sleeps on this core's doorbell until a message, a notify, a
/// timer or `timeout` (whichever first), following the idle protocol (no
/// wakeup is lost). Returns at once if work is already waiting; then call
/// [`poll_once`]. Off the cores: sleeps the thread for `timeout`. Every
/// duration is accepted (`Duration::MAX` on a core sleeps until the next
/// message; off the cores, for good).
///
/// With [`poll_once`] it makes a waiting loop of one's own on a core: code
/// that waits for a condition which a message will make true serves the
/// core and sleeps between looks, instead of spinning.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
/// let c1 = rt.core(1).clone();
/// let r = rt.core(0).call(move || {
///     let flag = Arc::new(AtomicBool::new(false));
///     let (f, c0) = (flag.clone(), manycore_rt::current().unwrap());
///     // Core 1 answers with a message that raises the flag on core 0.
///     c1.spawn(move || drop(c0.spawn(move || f.store(true, Ordering::Relaxed)))).unwrap();
///     while !flag.load(Ordering::Relaxed) {
///         manycore_rt::park_current(Duration::from_millis(10));
///         manycore_rt::poll_once();
///     }
/// }).wait();
/// assert!(r.is_ok());
/// ```
pub fn park_current(timeout: std::time::Duration) {
    let on_core = with_local(|l| {
        l.map(|l| {
            if !l.has_work() {
                l.sleep(&|| false, Some(crate::timer::deadline_in(timeout)));
            }
        })
    });
    if on_core.is_none() {
        std::thread::sleep(timeout);
    }
}

/// Polls the current core once: runs pending messages and ready tasks (a
/// bounded batch from each source) and returns how many ran. On a thread
/// that is not a core it does nothing and returns 0. Long computations on a
/// core call this to keep cross-core invocations flowing.
pub fn poll_once() -> usize {
    with_local(|l| l.map_or(0, |l| l.poll()))
}

/// Counts a panic caught in code this core ran (for `Runtime::stats`).
pub(crate) fn note_panic() {
    with_local(|l| {
        if let Some(l) = l {
            l.note_panic();
        }
    })
}

/// Counts a result that arrived after its waiter gave up (dropped here).
pub(crate) fn note_late_result() {
    with_local(|l| {
        if let Some(l) = l {
            let st = &l.shared.states[l.index];
            st.late_results.store(
                st.late_results.load(Ordering::Relaxed) + 1,
                Ordering::Relaxed,
            );
        }
    })
}
