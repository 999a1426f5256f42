//! The thread-local side: a worker's owner-only state (`Local`), how joins
//! reach it, and the plain join's depth guard.

use super::frame::JobHeader;
use crate::pool::Pool;
use std::cell::Cell;
use std::ptr;
// Std atomics, not manycore_sync's: these two are read by this thread's own
// kick handler (`raw::kick`), never by another thread, so loom has nothing
// to interleave on them.
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicPtr, Ordering};

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
    ///
    /// Also read by the kick handler (`raw::kick`), which interrupts this
    /// thread: an atomic accessed Relaxed (a plain load or store), ordered
    /// against the frame's fields by compiler fences (see `link` and
    /// `unlink`), which emit no instruction.
    head: AtomicPtr<JobHeader>,
    /// True while this thread runs code that the kick handler must not
    /// interrupt with a promotion: a serve (which promotes and puts back
    /// frames of the chain itself) and a change of the binding. The handler
    /// then does nothing; the interrupted code serves anyway, or the
    /// kicker kicks again.
    masked: AtomicBool,
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
    /// than at the next tick. Armed at every tick, whenever the result of
    /// a stolen piece is collected (or dropped while unwinding) and when
    /// this thread starts a queued job (spawned, injected: the root of a
    /// tree of its own); disarmed by
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
    /// The newest recorded frame (owner only).
    #[inline(always)]
    pub(crate) fn head(&self) -> *const JobHeader {
        self.head.load(Ordering::Relaxed)
    }

    /// Links `frame` (fully written) as the chain's new head. The compiler
    /// fence keeps the frame's stores before the head's: the kick handler,
    /// interrupting anywhere after, sees a whole frame. No instruction.
    #[inline(always)]
    pub(crate) fn link(&self, frame: *const JobHeader) {
        compiler_fence(Ordering::Release);
        self.head.store(frame.cast_mut(), Ordering::Relaxed);
    }

    /// Restores the head to `prev` (unlinking the frame whose `a` returned
    /// or unwound). The compiler fence keeps the store before the caller's
    /// next load of the frame's `state`: a kick handler that runs after that
    /// load no longer finds the frame, and one that runs before it has
    /// promoted the frame where the load sees it. No instruction.
    #[inline(always)]
    pub(crate) fn unlink(&self, prev: *const JobHeader) {
        self.head.store(prev.cast_mut(), Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
    }

    /// Masks the kick handler until the guard is dropped (nests). A load
    /// and a store, not a swap: only this thread writes the flag, and a
    /// handler that runs between the two sees it unmasked and leaves it so.
    #[inline]
    pub(crate) fn mask(&self) -> MaskGuard<'_> {
        let was = self.masked.load(Ordering::Relaxed);
        self.masked.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        MaskGuard { local: self, was }
    }

    /// The kick handler's view: the chain's head, unless masked.
    #[inline]
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn head_if_unmasked(&self) -> Option<*const JobHeader> {
        let masked = self.masked.load(Ordering::Relaxed);
        compiler_fence(Ordering::Acquire);
        (!masked).then(|| self.head())
    }

    pub(crate) const fn new() -> Self {
        Self {
            head: AtomicPtr::new(ptr::null_mut()),
            masked: AtomicBool::new(false),
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

/// Runs `f` with this thread's [`Local`] unless it is gone (the kick
/// handler: it must not panic).
#[cfg(not(loom))]
pub(crate) fn try_with_local(f: impl FnOnce(&Local)) -> Result<(), std::thread::AccessError> {
    LOCAL.try_with(f)
}

/// Runs `f` with this thread's [`Local`].
#[inline(always)]
pub(crate) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(f)
}

/// Unmasks the kick handler (or leaves it masked if it was before).
pub(crate) struct MaskGuard<'a> {
    local: &'a Local,
    was: bool,
}

impl Drop for MaskGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        self.local.masked.store(self.was, Ordering::Relaxed);
    }
}

/// Sets this thread's cached pool pointer (invariant B: called by the binding
/// whenever it changes). A no-op while the thread-local is being destroyed.
pub(crate) fn set_pool(pool: *const Pool, me: usize) {
    let _ = LOCAL.try_with(|l| {
        // The kick handler reads the pool and the index together.
        let _masked = l.mask();
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

// The kick handler reads `Local` until the thread is gone: its slot must
// need no destructor (which would end its life earlier).
const _: () = assert!(!std::mem::needs_drop::<Local>());
