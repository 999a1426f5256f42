//! Demand, the thief's side: an idle worker asks for work (its mailbox
//! `HUNGRY`, its bit in the demand word) and withdraws the request.

use super::Pool;
use crate::raw::{Local, Stolen, EMPTY, HUNGRY};
use manycore_sync::atomic::{AtomicU64, Ordering};
use manycore_sync::CachePadded;

/// The demand word. Bit i: worker i is (probably) hungry. A hint that lets
/// a busy worker find demand with one Relaxed load; the mailbox decides.
///
/// * Set by worker i itself, with Release, after its mailbox went `HUNGRY`:
///   in its idle hook (`Pool::register`) or, as a thief that has just
///   finished a stolen piece, after its `DONE` (`Pool::publish_demand`).
/// * Cleared by a victim that claims it (`claim`, Acquire: it then sees the
///   `HUNGRY` mailbox the bit was set after) and hands worker i a frame, or
///   by worker i withdrawing its demand (`clear`, Relaxed).
///
/// A bit may be stale: set for a worker whose mailbox holds a job, or is
/// `EMPTY` again. A victim that claims such a bit fails its `offer` CAS and
/// puts its frame back. A bit is claimed only with a frame in hand, so a
/// claimed bit of a `HUNGRY` worker is always served.
#[derive(Debug)]
pub(crate) struct Demand(CachePadded<AtomicU64>);

impl Demand {
    pub(crate) fn new() -> Self {
        Self(CachePadded::new(AtomicU64::new(0)))
    }

    /// Who may be hungry: one Relaxed load (a victim's look at every tick).
    #[inline(always)]
    pub(crate) fn peek(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets worker `me`'s bit. Release; pairs with the Acquire in
    /// [`claim`](Self::claim): a victim that claims the bit sees `HUNGRY` in
    /// the mailbox.
    #[inline]
    pub(crate) fn announce(&self, me: usize) {
        self.0.fetch_or(1 << me, Ordering::Release);
    }

    /// Clears worker `me`'s own bit (Relaxed: a victim that claimed it
    /// already fails its CAS, as the mailbox is `EMPTY`).
    #[inline]
    pub(crate) fn clear(&self, me: usize) {
        self.0.fetch_and(!(1u64 << me), Ordering::Relaxed);
    }

    /// Claims thief `t`'s bit for a victim; false if another victim claimed
    /// it first. Acquire; pairs with the Release in [`announce`](Self::announce).
    #[inline]
    pub(crate) fn claim(&self, t: usize) -> bool {
        let bit = 1u64 << t;
        self.0.fetch_and(!bit, Ordering::Acquire) & bit != 0
    }
}

impl Pool {
    /// Announces that worker `me` wants work (no-op if it already does, or if a
    /// job is already waiting for it).
    pub(crate) fn register(&self, me: usize) {
        let w = &self.workers[me];
        // Only this worker moves its mailbox away from EMPTY.
        match w.mailbox.load(Ordering::Relaxed) {
            EMPTY => {
                w.steer.start_hungry_clock();
                w.mailbox.set_hungry();
                self.hungry.announce(me);
            }
            // Marked hungry by `mark_hungry` (which reads no clock): the
            // wait starts now, as far as steering is concerned.
            HUNGRY if !w.steer.hungry_clock_running() => {
                w.steer.start_hungry_clock();
            }
            _ => {}
        }
    }

    /// A worker that just finished a stolen piece, before its `DONE`: marks
    /// its mailbox HUNGRY (a store to its own line; no RMW). The demand bit
    /// follows in [`publish_demand`](Self::publish_demand).
    pub(crate) fn mark_hungry(&self, me: usize) {
        let mb = &self.workers[me].mailbox;
        if mb.load(Ordering::Relaxed) == EMPTY {
            mb.set_hungry();
        }
    }

    /// After [`mark_hungry`](Self::mark_hungry) and `DONE`: sets the demand
    /// bit, unless the owner has already handed this worker a job directly.
    pub(crate) fn publish_demand(&self, me: usize) {
        if self.workers[me].mailbox.load(Ordering::Relaxed) == HUNGRY {
            self.hungry.announce(me);
        }
    }

    /// Worker `me`, busy at a tick, stops asking for work if it still is:
    /// its scheduler ran a message (say, the root of a join tree) after its
    /// idle hook had announced demand, and a victim serving that stale
    /// demand would hand a job to a worker that does not look at its mailbox
    /// until it is idle again (the victim then takes the job back at its
    /// join, after a wasted promotion). A job already handed over stays in
    /// the mailbox: the victim takes it back, or this worker runs it when
    /// it next waits or idles.
    pub(crate) fn withdraw_stale(&self, me: usize) {
        let mb = &self.workers[me].mailbox;
        // Only this worker moves its mailbox away from HUNGRY but victims,
        // which replace it by a job (then the CAS fails and the job stays).
        if mb.load(Ordering::Relaxed) == HUNGRY && mb.withdraw() {
            // As in `withdraw`: a victim that claimed the bit already fails
            // its CAS (the mailbox is EMPTY) and puts its frame back.
            self.hungry.clear(me);
        }
    }

    /// Withdraws worker `me`'s demand; returns a job that arrived meanwhile
    /// (the caller must run it).
    pub(crate) fn withdraw(&self, me: usize) -> Option<Stolen> {
        let mb = &self.workers[me].mailbox;
        loop {
            match mb.load(Ordering::Acquire) {
                EMPTY => return None,
                HUNGRY => {
                    if mb.withdraw() {
                        // Clear the hint too, so that victims do not claim
                        // and fail on it (a victim that claimed it already
                        // fails its CAS, as the mailbox is EMPTY).
                        self.hungry.clear(me);
                        return None;
                    }
                }
                _ => {
                    if let Some(j) = self.take_job(me) {
                        return Some(j);
                    }
                }
            }
        }
    }
}

/// Marks the calling worker HUNGRY (a thief finishing a stolen job, before
/// its `DONE`); see [`Pool::mark_hungry`].
pub(crate) fn mark_hungry(local: &Local) {
    if let Some((p, me)) = local.pool() {
        p.mark_hungry(me);
    }
}
