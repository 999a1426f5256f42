//! `here`: which core the calling thread is, cached in a thread-local so
//! that telling a local signal from a remote one costs one thread-local
//! read and two compares (asking `manycore_rt::current()` every time would
//! clone the runtime's `Arc`, an atomic read-modify-write).
//!
//! A core is one thread for its whole life and a thread is at most one core
//! (cores are threads the runtime starts), so the first answer stays right.

use crate::percore;
use manycore_rt::Core;
use std::cell::Cell;

/// Not looked up yet.
const UNKNOWN: usize = usize::MAX;
/// Looked up: this thread is not a core.
const NOT_A_CORE: usize = usize::MAX - 1;

thread_local! {
    /// (runtime id, core index) of this thread.
    static HERE: Cell<(u64, usize)> = const { Cell::new((0, UNKNOWN)) };
}

/// A core's handles to itself kept for frames (given back by dropped
/// frames, see `owner`), and the bound on them; part of the core's context
/// (`percore.rs`).
pub(crate) struct Kept {
    cores: Vec<Core>,
    /// Frames made here for this core and not yet dropped here (never below
    /// 0: a frame made elsewhere and dropped here counts nothing).
    out: usize,
    /// The most `out` has been.
    peak: usize,
}

impl Kept {
    /// None kept.
    pub(crate) const fn new() -> Self {
        Self {
            cores: Vec::new(),
            out: 0,
            peak: 0,
        }
    }
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

/// Cores kept for the frames of instances made here whatever the core's
/// own use; past this many, at most as many as frames made here were alive
/// at once (`Kept::peak`).
const KEEP: usize = 1024;

/// A handle to core `on` for an instance's frame. Made on `on` itself
/// (`local`), it is one that an instance dropped here gave back, if there
/// is one: cloning a `Core` counts on the runtime's record, one line that
/// every core of the runtime writes, and a frame made and dropped on its
/// core then costs no count at all. The cache keeps as many as the core
/// had frames of its own alive at once (at least [`KEEP`]), so a burst of
/// instances made here and fired here counts nothing either, and a core
/// that only drops frames others made for it keeps no more than `KEEP`.
#[inline]
pub(crate) fn owner(on: &Core, local: bool) -> Core {
    if local {
        let kept = percore::with(|pc| {
            pc.kept.try_borrow_mut().ok().and_then(|mut k| {
                k.out += 1;
                k.peak = k.peak.max(k.out);
                k.cores.pop()
            })
        })
        .flatten();
        if let Some(c) = kept {
            return c;
        }
    }
    on.clone()
}

/// Takes back the core of a dropped frame: kept for the next frame if it is
/// this thread's core, dropped otherwise.
#[inline]
pub(crate) fn recycle(core: Core) {
    // Only the cached answer: a frame may be dropped while the thread's
    // thread-locals are being destroyed, no time to ask the runtime.
    let cached = HERE.try_with(Cell::get).unwrap_or((0, UNKNOWN));
    if cached != (core.runtime_id(), core.index()) {
        return;
    }
    let mut core = Some(core);
    percore::with(|pc| {
        if let Ok(mut k) = pc.kept.try_borrow_mut() {
            k.out = k.out.saturating_sub(1);
            if k.cores.len() < KEEP.max(k.peak) {
                k.cores.extend(core.take());
            }
        }
    });
}
