//! All of manycore-steal's `unsafe` code: the stack frame of a latent job,
//! the per-thread chain of recorded frames (MuSE's on-stack contexts, linked
//! through the stack), promotion of the oldest latent frame, and running a
//! promoted frame on a thief. See `README.md` beside this file for the protocol.
//!
//! Invariants the `SAFETY` comments below rely on:
//!
//! * **L1 (liveness).** A frame lives in the stack frame of its `join` call,
//!   which does not return (nor unwind) before `a` has returned and `b` has
//!   run or been collected. The thread-local head `Local::head` points to a
//!   frame only while that frame's `a` runs, and a frame's `prev` is the head
//!   it replaced (an older frame further up the same stack, or null), so
//!   every chain a thread walks from its head consists of live frames.
//! * **L2 (ownership).** Only the owning thread reads or writes the chain and
//!   the frames' `prev` and `owner` fields, and only the owner moves `state`
//!   away from `LATENT`; `Local` is `!Sync` and never leaves its thread.
//! * **P (promotion).** A promoted frame has `state != LATENT`. From the
//!   successful publication of its address (a Release CAS into a thief's
//!   mailbox, `pool.rs`) until either the owner takes it back out of that
//!   mailbox or the thief's Release store of `DONE`, the thief owns the
//!   closure `b` and the result slot; the owner touches neither, and does not
//!   leave `join` until it has taken the job back or seen `DONE` (Acquire).
//! * **B (binding).** `Local::pool` is null or points to the pool that the
//!   thread-local binding (`pool::BOUND`) holds an `Arc` of; both change
//!   together, and never while a join runs on the thread.

use crate::pool::Pool;
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::cell::UnsafeCell;
use std::cell::Cell;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use std::thread::Result as ThreadResult;

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

/// `JobHeader::state` of a frame nobody has been handed.
const LATENT: usize = 0;
/// `JobHeader::state` once the thief has stored the result.
const DONE: usize = usize::MAX;
/// `JobHeader::state` once the thief has taken the job (a hint for the
/// owner: no point trying to take it back).
const STARTED: usize = usize::MAX - 1;

/// The type-erased head of a recorded job frame.
#[derive(Debug)]
pub(crate) struct JobHeader {
    /// Owner-only, immutable: the chain's head when this frame was linked
    /// (an older frame further up the same stack), or null.
    prev: *const JobHeader,
    /// `LATENT`; 1 + the thief's index once promoted (owner, before
    /// publication); `STARTED` once the thief has taken it (Relaxed, a
    /// hint); `DONE` once the thief has stored the result (Release).
    state: AtomicUsize,
    /// Runs `b` on a thief; returns the owner's worker index.
    run: unsafe fn(*const JobHeader, &Local) -> usize,
    /// The owner's worker index; written by the owner before publication.
    owner: UnsafeCell<MaybeUninit<usize>>,
    /// Owner-only: the thief the frame was promoted to (`promote`).
    thief: Cell<usize>,
}

/// A recorded job: `b` and the slot for its result, on the stack of `join`.
#[repr(C)]
struct Frame<B, RB> {
    header: JobHeader,
    b: UnsafeCell<MaybeUninit<B>>,
    result: UnsafeCell<MaybeUninit<ThreadResult<RB>>>,
}

impl<B, RB> Frame<B, RB>
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    #[inline(always)]
    fn new(b: B, prev: *const JobHeader) -> Self {
        Self {
            header: JobHeader {
                prev,
                state: AtomicUsize::new(LATENT),
                run: run_frame::<B, RB>,
                owner: UnsafeCell::new(MaybeUninit::uninit()),
                thief: Cell::new(0),
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
    /// The thief has stored the result and the caller has seen `DONE` (Acquire).
    unsafe fn take_result(&self) -> ThreadResult<RB> {
        // SAFETY: per the contract, the result slot was written before the
        // Release store of `DONE` that the caller observed with Acquire.
        self.result.with(|p| unsafe { (*p).assume_init_read() })
    }
}

/// The thief side of a promoted frame: run `b`, store its result, publish `DONE`.
///
/// # Safety
/// `job` is the header of a live `Frame<B, RB>` that was published to the
/// calling thread (invariant P), and it is run once.
unsafe fn run_frame<B, RB>(job: *const JobHeader, local: &Local) -> usize
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    // SAFETY: `job` points to the header at offset 0 of a live `Frame<B, RB>`
    // (repr(C)); the owner waits for `DONE` before the frame goes away.
    let frame = unsafe { &*job.cast::<Frame<B, RB>>() };
    // SAFETY: under invariant P the thief owns `b` now, and runs it once.
    let b = unsafe { frame.take_b() };
    let r = panic::catch_unwind(AssertUnwindSafe(|| b(true)));
    // SAFETY: the thief owns the result slot until it publishes `DONE`.
    frame.result.with_mut(|p| unsafe { (*p).write(r) });
    // SAFETY: `owner` was written before publication (Release CAS, observed
    // by our Acquire) and is not written again.
    let owner = frame.header.owner.with(|p| unsafe { (*p).assume_init() });
    // This worker is about to be idle: mark its mailbox HUNGRY before the
    // owner can see `DONE` (a plain store to our own line), so that the
    // owner's next serve can hand it work at once (`Local::handback`). The
    // demand bit that other victims look at is set after `DONE` (in
    // `Pool::run_job`): a locked RMW here would hold `DONE` back until the
    // bit's cache line came over.
    crate::pool::mark_hungry(local);
    // Release; pairs with the Acquire loads of `state` by the owner (`join`,
    // `is_done`): the owner sees the result and the HUNGRY mailbox. The
    // frame may be gone right after this store.
    frame.header.state.store(DONE, Ordering::Release);
    owner
}

/// Runs a job handed to this thread through its mailbox; returns the owner's index.
///
/// # Safety
/// `job` came out of this thread's mailbox by a successful Acquire CAS
/// (`Pool::take_job`), so it is a live, published frame owned by this thread.
pub(crate) unsafe fn run_stolen(job: NonNull<JobHeader>, local: &Local) -> usize {
    let job = job.as_ptr().cast_const();
    // First touch of the frame's line a store: it comes over exclusive, once,
    // for the reads below and the result and `DONE` stores to follow (a read
    // first would fetch it shared, and the result store fetch it again).
    // SAFETY: the header is live (contract); `state` is atomic.
    unsafe { (*job).state.store(STARTED, Ordering::Relaxed) };
    // SAFETY: the header is live (contract); `run` is immutable.
    let run = unsafe { (*job).run };
    // SAFETY: contract of this function is that of `run_frame`.
    unsafe { run(job, local) }
}

/// Whether a promoted frame's thief has published its result (Acquire; pairs
/// with the Release store in `run_frame`).
#[inline]
pub(crate) fn is_done(job: &JobHeader) -> bool {
    job.state.load(Ordering::Acquire) == DONE
}

/// Whether a promoted frame's thief has (visibly) taken it: its owner need
/// not try to take it back. A hint: false does not mean it has not.
#[inline]
pub(crate) fn is_started(job: &JobHeader) -> bool {
    job.state.load(Ordering::Relaxed) == STARTED
}

/// The oldest latent frame on the chain that starts at `start` (the head of
/// the calling thread's chain). The chain's latent frames are its young end:
/// frames are promoted oldest first, so the walk stops at null or at the
/// first frame that is not latent.
pub(crate) fn oldest_latent(start: *const JobHeader) -> Option<NonNull<JobHeader>> {
    let mut oldest: *const JobHeader = ptr::null();
    let mut cur = start;
    // SAFETY: every frame on the chain is live (L1) and its `prev` is
    // owner-only (L2); `state` is atomic.
    unsafe {
        while !cur.is_null() && (*cur).state.load(Ordering::Relaxed) == LATENT {
            oldest = cur;
            cur = (*cur).prev;
        }
    }
    NonNull::new(oldest.cast_mut())
}

/// Marks a latent frame found by [`oldest_latent`] promoted to worker
/// `thief`, before it is published; undone by [`unpromote`].
pub(crate) fn promote(job: NonNull<JobHeader>, owner: usize, thief: usize) {
    // SAFETY: `job` is a live latent frame of this thread (L1), not yet
    // published, so no other thread accesses `owner` or `state` (L2).
    unsafe {
        let f = job.as_ref();
        f.owner.with_mut(|p| (*p).write(owner));
        f.thief.set(thief);
        f.state.store(thief + 1, Ordering::Relaxed);
    }
}

/// Undoes a [`promote`] whose publication failed (the frame was never seen
/// by another thread).
pub(crate) fn unpromote(job: NonNull<JobHeader>) {
    // SAFETY: the frame is still live on this thread's stack (L1) and was
    // never published, so it is ours alone (L2).
    unsafe { job.as_ref().state.store(LATENT, Ordering::Relaxed) };
}

/// A recorded join: links a frame holding `b` into the chain, runs `a`, then
/// runs `b` inline if it is still latent, or collects it from the thief that
/// took it. `b` is told whether it runs on a thief.
///
/// With `EAGER`, the join also serves a hungry worker at once (one load of
/// the demand word) rather than only at the next tick.
///
/// Fast path: a few plain loads and stores; no atomic RMW, fence or allocation.
#[inline(always)]
pub(crate) fn join<const EAGER: bool, A, B, RA, RB>(local: &Local, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    let prev = local.head.get();
    let frame = Frame::new(b, prev);
    local.head.set(&frame.header);
    // If `a` (or the tick) unwinds, the guard finishes the frame (runs `b`,
    // or waits for the thief that has it) before the frame goes away. Not
    // `catch_unwind`: it would hand `a` over through memory (see
    // `join_unrecorded`).
    let guard = RecordedGuard {
        local,
        frame: &frame,
    };
    let n = local.beat.get();
    if n == 0 {
        crate::pool::tick(local);
    } else {
        local.beat.set(n - 1);
        if EAGER {
            crate::pool::serve_if_hungry(local);
        }
    }
    let ra = a();
    std::mem::forget(guard);
    local.head.set(prev);
    // Acquire; pairs with the Release store of `DONE` in `run_frame`.
    if frame.header.state.load(Ordering::Acquire) == LATENT {
        // SAFETY: never published (still latent), so the owner owns `b`; taken once.
        let b = unsafe { frame.take_b() };
        (ra, b(false))
    } else {
        join_promoted(local, &frame, ra)
    }
}

/// Finishes a recorded join whose `a` unwinds: see [`unwind_recorded`].
struct RecordedGuard<'a, B, RB>
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    local: &'a Local,
    frame: &'a Frame<B, RB>,
}

impl<B, RB> Drop for RecordedGuard<'_, B, RB>
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    #[inline(always)]
    fn drop(&mut self) {
        unwind_recorded(self.local, self.frame);
    }
}

/// The unwinding path of a recorded join (Rayon: both closures run, `a`'s
/// panic wins): unlinks the frame, then runs `b` inline if it is still
/// latent or was taken back from its thief, or waits for the thief's
/// result and drops it. A panic of `b` (or of dropping its result) is
/// caught and dropped: a second panic while unwinding would abort.
#[cold]
#[inline(never)]
fn unwind_recorded<B, RB>(local: &Local, frame: &Frame<B, RB>)
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    local.head.set(frame.header.prev);
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        // Acquire; pairs with the Release store of `DONE` in `run_frame`.
        let state = frame.header.state.load(Ordering::Acquire);
        let run_b = state == LATENT
            || (state != DONE
                && !{
                    let thief = frame.header.thief.get();
                    crate::pool::wait_stolen(local, &frame.header, thief)
                });
        if run_b {
            // SAFETY: still latent (never published), or taken back out of
            // the thief's mailbox before the thief saw it: the owner owns
            // `b`; taken once.
            let b = unsafe { frame.take_b() };
            drop(b(false));
        } else {
            local.eager.set(true);
            // SAFETY: we saw `DONE` (Acquire), here or in `wait_stolen`.
            drop(unsafe { frame.take_result() });
        }
    }));
}

/// An unrecorded join: `a` then `b` as plain calls, with Rayon's panic
/// semantics (the caller has counted the join). `a` is called where it
/// lies, and `b` waits in a drop guard that runs it if `a` unwinds (both
/// run, `a`'s panic wins).
///
/// Why not `catch_unwind`: it hands its closure to `std::panicking::try`
/// through a union in memory, so the closures of every join were copied on
/// the way, with 16-byte loads of what the caller had just written with
/// 8-byte stores. Such a load cannot be forwarded from the store buffer and
/// waits for the stores to retire; in knary(4,10,0) that copy took 40-56% of
/// the time in `Ctx::join` (perf, two runs).
#[inline(always)]
pub(crate) fn join_unrecorded<C: Copy, RA, RB, B: FnOnce(C) -> RB>(
    c: C,
    a: impl FnOnce(C) -> RA,
    b: B,
) -> (RA, RB) {
    let guard = RunOnUnwind {
        b: ManuallyDrop::new(b),
        c,
    };
    let ra = a(c);
    let b = guard.disarm();
    (ra, b(c))
}

/// Holds the `b` of an unrecorded join while `a` runs; dropped only if `a`
/// unwinds, and then runs `b`. It owns `b` (by value, and its drop is
/// inlined), so that on the normal path nothing takes `b`'s address: the
/// optimiser may keep `b`'s captures in registers across the call of `a`,
/// as the sequential code keeps its locals. (A guard holding `&mut b` with
/// an out-of-line drop made `b`, and everything it borrows, live in memory:
/// in knary's joins, a dozen stores and loads a join.)
struct RunOnUnwind<C: Copy, B: FnOnce(C) -> RB, RB> {
    b: ManuallyDrop<B>,
    c: C,
}

impl<C: Copy, B: FnOnce(C) -> RB, RB> RunOnUnwind<C, B, RB> {
    /// `a` returned: hands `b` back without running the guard.
    #[inline(always)]
    fn disarm(self) -> B {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so this is the one place `b` is
        // taken out of this guard.
        unsafe { ManuallyDrop::take(&mut me.b) }
    }
}

impl<C: Copy, B: FnOnce(C) -> RB, RB> Drop for RunOnUnwind<C, B, RB> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: drop runs at most once, and only if the guard was not
        // disarmed (which takes `b` out and forgets the guard).
        let b = unsafe { ManuallyDrop::take(&mut self.b) };
        // A fresh slot, written here on the unwinding path only, and handed
        // over by address. Handing over `b` by value made the callee's
        // argument the guard's own memory (the copy is elided), so the
        // guard lived in memory and every join wrote `b` into it before
        // calling `a`. With the slot the guard's address never escapes, it
        // stays in registers, and the landing pad rebuilds `b` from them
        // (knary(4,8,0), callgrind: the context form's recursion 23.3M ->
        // 20.9M instructions, the plain join's 21.4M -> 18.7M).
        let mut slot = MaybeUninit::new((b, self.c));
        // SAFETY: the slot is initialised, and it is a `MaybeUninit`, so
        // after the callee has moved its contents out nothing drops them
        // again.
        unsafe { run_after_panic_at(slot.as_mut_ptr()) };
    }
}

/// [`run_after_panic`] on the contents of a slot.
///
/// # Safety
/// `p` points to an initialised `(b, c)` that the caller will not use (nor
/// drop) afterwards: it is moved out here.
#[cold]
#[inline(never)]
unsafe fn run_after_panic_at<C, RB, B: FnOnce(C) -> RB>(p: *mut (B, C)) {
    // SAFETY: per the contract, initialised and moved out exactly once.
    let (b, c) = unsafe { p.read() };
    run_after_panic(b, c);
}

/// The unwinding path of an unrecorded join: runs `b` (Rayon: both run);
/// a second panic while unwinding would abort, so it is caught and dropped.
#[cold]
#[inline(never)]
fn run_after_panic<C, RB>(b: impl FnOnce(C) -> RB, c: C) {
    let _ = panic::catch_unwind(AssertUnwindSafe(move || b(c)));
}

#[cold]
#[inline(never)]
fn join_promoted<B, RA, RB>(local: &Local, frame: &Frame<B, RB>, ra: RA) -> (RA, RB)
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    let state = frame.header.state.load(Ordering::Acquire);
    let thief = frame.header.thief.get();
    if state == DONE || crate::pool::wait_stolen(local, &frame.header, thief) {
        // The piece came back: the next recorded join may hand out another,
        // and the thief (HUNGRY since before its `DONE`) may get it directly.
        local.eager.set(true);
        local.handback.set(local.handback.get() | 1u64 << thief);
        // SAFETY: we saw `DONE` (Acquire), here or in `wait_stolen`.
        match unsafe { frame.take_result() } {
            Ok(rb) => (ra, rb),
            Err(p) => panic::resume_unwind(p),
        }
    } else {
        // SAFETY: the owner took the job back out of the thief's mailbox
        // before the thief saw it, so the owner owns `b` again; taken once.
        let b = unsafe { frame.take_b() };
        (ra, b(false))
    }
}
