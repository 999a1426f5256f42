//! The tick and the heartbeat: MuSE's `MAX_SEQUENTIAL` bound on sequential
//! runs. Every so many joins a busy worker serves demand (a tick); every few
//! ticks it also re-calibrates the tick interval and polls its scheduler's
//! messages (the heartbeat).

use super::{poll_gap, Pool};
use crate::raw::{self, Local};
use std::time::Duration;

/// Ticks per heartbeat in adaptive mode: demand is looked at this many times
/// more often than messages are polled and the clock is read.
const TICKS_PER_HEARTBEAT: u32 = 8;

/// `max_sequential()` value meaning "adaptive": the number of joins between
/// two heartbeats is tuned per worker so that heartbeats come about every
/// [`HEARTBEAT_PERIOD`] (a join count calibrated by a clock read at each
/// heartbeat; joins themselves never read the clock).
pub const DEFAULT_MAX_SEQUENTIAL: u32 = 0;

/// The target time between two heartbeats in adaptive mode; ticks (which
/// look at the demand word) come eight times as often. Polling messages and
/// reading the clock cost tens of nanoseconds, looking at demand one load;
/// message polling latency stays bounded by about this much (plus
/// preemption), demand is seen within about an eighth of it.
pub const HEARTBEAT_PERIOD: Duration = Duration::from_micros(25);

/// Bounds of the adaptive number of joins per tick.
const MIN_INTERVAL: u32 = 2;
const MAX_INTERVAL: u32 = 1 << 13;

// A std atomic, not manycore_sync's: a static needs a const constructor,
// which loom's atomics lack, and a process-wide setting is read as a hint
// outside the steal protocol, so the loom models lose nothing by not seeing
// it.
static MAX_SEQUENTIAL: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(DEFAULT_MAX_SEQUENTIAL);

/// Sets MuSE's `MAX_SEQUENTIAL`: a fixed number of joins a worker runs
/// between two heartbeats (poll messages, serve demand), or 0 for the
/// adaptive default ([`HEARTBEAT_PERIOD`]). Process-wide; a worker picks the
/// new value up at its next heartbeat.
pub fn set_max_sequential(n: u32) {
    MAX_SEQUENTIAL.store(n, std::sync::atomic::Ordering::Relaxed);
    // The calling thread's next join is a heartbeat, which applies it.
    raw::with_local(|l| {
        l.beat.set(0);
        l.ticks.set(1);
    });
}

/// The current `MAX_SEQUENTIAL` setting (0: adaptive; see [`set_max_sequential`]).
pub fn max_sequential() -> u32 {
    MAX_SEQUENTIAL.load(std::sync::atomic::Ordering::Relaxed)
}

impl Pool {
    /// Gives this pool its own `MAX_SEQUENTIAL` (0: the process-wide one).
    pub(crate) fn with_max_sequential(mut self, n: u32) -> Self {
        self.max_sequential = n;
        self
    }

    /// The `MAX_SEQUENTIAL` this pool's workers use (0: adaptive).
    fn max_sequential(&self) -> u32 {
        match self.max_sequential {
            0 => max_sequential(),
            n => n,
        }
    }
}

/// A tick, every `interval` joins: re-arm the counter, serve demand and,
/// every few ticks, run the heartbeat.
#[cold]
#[inline(never)]
pub(crate) fn tick(local: &Local) {
    let t = local.ticks.get();
    if t <= 1 {
        heartbeat(local);
    } else {
        local.ticks.set(t - 1);
        local
            .beat
            .set(local.interval.get().saturating_mul(local.backoff.get()) - 1);
    }
    if let Some((p, me)) = local.pool() {
        p.withdraw_stale(me);
        p.serve(local, me, local.handback.replace(0));
    }
    local.eager.set(true);
}

/// MuSE's `MAX_SEQUENTIAL` point, reached every `max_sequential()` joins (or,
/// in adaptive mode, about every [`HEARTBEAT_PERIOD`]): re-calibrate the tick
/// interval from one clock read and poll the scheduler's messages.
#[cold]
#[inline(never)]
fn heartbeat(local: &Local) {
    if !local.checked.get() {
        local.checked.set(true);
        if local.pool.get().is_null() {
            crate::attach_current_thread();
        }
    }
    let gaps = poll_gap::measuring();
    let Some((p, _)) = local.pool() else {
        // Not a worker: nothing to poll or serve; count joins cheaply.
        local.ticks.set(1);
        local.beat.set(MAX_INTERVAL);
        return;
    };
    let fixed = p.max_sequential();
    let backoff = local.backoff.get();
    let now = if fixed == 0 || gaps { now_ns() } else { 0 };
    let last = local.last_poll.replace(now);
    let interval = if fixed != 0 {
        local.ticks.set(1);
        fixed
    } else {
        local.ticks.set(TICKS_PER_HEARTBEAT);
        let mut iv = local.interval.get();
        if last != 0 && now != 0 {
            let elapsed = now.saturating_sub(last);
            let target = HEARTBEAT_PERIOD.as_nanos() as u64 * u64::from(backoff);
            if elapsed < target / 2 && iv < MAX_INTERVAL {
                iv *= 2;
            } else if elapsed > target * 2 && iv > MIN_INTERVAL {
                iv /= 2;
            }
            local.interval.set(iv);
        }
        iv
    };
    local.beat.set(interval.saturating_mul(backoff) - 1);
    if gaps && last != 0 && now > last {
        poll_gap::record(now - last);
    }
    poll_host(p, local);
}

/// Runs the host's pending messages; a join tree among them starts at the
/// top (its first levels are recorded), not at the depth of the join that
/// polls.
pub(super) fn poll_host(p: &Pool, local: &Local) {
    let depth = local.depth.replace(0);
    p.host.poll_once();
    local.depth.set(depth);
}

/// Nanoseconds since the first call (a process-wide epoch for poll-gap stats).
#[cfg(not(loom))]
pub(crate) fn now_ns() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let e = *EPOCH.get_or_init(Instant::now);
    e.elapsed().as_nanos() as u64 + 1
}
#[cfg(loom)]
pub(crate) fn now_ns() -> u64 {
    1
}
