//! Poll-gap statistics: the longest time between two heartbeat polls of a
//! worker inside a join tree, for benches that check the polling bound.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(feature = "internals")]
use std::time::Duration;

// Std atomics, not manycore_sync's: statics need a const constructor, which
// loom's atomics lack, and statistics are outside the steal protocol, so the
// loom models lose nothing by not seeing them.
static GAP_STATS: AtomicBool = AtomicBool::new(false);
static MAX_GAP_NS: AtomicU64 = AtomicU64::new(0);

/// Starts (or restarts) measuring the longest gap between two polls of a
/// worker inside a join tree; [`max_poll_gap`] reads it.
#[cfg(feature = "internals")]
pub fn measure_poll_gaps(on: bool) {
    MAX_GAP_NS.store(0, Ordering::Relaxed);
    GAP_STATS.store(on, Ordering::Relaxed);
}

/// The longest gap between two heartbeat polls seen since
/// [`measure_poll_gaps`]`(true)`.
#[cfg(feature = "internals")]
pub fn max_poll_gap() -> Duration {
    Duration::from_nanos(MAX_GAP_NS.load(Ordering::Relaxed))
}

/// Whether gaps are being measured (read at every heartbeat).
#[inline]
pub(super) fn measuring() -> bool {
    GAP_STATS.load(Ordering::Relaxed)
}

/// Records a gap of `ns` between two heartbeats.
#[inline]
pub(super) fn record(ns: u64) {
    MAX_GAP_NS.fetch_max(ns, Ordering::Relaxed);
}
