//! Steal counters: per worker, written by that worker alone, summed on demand.

use super::Pool;
use manycore_sync::atomic::{AtomicU64, Ordering};

/// A worker's counters, on its own line: each has one writer (the worker
/// whose `WorkerShared` holds it), so a count is a load and a store, not a
/// locked read-modify-write on a line that all workers share.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    promotions: AtomicU64,
    handbacks: AtomicU64,
    reclaims: AtomicU64,
    steered: AtomicU64,
    kicks: AtomicU64,
}

impl Counters {
    /// Adds one to `c` (single writer: the owning worker).
    #[inline]
    fn bump(c: &AtomicU64) {
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn bump_promotions(&self) {
        Self::bump(&self.promotions);
    }

    #[inline]
    pub(crate) fn bump_handbacks(&self) {
        Self::bump(&self.handbacks);
    }

    #[inline]
    pub(crate) fn bump_reclaims(&self) {
        Self::bump(&self.reclaims);
    }

    #[inline]
    pub(crate) fn bump_kicks(&self) {
        Self::bump(&self.kicks);
    }

    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn bump_steered(&self) {
        Self::bump(&self.steered);
    }
}

/// Steal counters of a pool (a [`ThreadPool`](crate::ThreadPool) or an
/// attached runtime) since it started: whether, and how, work moved between
/// workers. `promotions - reclaims` pieces of work ran on a worker other
/// than the one that forked them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StealStats {
    /// Latent jobs handed to an idle worker (a thief).
    pub promotions: u64,
    /// Of those, jobs handed straight to a thief that had just returned a
    /// stolen piece to the same worker.
    pub handbacks: u64,
    /// Handed-over jobs that their owner took back and ran itself, because
    /// the thief had not started them yet by the time the owner needed them.
    pub reclaims: u64,
    /// Hand-overs to a sleeping thief that was kept off the handing worker's
    /// CPU, so that the two run in parallel (never for pinned workers).
    pub steered: u64,
    /// Signals sent by waiting workers to busy ones, whose handler then
    /// promoted latent work if they had any (see the crate's README).
    pub kicks: u64,
}

impl Pool {
    pub(crate) fn stats(&self) -> StealStats {
        let mut s = StealStats::default();
        for w in self.workers.iter() {
            let c = &w.counters;
            s.promotions += c.promotions.load(Ordering::Relaxed);
            s.handbacks += c.handbacks.load(Ordering::Relaxed);
            s.reclaims += c.reclaims.load(Ordering::Relaxed);
            s.steered += c.steered.load(Ordering::Relaxed);
            s.kicks += c.kicks.load(Ordering::Relaxed);
        }
        s
    }
}
