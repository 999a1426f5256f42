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

    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn bump_steered(&self) {
        Self::bump(&self.steered);
    }
}

/// Counters of a pool since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StealStats {
    /// Latent jobs promoted and handed to a thief.
    pub promotions: u64,
    /// Of those, promotions handed straight to a thief that had just
    /// returned a stolen piece to the same victim (no demand bit claimed).
    pub handbacks: u64,
    /// Promoted jobs taken back by their owner before the thief started them.
    pub reclaims: u64,
    /// Promotions whose sleeping thief was steered off the victim's CPU.
    pub steered: u64,
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
        }
        s
    }
}
