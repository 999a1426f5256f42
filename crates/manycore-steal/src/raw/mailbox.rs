//! A worker's mailbox: the one word through which a job changes hands.

use super::frame::JobHeader;
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::CachePadded;
use std::ptr::NonNull;

/// Mailbox value: not asking for work.
pub(crate) const EMPTY: usize = 0;
/// Mailbox value: asking for work (any larger value is a job's address).
pub(crate) const HUNGRY: usize = 1;

/// `EMPTY`, `HUNGRY`, or the address of a job handed to this worker.
/// Alone on its line, as is `ec`: a victim's publishing CAS, the thief's
/// claiming CAS and the victim's look at `ec` right after (to wake the
/// thief) would otherwise fight over one line. Measured with a traced
/// steal (rdtsc marks), on one line: the thief's claim 160 ns, the
/// victim's wake-up 120 ns; apart: 70 and 20-40 ns.
#[derive(Debug, Default)]
pub(crate) struct Mailbox(CachePadded<AtomicUsize>);

impl Mailbox {
    /// The word, loaded with `order`.
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> usize {
        self.0.load(order)
    }

    /// True if a job waits here.
    #[inline]
    pub(crate) fn has_job(&self) -> bool {
        self.0.load(Ordering::Relaxed) > HUNGRY
    }

    /// `EMPTY` -> `HUNGRY`, by the worker itself (a plain store).
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
