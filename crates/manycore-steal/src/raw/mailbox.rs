//! A worker's mailbox: the one word through which a job changes hands. It
//! lives in `raw` because its Release/Acquire pair is what publishes a frame
//! to its thief (invariant P), and taking a job out of it is what entitles a
//! thread to run the frame's `b`.

use super::frame::JobHeader;
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::CachePadded;
use std::ptr::NonNull;

/// Mailbox value: not asking for work. Only the worker itself moves its
/// mailbox away from `EMPTY` (to `HUNGRY`).
pub(crate) const EMPTY: usize = 0;
/// Mailbox value: asking for work. Set by the worker itself: in its idle
/// hook (`Pool::register`), or as a thief that has just finished a stolen
/// piece, before its `DONE` (`Pool::mark_hungry`, for the handback). Left
/// by a victim's `offer` or the worker's own `withdraw`. Any value above
/// `HUNGRY` is the address of a job handed to the worker.
pub(crate) const HUNGRY: usize = 1;

/// A worker's mailbox word: `EMPTY`, `HUNGRY`, or the address of a job
/// handed to this worker. Its transitions, each a method below:
///
/// | from     | to       | by                       | method       | ordering      |
/// |----------|----------|--------------------------|--------------|---------------|
/// | `EMPTY`  | `HUNGRY` | the worker               | `set_hungry` | Relaxed store |
/// | `HUNGRY` | `EMPTY`  | the worker               | `withdraw`   | Relaxed CAS   |
/// | `HUNGRY` | job      | a victim (job's owner)   | `offer`      | Release CAS   |
/// | job      | `EMPTY`  | the worker (the thief)   | `take`       | Acquire CAS   |
/// | job      | `EMPTY`  | the job's owner          | `reclaim`    | Relaxed CAS   |
///
/// A job leaves the mailbox exactly once: `take` and `reclaim` race on the
/// same CAS, and whoever wins owns `b` (invariant P). `HUNGRY` is written
/// with plain stores only by the worker, and only from `EMPTY` (a job cannot
/// arrive in an `EMPTY` mailbox, so no job is overwritten).
///
/// Alone on its line, as is the worker's event count: a victim's publishing
/// CAS, the thief's claiming CAS and the victim's look at the event count
/// right after (to wake the thief) would otherwise fight over one line
/// (docs/notes/2026-11-25-steal-cache-lines.md).
#[derive(Debug, Default)]
pub(crate) struct Mailbox(CachePadded<AtomicUsize>);

impl Mailbox {
    /// The word, loaded with `order` (the caller picks a transition from it).
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> usize {
        self.0.load(order)
    }

    /// True if a job waits here.
    #[inline]
    pub(crate) fn has_job(&self) -> bool {
        self.0.load(Ordering::Relaxed) > HUNGRY
    }

    /// `EMPTY` -> `HUNGRY`, by the worker itself, having read `EMPTY` (a
    /// plain store: nobody else moves the word away from `EMPTY`).
    #[inline]
    pub(crate) fn set_hungry(&self) {
        self.0.store(HUNGRY, Ordering::Relaxed);
    }

    /// `HUNGRY` -> `EMPTY`, by the worker itself; fails if a victim has put a
    /// job here meanwhile.
    #[inline]
    pub(crate) fn withdraw(&self) -> bool {
        self.0
            .compare_exchange(HUNGRY, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// `HUNGRY` -> `job`, by a victim. Release; pairs with the Acquire
    /// load/CAS in [`take`](Self::take): the thief sees `b` and `owner` as
    /// written by this thread. The CAS is this thread's first touch of the
    /// thief's mailbox line: a load first would fetch the line shared and the
    /// CAS then fetch it again, exclusive, before the thief can see its job.
    #[inline]
    pub(crate) fn offer(&self, job: NonNull<JobHeader>) -> bool {
        self.0
            .compare_exchange(
                HUNGRY,
                job.as_ptr() as usize,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// `job` -> `EMPTY`, by the worker itself: takes the job here, if any.
    pub(crate) fn take(&self) -> Option<Stolen> {
        // Acquire; pairs with the Release CAS in `offer` (the frame's contents).
        let m = self.0.load(Ordering::Acquire);
        if m <= HUNGRY {
            return None;
        }
        // Acquire, as above. Fails only if the owner took the job back.
        if self
            .0
            .compare_exchange(m, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            NonNull::new(m as *mut JobHeader).map(Stolen)
        } else {
            None
        }
    }

    /// `job` -> `EMPTY`, by the job's owner: takes it back. Relaxed: on
    /// success the thief never read the frame.
    #[inline]
    pub(crate) fn reclaim(&self, job: &JobHeader) -> bool {
        let addr = job as *const JobHeader as usize;
        self.0
            .compare_exchange(addr, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// A job taken out of a mailbox by [`Mailbox::take`], the only maker of one:
/// a live, published frame that the taking thread now owns the `b` and result
/// slot of (invariant P). Not `Send` or `Clone`, so it is run (by
/// [`run_stolen`](super::run_stolen)) once, on the thread that took it.
pub(crate) struct Stolen(NonNull<JobHeader>);

impl Stolen {
    /// The frame's header.
    pub(super) fn into_raw(self) -> *const JobHeader {
        self.0.as_ptr().cast_const()
    }
}
