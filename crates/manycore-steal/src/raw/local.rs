//! The thread-local side: a worker's owner-only state (`Local`), how joins
//! reach it, and the plain join's depth guard.

use super::frame::JobHeader;
use crate::pool::Pool;
use std::cell::Cell;
use std::ptr;

/// Per-thread, owner-only state: the head of the chain of recorded frames,
/// the tick counters and a cached pointer to the pool the thread works for.
#[derive(Debug)]
pub(crate) struct Local {
    /// Newest recorded frame on this thread's stack (null: none).
    pub(crate) head: Cell<*const JobHeader>,
    /// Depth of the plain `join` running on this thread, saturated at
    /// `LATENT_WINDOW` (0: none; a thief runs a stolen piece at depth 0);
    /// `Ctx` carries its own.
    pub(crate) depth: Cell<u32>,
    /// Joins left until the next tick (`pool::tick`).
    pub(crate) beat: Cell<u32>,
    /// Ticks left until the next heartbeat (`pool::heartbeat`).
    pub(crate) ticks: Cell<u32>,
    /// Joins per tick in adaptive mode (see `pool::HEARTBEAT_PERIOD`).
    pub(crate) interval: Cell<u32>,
    /// Tick interval multiplier (a power of two): doubled when a promoted
    /// job comes back unstolen (the thief was not running), reset when a
    /// steal succeeds, so that promotions nobody takes cost little.
    pub(crate) backoff: Cell<u32>,
    /// Timestamp (`pool::now_ns`) of the last heartbeat, 0 if none yet in this tree.
    pub(crate) last_poll: Cell<u64>,
    /// True once this thread has asked whether it is a runtime core.
    pub(crate) checked: Cell<bool>,
    /// Whether a recorded join of the context form serves demand at once:
    /// armed at every tick and when a stolen piece's result is collected, disarmed by
    /// such a promotion and when a stolen job starts (so that two workers do
    /// not hand small pieces back and forth faster than a tick).
    pub(crate) eager: Cell<bool>,
    /// Workers (bits) that returned a stolen piece of ours and marked
    /// themselves hungry before their `DONE`: the next serve hands them work
    /// directly, without claiming a demand bit (see `Pool::serve`).
    pub(crate) handback: Cell<u64>,
    /// The pool this thread is a worker of (null: none), see invariant B.
    pub(crate) pool: Cell<*const Pool>,
    /// This thread's worker index in `pool`.
    pub(crate) me: Cell<usize>,
}

impl Local {
    pub(crate) const fn new() -> Self {
        Self {
            head: Cell::new(ptr::null()),
            depth: Cell::new(0),
            beat: Cell::new(0),
            ticks: Cell::new(1),
            backoff: Cell::new(1),
            interval: Cell::new(64),
            last_poll: Cell::new(0),
            checked: Cell::new(false),
            eager: Cell::new(true),
            handback: Cell::new(0),
            pool: Cell::new(ptr::null()),
            me: Cell::new(0),
        }
    }

    /// The pool this thread works for and its index there.
    #[inline]
    pub(crate) fn pool(&self) -> Option<(&Pool, usize)> {
        let p = self.pool.get();
        if p.is_null() {
            return None;
        }
        // SAFETY: invariant B: the binding holds an `Arc` of this pool for as
        // long as the pointer is set, and it changes only outside joins, so
        // not during the borrow the caller (a join on this thread) holds.
        Some((unsafe { &*p }, self.me.get()))
    }
}

#[cfg(not(loom))]
thread_local! {
    static LOCAL: Local = const { Local::new() };
}
#[cfg(loom)]
loom::thread_local! {
    static LOCAL: Local = Local::new();
}

/// Runs `f` with this thread's [`Local`].
#[inline(always)]
pub(crate) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(f)
}

/// Sets this thread's cached pool pointer (invariant B: called by the binding
/// whenever it changes). A no-op while the thread-local is being destroyed.
pub(crate) fn set_pool(pool: *const Pool, me: usize) {
    let _ = LOCAL.try_with(|l| {
        l.pool.set(pool);
        l.me.set(me);
        l.handback.set(0);
        // The next join runs a heartbeat (which looks at the new binding).
        l.beat.set(0);
        l.ticks.set(1);
    });
}

/// Calls `f` with this thread's [`Local`] without wrapping `f` in the
/// thread-local accessor (which the optimiser would then not inline into a
/// recursion).
#[inline(always)]
pub(crate) fn with_local_flat<R>(f: impl FnOnce(&Local) -> R) -> R {
    let p: *const Local = LOCAL.with(|l| l as *const Local);
    // SAFETY: the thread-local lives until this thread exits, and `f` runs on
    // this thread now; the reference does not outlive the call.
    f(unsafe { &*p })
}

/// Sets the plain join's depth one deeper for the guard's lifetime (also
/// when the join unwinds).
pub(crate) struct DepthGuard<'a> {
    local: &'a Local,
    depth: u32,
}

impl<'a> DepthGuard<'a> {
    #[inline(always)]
    pub(crate) fn enter(local: &'a Local, depth: u32) -> Self {
        local.depth.set(depth.wrapping_add(1));
        Self { local, depth }
    }
}

impl Drop for DepthGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.local.depth.set(self.depth);
    }
}
