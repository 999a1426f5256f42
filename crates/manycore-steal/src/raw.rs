//! All of manycore-steal's `unsafe` code: the stack frame of a latent job,
//! the per-thread latent list (MuSE's on-stack contexts, linked through the
//! stack), promotion of the oldest frame, and running a promoted frame on a
//! thief. See `README.md` beside this file for the protocol.
//!
//! Invariants the `SAFETY` comments below rely on:
//!
//! * **L1 (liveness).** A frame lives in the stack frame of its `join` call,
//!   which does not return (nor unwind) before `a` has returned and `b` has
//!   run or been collected. A frame's `prev` is the frame whose `a` (directly
//!   or through a `b` run inline) created it, so `prev` outlives it; the
//!   thread-local head `Local::tail` is set to a frame only while its `a`
//!   runs. Hence every chain a thread walks, from a frame of a running join,
//!   consists of live frames.
//! * **L2 (ownership).** Only the owning thread reads or writes the list and the
//!   frames' `prev`/`thief` cells; `Local` is `!Sync` and never leaves its thread.
//! * **P (promotion).** A promoted frame has `thief != 0`. From the successful publication of its address (a Release CAS
//!   into a thief's mailbox, `pool.rs`) until either the owner takes it back out
//!   of that mailbox or the thief's Release store of `done`, the thief owns the
//!   closure `b` and the result slot; the owner touches neither, and does not
//!   leave `join` until it has taken the job back or seen `done` (Acquire).

use manycore_sync::atomic::{AtomicBool, Ordering};
use manycore_sync::cell::UnsafeCell;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use std::thread::Result as ThreadResult;

/// Per-thread, owner-only state: the head of the latent chain for the plain
/// `join`, and the heartbeat counter.
#[derive(Debug)]
pub(crate) struct Local {
    /// Newest frame of the plain `join` (null: none running).
    pub(crate) tail: Cell<*const JobHeader>,
    /// Joins left until the next heartbeat.
    pub(crate) beat: Cell<u32>,
    /// Joins per heartbeat in adaptive mode (see `pool::HEARTBEAT_PERIOD`).
    pub(crate) interval: Cell<u32>,
    /// Heartbeat interval multiplier (a power of two): doubled when a
    /// promoted job comes back unstolen (the thief was not running), reset
    /// when a steal succeeds, so that promotions nobody takes cost little.
    pub(crate) backoff: Cell<u32>,
    /// Timestamp (`pool::now_ns`) of the last heartbeat, 0 if none yet in this tree.
    pub(crate) last_poll: Cell<u64>,
    /// True once this thread has asked whether it is a runtime core.
    pub(crate) checked: Cell<bool>,
}

impl Local {
    pub(crate) const fn new() -> Self {
        Self {
            tail: Cell::new(ptr::null()),
            beat: Cell::new(0),
            backoff: Cell::new(1),
            interval: Cell::new(256),
            last_poll: Cell::new(0),
            checked: Cell::new(false),
        }
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

/// The type-erased head of a latent job frame.
#[derive(Debug)]
pub(crate) struct JobHeader {
    /// Owner-only, immutable: the enclosing (older) frame when this one was
    /// linked, or null. Older frames outlive this one (they are further up
    /// the same stack).
    prev: *const JobHeader,
    /// Owner-only: 0 while latent; 1 + the thief's index once promoted.
    thief: Cell<usize>,
    /// Runs `b` on a thief; returns the owner's worker index.
    run: unsafe fn(*const JobHeader, &Local) -> usize,
    /// The owner's worker index; written by the owner before publication.
    owner: UnsafeCell<usize>,
    /// Set (Release) by the thief when `b` has run and its result is stored.
    done: AtomicBool,
}

/// A latent job: `b` and the slot for its result, on the stack of `join`.
#[repr(C)]
struct Frame<B, RB> {
    header: JobHeader,
    b: UnsafeCell<MaybeUninit<B>>,
    result: UnsafeCell<MaybeUninit<ThreadResult<RB>>>,
}

impl<B, RB> Frame<B, RB>
where
    B: FnOnce(&Local, *const JobHeader, bool) -> RB + Send,
    RB: Send,
{
    #[inline(always)]
    fn new(b: B, prev: *const JobHeader) -> Self {
        Self {
            header: JobHeader {
                prev,
                thief: Cell::new(0),
                run: run_frame::<B, RB>,
                owner: UnsafeCell::new(0),
                done: AtomicBool::new(false),
            },
            b: UnsafeCell::new(MaybeUninit::new(b)),
            result: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Moves `b` out.
    ///
    /// # Safety
    /// Called at most once per frame, by whoever owns `b` under invariant P.
    #[inline(always)]
    unsafe fn take_b(&self) -> B {
        // SAFETY: `b` was initialised in `new` and, by the caller's contract,
        // has not been moved out yet and is not accessed concurrently.
        self.b.with(|p| unsafe { (*p).assume_init_read() })
    }

    /// Moves the thief's result out.
    ///
    /// # Safety
    /// The thief has stored the result and the caller has seen `done` (Acquire).
    unsafe fn take_result(&self) -> ThreadResult<RB> {
        // SAFETY: per the contract, the result slot was written before the
        // Release store of `done` that the caller observed with Acquire.
        self.result.with(|p| unsafe { (*p).assume_init_read() })
    }
}

/// The thief side of a promoted frame: run `b`, store its result, publish `done`.
///
/// # Safety
/// `job` is the header of a live `Frame<B, RB>` that was published to the
/// calling thread (invariant P), and it is run once.
unsafe fn run_frame<B, RB>(job: *const JobHeader, local: &Local) -> usize
where
    B: FnOnce(&Local, *const JobHeader, bool) -> RB + Send,
    RB: Send,
{
    // SAFETY: `job` points to the header at offset 0 of a live `Frame<B, RB>`
    // (repr(C)); the owner waits for `done` before the frame goes away.
    let frame = unsafe { &*job.cast::<Frame<B, RB>>() };
    // SAFETY: under invariant P the thief owns `b` now, and runs it once.
    let b = unsafe { frame.take_b() };
    let r = panic::catch_unwind(AssertUnwindSafe(|| b(local, local.tail.get(), true)));
    // SAFETY: the thief owns the result slot until it publishes `done`.
    frame.result.with_mut(|p| unsafe { (*p).write(r) });
    // SAFETY: `owner` was written before publication (Release CAS, observed
    // by our Acquire) and is not written again.
    let owner = frame.header.owner.with(|p| unsafe { *p });
    // Release; pairs with the Acquire load of `done` in `Pool::wait_stolen`:
    // the owner sees the result. The frame may be gone right after this store.
    frame.header.done.store(true, Ordering::Release);
    owner
}

/// Runs a job handed to this thread through its mailbox; returns the owner's index.
///
/// # Safety
/// `job` came out of this thread's mailbox by a successful Acquire CAS
/// (`Pool::take_job`), so it is a live, published frame owned by this thread.
pub(crate) unsafe fn run_stolen(job: NonNull<JobHeader>, local: &Local) -> usize {
    let job = job.as_ptr().cast_const();
    // SAFETY: the header is live (contract); `run` is immutable.
    let run = unsafe { (*job).run };
    // SAFETY: contract of this function is that of `run_frame`.
    unsafe { run(job, local) }
}

/// Whether a promoted frame's thief has published its result (Acquire; pairs
/// with the Release store in `run_frame`).
#[inline]
pub(crate) fn is_done(job: &JobHeader) -> bool {
    job.done.load(Ordering::Acquire)
}

/// The thief a promoted frame was handed to (owner only).
pub(crate) fn thief_of(job: &JobHeader) -> usize {
    job.thief.get() - 1
}

/// A frame handed out by [`promote_oldest`], to be undone by [`unpromote`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Promotion {
    pub(crate) job: NonNull<JobHeader>,
}

/// Marks the oldest latent frame on the chain that starts at `start` (the
/// frame of the join whose heartbeat this is) promoted, to be handed to
/// worker `thief`. The chain ends at null or at a promoted frame: frames are
/// promoted oldest first, so everything beyond one is promoted too.
pub(crate) fn promote_oldest(
    start: *const JobHeader,
    owner: usize,
    thief: usize,
) -> Option<Promotion> {
    let mut oldest: *const JobHeader = ptr::null();
    let mut cur = start;
    // SAFETY: every frame on the chain is live (L1: an enclosing frame outlives
    // the frames linked under it) and owned by this thread (L2).
    unsafe {
        while !cur.is_null() && (*cur).thief.get() == 0 {
            oldest = cur;
            cur = (*cur).prev;
        }
    }
    let job = NonNull::new(oldest.cast_mut())?;
    // SAFETY: `oldest` is a live latent frame of this thread, not yet published,
    // so no other thread accesses `owner`.
    unsafe {
        let f = job.as_ref();
        f.thief.set(thief + 1);
        f.owner.with_mut(|p| *p = owner);
    }
    Some(Promotion { job })
}

/// Undoes a [`promote_oldest`] whose publication failed (the frame was never
/// seen by another thread).
pub(crate) fn unpromote(p: Promotion) {
    // SAFETY: the frame is still live on this thread's stack (L1) and was
    // never published, so it is ours alone (L2).
    unsafe { p.job.as_ref().thief.set(0) };
}

/// The heart of `join`: records `b` as latent, runs `a`, then runs `b` inline
/// if it is still latent, or collects it from the thief that took it.
///
/// `tail` is the enclosing latent frame (the chain promotion walks); `a` is
/// given this join's frame as its `tail`. With `TLS`, the thread-local list
/// head follows along (the plain `join`); the context form passes the chain
/// in its `Ctx` instead and touches no thread-local state but the heartbeat.
///
/// Fast path: a few plain loads and stores; no atomic RMW, fence or allocation.
#[inline(always)]
pub(crate) fn join<const TLS: bool, A, B, RA, RB>(
    local: &Local,
    tail: *const JobHeader,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce(*const JobHeader) -> RA,
    B: FnOnce(&Local, *const JobHeader, bool) -> RB + Send,
    RB: Send,
{
    let frame = Frame::new(b, tail);
    let me: *const JobHeader = &frame.header;
    if TLS {
        local.tail.set(me);
    }
    let ra = panic::catch_unwind(AssertUnwindSafe(|| {
        let n = local.beat.get();
        if n == 0 {
            crate::pool::heartbeat(local, me);
        } else {
            local.beat.set(n - 1);
        }
        a(me)
    }));
    if TLS {
        local.tail.set(tail);
    }
    if frame.header.thief.get() == 0 {
        // SAFETY: never published (not promoted), so the owner owns `b`; taken once.
        let b = unsafe { frame.take_b() };
        finish_inline(ra, move || b(local, tail, false))
    } else {
        join_promoted(local, tail, &frame, ra)
    }
}

/// A join of the context form below its latent window: `a` then `b` as plain
/// calls, with the heartbeat counted, and Rayon's panic semantics.
#[inline(always)]
pub(crate) fn join_unrecorded<RA, RB>(
    local: &Local,
    tail: *const JobHeader,
    a: impl FnOnce() -> RA,
    b: impl FnOnce() -> RB,
) -> (RA, RB) {
    let n = local.beat.get();
    if n == 0 {
        crate::pool::heartbeat(local, tail);
    } else {
        local.beat.set(n - 1);
    }
    let ra = panic::catch_unwind(AssertUnwindSafe(a));
    finish_inline(ra, b)
}

#[inline(always)]
fn finish_inline<RA, RB>(ra: ThreadResult<RA>, b: impl FnOnce() -> RB) -> (RA, RB) {
    match ra {
        Ok(ra) => (ra, b()),
        Err(p) => {
            // Rayon semantics: both closures run; `a`'s panic wins.
            let _ = panic::catch_unwind(AssertUnwindSafe(b));
            panic::resume_unwind(p)
        }
    }
}

#[cold]
#[inline(never)]
fn join_promoted<B, RA, RB>(
    local: &Local,
    tail: *const JobHeader,
    frame: &Frame<B, RB>,
    ra: ThreadResult<RA>,
) -> (RA, RB)
where
    B: FnOnce(&Local, *const JobHeader, bool) -> RB + Send,
    RB: Send,
{
    if crate::pool::wait_stolen(local, &frame.header) {
        // SAFETY: `wait_stolen` returned true only after seeing `done` (Acquire).
        let rb = unsafe { frame.take_result() };
        match (ra, rb) {
            (Ok(ra), Ok(rb)) => (ra, rb),
            (Err(p), _) | (Ok(_), Err(p)) => panic::resume_unwind(p),
        }
    } else {
        // SAFETY: the owner took the job back out of the thief's mailbox
        // before the thief saw it, so the owner owns `b` again; taken once.
        let b = unsafe { frame.take_b() };
        finish_inline(ra, move || b(local, tail, false))
    }
}
