//! `here`: which core the calling thread is, cached in a thread-local so
//! that telling a local signal from a remote one costs one thread-local
//! read and two compares (asking `manycore_rt::current()` every time would
//! clone the runtime's `Arc`, an atomic read-modify-write).
//!
//! A core is one thread for its whole life and a thread is at most one core
//! (cores are threads the runtime starts), so the first answer stays right.

use manycore_rt::Core;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Not looked up yet.
const UNKNOWN: usize = usize::MAX;
/// Looked up: this thread is not a core.
const NOT_A_CORE: usize = usize::MAX - 1;

thread_local! {
    /// (runtime id, core index) of this thread.
    static HERE: Cell<(u64, usize)> = const { Cell::new((0, UNKNOWN)) };
    /// This core's handle as the frames of instances made here share it.
    static HOME: RefCell<Option<Arc<Core>>> = const { RefCell::new(None) };
}

/// (runtime id, core index) of the calling thread, or None off the cores.
fn here() -> Option<(u64, usize)> {
    let v = HERE
        .try_with(|h| {
            let v = h.get();
            if v.1 != UNKNOWN {
                return v;
            }
            let v = match manycore_rt::current() {
                Some(c) => (c.runtime_id(), c.index()),
                None => (0, NOT_A_CORE),
            };
            h.set(v);
            v
        })
        .unwrap_or((0, NOT_A_CORE));
    (v.1 != NOT_A_CORE).then_some(v)
}

/// True if the calling thread is `core`.
#[inline]
pub(crate) fn is(core: &Core) -> bool {
    here() == Some((core.runtime_id(), core.index()))
}

/// True if the calling thread is a core (of any runtime).
pub(crate) fn on_a_core() -> bool {
    here().is_some()
}

/// A handle to core `on` for an instance's frame. Every instance made on
/// its own core shares one per core (a reference count on a line that core
/// keeps, where cloning the `Core` itself would count on the runtime's
/// record, one line that every core of the runtime writes).
pub(crate) fn owner(on: &Core, local: bool) -> Arc<Core> {
    if local {
        let shared = HOME
            .try_with(|h| {
                h.try_borrow_mut()
                    .ok()
                    .map(|mut h| h.get_or_insert_with(|| Arc::new(on.clone())).clone())
            })
            .ok()
            .flatten();
        if let Some(c) = shared {
            return c;
        }
    }
    Arc::new(on.clone())
}
