//! All of manycore-steal's `unsafe` code: the stack frame of a latent job,
//! the per-thread latent list (MuSE's on-stack contexts, linked through the
//! stack), promotion of the oldest frame, and running a promoted frame on a
//! thief. See `README.md` beside this file for the protocol.
//!
//! Invariants the `SAFETY` comments below rely on:
//!
//! * **L1 (liveness).** Every frame on a thread's latent list lives in the
//!   stack frame of a `join` call that is still running on that thread: `join`
//!   links its frame before running `a` and unlinks it (or finds it promoted)
//!   before it returns, on every path, unwinding included (`a` and the
//!   heartbeat run inside `catch_unwind`).
//! * **L2 (ownership).** Only the owning thread reads or writes the list and the
//!   frames' `prev`/`thief` cells; `Local` is `!Sync` and never leaves its thread.
//! * **P (promotion).** A promoted frame is unlinked and its `prev` set to
//!   [`promoted`]. From the successful publication of its address (a Release CAS
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

/// Per-thread, owner-only state: the latent list and the heartbeat counter.
#[derive(Debug)]
pub(crate) struct Local {
    /// Newest latent frame (null: the list is empty).
    pub(crate) tail: Cell<*const JobHeader>,
    /// Joins left until the next heartbeat.
    pub(crate) beat: Cell<u32>,
    /// Timestamp (ns since [`crate::pool::epoch`]) of the last poll, 0 if none in this tree.
    pub(crate) last_poll: Cell<u64>,
    /// True once this thread has asked whether it is a runtime core.
    pub(crate) checked: Cell<bool>,
}

impl Local {
    pub(crate) const fn new() -> Self {
        Self {
            tail: Cell::new(ptr::null()),
            beat: Cell::new(0),
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

/// The type-erased head of a latent job frame.
#[derive(Debug)]
pub(crate) struct JobHeader {
    /// Owner-only: the next older latent frame, or [`promoted`].
    prev: Cell<*const JobHeader>,
    /// Owner-only: the thief the frame was handed to (valid once promoted).
    thief: Cell<usize>,
    /// Runs `b` on a thief; returns the owner's worker index.
    run: unsafe fn(*const JobHeader, &Local) -> usize,
    /// The owner's worker index; written by the owner before publication.
    owner: UnsafeCell<usize>,
    /// Set (Release) by the thief when `b` has run and its result is stored.
    done: AtomicBool,
}

/// The sentinel `prev` of a promoted frame (never the address of a real frame:
/// frames are at least 8-aligned and live on a stack, never at the dangling address).
#[inline(always)]
fn promoted() -> *const JobHeader {
    NonNull::<JobHeader>::dangling().as_ptr()
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
    B: FnOnce(&Local) -> RB + Send,
    RB: Send,
{
    #[inline(always)]
    fn new(b: B, prev: *const JobHeader) -> Self {
        Self {
            header: JobHeader {
                prev: Cell::new(prev),
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
    B: FnOnce(&Local) -> RB + Send,
    RB: Send,
{
    // SAFETY: `job` points to the header at offset 0 of a live `Frame<B, RB>`
    // (repr(C)); the owner waits for `done` before the frame goes away.
    let frame = unsafe { &*job.cast::<Frame<B, RB>>() };
    // SAFETY: under invariant P the thief owns `b` now, and runs it once.
    let b = unsafe { frame.take_b() };
    let r = panic::catch_unwind(AssertUnwindSafe(|| b(local)));
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
    job.thief.get()
}

/// What [`promote_oldest`] changed, so that [`unpromote`] can undo it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Promotion {
    pub(crate) job: NonNull<JobHeader>,
    newer: *const JobHeader,
}

/// Unlinks the oldest latent frame of this thread and marks it promoted, to be
/// handed to worker `thief`. Returns `None` if the list is empty.
pub(crate) fn promote_oldest(local: &Local, owner: usize, thief: usize) -> Option<Promotion> {
    let mut cur = local.tail.get();
    if cur.is_null() {
        return None;
    }
    let mut newer: *const JobHeader = ptr::null();
    loop {
        // SAFETY: `cur` is on the latent list, hence live (L1) and ours (L2).
        let prev = unsafe { (*cur).prev.get() };
        if prev.is_null() {
            break;
        }
        newer = cur;
        cur = prev;
    }
    // SAFETY: `cur` and `newer` (if not null) are on the list: live, ours.
    unsafe {
        let oldest = &*cur;
        oldest.prev.set(promoted());
        oldest.thief.set(thief);
        // Not yet published: no other thread can access `owner`.
        oldest.owner.with_mut(|p| *p = owner);
        if newer.is_null() {
            local.tail.set(ptr::null());
        } else {
            (*newer).prev.set(ptr::null());
        }
    }
    Some(Promotion { job: NonNull::from(
        // SAFETY: `cur` is non-null (checked above).
        unsafe { &*cur },
    ), newer })
}

/// Undoes a [`promote_oldest`] whose publication failed (the frame was never
/// seen by another thread). Nothing else touched the list in between.
pub(crate) fn unpromote(local: &Local, p: Promotion) {
    let job = p.job.as_ptr().cast_const();
    // SAFETY: the frame and `newer` are still on this thread's stack (L1) and
    // were never published, so they are ours alone (L2).
    unsafe {
        (*job).prev.set(ptr::null());
        if p.newer.is_null() {
            local.tail.set(job);
        } else {
            (*p.newer).prev.set(job);
        }
    }
}

/// The heart of `join`: records `b` as latent, runs `a`, then runs `b` inline
/// if it is still latent, or collects it from the thief that took it.
///
/// Fast path: a few plain loads and stores; no atomic RMW, fence or allocation.
#[inline(always)]
pub(crate) fn join<A, B, RA, RB>(local: &Local, a: A, b: B) -> (RA, RB)
where
    A: FnOnce(&Local) -> RA,
    B: FnOnce(&Local) -> RB + Send,
    RB: Send,
{
    let frame = Frame::new(b, local.tail.get());
    local.tail.set(&frame.header);
    let ra = panic::catch_unwind(AssertUnwindSafe(|| {
        let n = local.beat.get();
        if n == 0 {
            crate::pool::heartbeat(local);
        } else {
            local.beat.set(n - 1);
        }
        a(local)
    }));
    let prev = frame.header.prev.get();
    if prev != promoted() {
        // Still latent: every newer frame has been unlinked, so this is the tail.
        local.tail.set(prev);
        // SAFETY: never published (not promoted), so the owner owns `b`; taken once.
        let b = unsafe { frame.take_b() };
        finish_inline(local, ra, b)
    } else {
        join_promoted(local, &frame, ra)
    }
}

#[inline(always)]
fn finish_inline<RA, RB>(
    local: &Local,
    ra: ThreadResult<RA>,
    b: impl FnOnce(&Local) -> RB,
) -> (RA, RB) {
    match ra {
        Ok(ra) => (ra, b(local)),
        Err(p) => {
            // Rayon semantics: both closures run; `a`'s panic wins.
            let _ = panic::catch_unwind(AssertUnwindSafe(|| b(local)));
            panic::resume_unwind(p)
        }
    }
}

#[cold]
#[inline(never)]
fn join_promoted<B, RA, RB>(local: &Local, frame: &Frame<B, RB>, ra: ThreadResult<RA>) -> (RA, RB)
where
    B: FnOnce(&Local) -> RB + Send,
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
        finish_inline(local, ra, b)
    }
}
