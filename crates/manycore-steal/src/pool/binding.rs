//! The binding of a thread to the pool it is a worker of.

use super::Pool;
use crate::raw;
use manycore_sync::Arc;
use std::cell::RefCell;

/// The pool this thread is a worker of, and its index. Every change is
/// mirrored into `Local::pool` (invariant B of `raw`), which is cleared
/// again when the thread-local is destroyed.
struct Binding(RefCell<Option<(Arc<Pool>, usize)>>);

impl Binding {
    fn set(&self, b: Option<(Arc<Pool>, usize)>) -> Option<(Arc<Pool>, usize)> {
        let (p, me) = b
            .as_ref()
            .map_or((std::ptr::null(), 0), |(p, i)| (Arc::as_ptr(p), *i));
        raw::set_pool(p, me);
        self.0.replace(b)
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        raw::set_pool(std::ptr::null(), 0);
    }
}

#[cfg(not(loom))]
thread_local! {
    static BOUND: Binding = const { Binding(RefCell::new(None)) };
}
#[cfg(loom)]
loom::thread_local! {
    static BOUND: Binding = Binding(RefCell::new(None));
}

/// Makes the calling thread worker `me` of `pool` (no-op if it already is).
pub(crate) fn bind(pool: &Arc<Pool>, me: usize) {
    BOUND.with(|b| {
        if !matches!(&*b.0.borrow(), Some((p, i)) if Arc::ptr_eq(p, pool) && *i == me) {
            if me < pool.len() {
                pool.workers[me].steer.set_tid();
                #[cfg(not(loom))]
                pool.workers[me].tid.store(
                    manycore_sync::cpu::thread_id(),
                    manycore_sync::atomic::Ordering::Relaxed,
                );
            }
            b.set(Some((pool.clone(), me)));
        }
    });
}

/// Undoes [`bind`], returning the previous binding.
pub(crate) fn unbind() -> Option<(Arc<Pool>, usize)> {
    let prev = BOUND.with(|b| b.set(None));
    if let Some((p, me)) = &prev {
        // Nobody kicks this thread for the pool any more.
        p.workers[*me]
            .tid
            .store(0, manycore_sync::atomic::Ordering::Relaxed);
    }
    prev
}

/// Restores a binding returned by [`unbind`].
#[cfg(feature = "internals")]
pub(crate) fn rebind(prev: Option<(Arc<Pool>, usize)>) {
    BOUND.with(|b| drop(b.set(prev)));
}

fn with_bound<R>(f: impl FnOnce(Option<(&Arc<Pool>, usize)>) -> R) -> R {
    BOUND.with(|b| {
        let b = b.0.borrow();
        f(b.as_ref().map(|(p, i)| (p, *i)))
    })
}

/// The pool and index of the calling thread, if it is a worker.
pub(crate) fn current() -> Option<(Arc<Pool>, usize)> {
    with_bound(|b| b.map(|(p, i)| (p.clone(), i)))
}
