//! The thread-local side: a worker's owner-only state (`Local`), how joins
//! reach it, and the plain join's depth guard.

use super::frame::JobHeader;
use crate::pool::Pool;
use std::cell::Cell;
use std::ptr;

/// Per-thread, owner-only state: the head of the chain of recorded frames,
/// the tick counters and a cached pointer to the pool the thread works for.
/// Plain `Cell`s: only this thread reads or writes them (invariant L2), so
/// the join's fast path touches them with plain loads and stores.
#[derive(Debug)]
pub(crate) struct Local {
    /// Newest recorded frame on this thread's stack (null: none). Set by a
    /// recorded join to its frame while `a` runs and restored to the frame's
    /// `prev` after (also when `a` unwinds). All its frames belong to the
    /// pool the thread works for: `install` runs on the target pool's own
    /// workers.
    pub(crate) head: Cell<*const JobHeader>,
    /// Depth of the plain `join` running on this thread, saturated at
    /// `LATENT_WINDOW` so that joins below it only read it (0: the root of a
    /// tree). Set one deeper by a recorded join's `DepthGuard`; saved and
    /// reset to 0 around a stolen piece (`Pool::run_job`), around messages
    /// polled at a heartbeat (`poll_host`) and around a queued job
    /// (`Pool::run_work`).
    /// `Ctx` carries its own depth by value instead.
    pub(crate) depth: Cell<u32>,
    /// Joins left until the next tick: counted down by every join, re-armed
    /// by the tick (`interval * backoff - 1`). 0 forces the next join to
    /// tick (a new binding, `set_max_sequential`, the promotion probe).
    pub(crate) beat: Cell<u32>,
    /// Ticks left until the next heartbeat (`TICKS_PER_HEARTBEAT` in
    /// adaptive mode, 1 with a fixed `MAX_SEQUENTIAL`, set by the heartbeat;
    /// 1 forces the next tick to be a heartbeat).
    pub(crate) ticks: Cell<u32>,
    /// Joins per tick in adaptive mode: doubled or halved by each heartbeat
    /// (within `MIN_INTERVAL ..= MAX_INTERVAL`) so that heartbeats come
    /// about every `HEARTBEAT_PERIOD` times `backoff`.
    pub(crate) interval: Cell<u32>,
    /// Tick interval multiplier, a power of two in `1 ..= MAX_BACKOFF`:
    /// doubled when the owner takes a promoted job back unstarted (the thief
    /// was not running; `wait_stolen`), reset to 1 when the owner has waited
    /// for a thief's result (`wait_stolen`), so that promotions nobody takes
    /// cost little. A result already `DONE` at the join leaves it as it is.
    pub(crate) backoff: Cell<u32>,
    /// Timestamp (`now_ns`) of the last heartbeat in adaptive mode (or while
    /// poll gaps are measured); 0 when none yet in this tree (reset when the
    /// thread starts a stolen job or an installed tree), so that the first
    /// heartbeat does not count the idle time before it.
    pub(crate) last_poll: Cell<u64>,
    /// True once this thread has asked whether it is a runtime core (at its
    /// first heartbeat with no pool bound).
    pub(crate) checked: Cell<bool>,
    /// Whether a recorded join (of either form) serves demand at once rather
    /// than at the next tick. Armed at every tick and whenever the result of
    /// a stolen piece is collected (or dropped while unwinding); disarmed by
    /// such an eager serve and when this thread starts a stolen job, so that
    /// two workers do not hand ever smaller pieces back and forth faster
    /// than a tick.
    pub(crate) eager: Cell<bool>,
    /// Workers (bits) that returned a stolen piece of ours and marked
    /// themselves hungry before their `DONE`: set by the owner when it
    /// collects the result (`join_promoted`); taken (and cleared) by the
    /// next serve, which hands them work directly, without claiming a
    /// demand bit (see `Pool::serve`); cleared by a new binding.
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
        // SAFETY: invariant B: the binding holds an `Arc` of this pool while
        // the pointer is set, and code that replaces the binding while a join
        // may hold this borrow keeps the replaced `Arc` until it puts it back.
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
