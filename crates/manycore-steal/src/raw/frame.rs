//! The recorded frame of a latent job, its state word, and the thief's
//! side of running it.

use super::local::Local;
use super::mailbox::Stolen;
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::cell::UnsafeCell;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::thread::Result as ThreadResult;

// The values of `JobHeader::state`, in the order a frame goes through them:
//
//   LATENT --promote--> 1 + thief --run_stolen--> STARTED --run_frame--> DONE
//      ^                    |
//      +----unpromote-------+   (publication failed: the frame was never seen)
//
// A frame taken back by its owner (`Mailbox::reclaim`) keeps `1 + thief`: the
// owner runs `b` itself and the frame dies with its join. `1 + thief` is at
// most `MAX_WORKERS` (64), far below `STARTED`.

/// `state`: nobody has been handed the frame. Stored by the owner when it
/// builds the frame (a plain initialisation) and by `unpromote` when the
/// publishing CAS failed (Relaxed: no other thread saw the frame). Read by
/// the owner at its join (Acquire, for the other values' sake): still
/// `LATENT`, it runs `b` inline. `oldest_latent` promotes only such frames.
pub(super) const LATENT: usize = 0;
/// `state`: the thief has stored the result; the last the thief does to the
/// frame. Stored by the thief in `run_frame` with Release, after writing the
/// result and marking its mailbox `HUNGRY`; pairs with the owner's Acquire
/// loads (`join`, `join_promoted`, `unwind_recorded`, `is_done`), which then
/// see the result and the `HUNGRY` mailbox (handback). The frame may be gone
/// as soon as the store lands.
pub(super) const DONE: usize = usize::MAX;
/// `state`: the thief has taken the job out of its mailbox. Stored by the
/// thief in `run_stolen` (Relaxed; its first touch of the frame's line is a
/// store, so the line comes over exclusive once). Read by the owner
/// (`is_started`, Relaxed) as a hint only: no point trying to take the job
/// back, and the CAS would pull the thief's mailbox line away just before
/// the thief marks itself hungry. Pairs with nothing; correctness rests on
/// the mailbox CAS and `DONE`.
const STARTED: usize = usize::MAX - 1;

/// The type-erased head of a recorded job frame.
#[derive(Debug)]
pub(crate) struct JobHeader {
    /// Owner-only, immutable: the chain's head when this frame was linked
    /// (an older frame further up the same stack), or null.
    pub(super) prev: *const JobHeader,
    /// `LATENT`, `1 + thief` once promoted to worker `thief` (stored by the
    /// owner in `promote`, Relaxed, before the Release CAS that publishes
    /// the frame; only the owner reads this value), `STARTED`, or `DONE`:
    /// see the constants above.
    pub(super) state: AtomicUsize,
    /// Runs `b` on a thief; returns the owner's worker index.
    run: unsafe fn(*const JobHeader, &Local) -> usize,
    /// The owner's worker index; written by the owner before publication.
    owner: UnsafeCell<MaybeUninit<usize>>,
    /// Owner-only: the thief the frame was promoted to (`promote`).
    pub(super) thief: Cell<usize>,
}

/// A recorded job: `b` and the slot for its result, on the stack of `join`.
#[repr(C)]
pub(super) struct Frame<B, RB> {
    pub(super) header: JobHeader,
    b: UnsafeCell<MaybeUninit<B>>,
    result: UnsafeCell<MaybeUninit<ThreadResult<RB>>>,
}

impl<B, RB> Frame<B, RB>
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    #[inline(always)]
    pub(super) fn new(b: B, prev: *const JobHeader) -> Self {
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
    pub(super) unsafe fn take_b(&self) -> B {
        // SAFETY: `b` was initialised in `new` and, by the caller's contract,
        // has not been moved out yet and is not accessed concurrently.
        self.b.with(|p| unsafe { (*p).assume_init_read() })
    }

    /// Moves the thief's result out.
    ///
    /// # Safety
    /// The thief has stored the result and the caller has seen `DONE` (Acquire).
    pub(super) unsafe fn take_result(&self) -> ThreadResult<RB> {
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

/// Runs a job this thread took out of its mailbox; returns the owner's index.
pub(crate) fn run_stolen(job: Stolen, local: &Local) -> usize {
    let job = job.into_raw();
    // First touch of the frame's line a store: it comes over exclusive, once,
    // for the reads below and the result and `DONE` stores to follow (a read
    // first would fetch it shared, and the result store fetch it again).
    // SAFETY: a `Stolen` names a live, published frame that this thread has
    // taken (invariant P); `state` is atomic.
    unsafe { (*job).state.store(STARTED, Ordering::Relaxed) };
    // SAFETY: as above; `run` is immutable.
    let run = unsafe { (*job).run };
    // SAFETY: the frame is live and published to this thread, which took it
    // out of the mailbox by value, so it runs once: `run_frame`'s contract.
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
