//! The tick and the heartbeat: MuSE's `MAX_SEQUENTIAL` bound on sequential
//! runs, driven by the tick word. A join that finds its worker's word set
//! ticks: it clears the word, polls the scheduler's messages (the
//! heartbeat) and serves demand. With a fixed `MAX_SEQUENTIAL`, every n-th
//! join does.

use super::{poll_gap, Pool};
use crate::raw::{self, Local};
use manycore_sync::atomic::{fence, Ordering};
use std::time::Duration;

/// `max_sequential()` value meaning "on demand": a worker ticks (polls its
/// messages, serves demand) at the next join after someone set its tick
/// word (a hungry worker, a kick, or a runtime that queued work for the
/// core); joins themselves only read the word.
pub const DEFAULT_MAX_SEQUENTIAL: u32 = 0;

/// A time scale of the scheduler: about how often a busy worker used to
/// poll its messages when ticks were counted. Ticks now come on demand (at
/// the next join after a message or a hungry worker); kept for callers
/// that size their own intervals by it.
pub const HEARTBEAT_PERIOD: Duration = Duration::from_micros(25);

// A std atomic, not manycore_sync's: a static needs a const constructor,
// which loom's atomics lack, and a process-wide setting is read as a hint
// outside the steal protocol, so the loom models lose nothing by not seeing
// it.
static MAX_SEQUENTIAL: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(DEFAULT_MAX_SEQUENTIAL);

/// Sets MuSE's `MAX_SEQUENTIAL`: a fixed number of joins a worker runs
/// between two heartbeats (poll messages, serve demand), or 0 for the
/// default (a tick when someone asks, see [`DEFAULT_MAX_SEQUENTIAL`]).
/// Process-wide; a worker picks the new value up at its next heartbeat.
pub fn set_max_sequential(n: u32) {
    MAX_SEQUENTIAL.store(n, std::sync::atomic::Ordering::Relaxed);
    // The calling thread's next join is a heartbeat, which applies it.
    raw::with_local(|l| {
        l.beat.set(0);
        if let Some((p, me)) = l.pool() {
            p.tick_word(me).swap(1, Ordering::AcqRel);
        }
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

/// A tick: a join found the worker's tick word set. In the default
/// (demand-driven) mode: clear the word, run the heartbeat, withdraw the
/// worker's own stale demand, serve demand, arm eager serving. With a fixed
/// `MAX_SEQUENTIAL` the word stays set and every join comes here; every
/// `max_sequential()`-th does the same.
#[cold]
#[inline(never)]
pub(crate) fn tick(local: &Local) {
    let fixed = local.pool().map_or(0, |(p, _)| p.max_sequential());
    if fixed != 0 {
        let n = local.beat.get();
        if n != 0 {
            local.beat.set(n - 1);
            super::serve_if_hungry(local);
            return;
        }
        local.beat.set(fixed - 1);
    } else if let Some((p, me)) = local.pool() {
        // Acquire: a worker that set the word after announcing its demand
        // (or any later setter, all read-modify-writes) made its demand
        // bit visible to the serve below.
        p.tick_word(me).swap(0, Ordering::AcqRel);
        // SeqCst; pairs with the fence of a host that sets the word only if
        // it reads 0 (a runtime core's attention word): a sender that read
        // the 1 this swap replaced has its message seen by the poll below.
        fence(Ordering::SeqCst);
    }
    heartbeat(local, fixed);
    if let Some((p, me)) = local.pool() {
        p.withdraw_stale(me);
        p.serve(local, me, local.handback.replace(0));
    }
    local.eager.set(true);
}

/// MuSE's `MAX_SEQUENTIAL` point, now at every tick: poll the scheduler's
/// messages (and record the poll gap if measured).
#[cold]
#[inline(never)]
fn heartbeat(local: &Local, fixed: u32) {
    if !local.checked.get() {
        local.checked.set(true);
        if local.pool.get().is_null() {
            crate::attach_current_thread();
        }
    }
    let gaps = poll_gap::measuring();
    let Some((p, me)) = local.pool() else {
        return;
    };
    if fixed != 0 {
        // The word stays set: every join reaches the tick.
        p.tick_word(me).swap(1, Ordering::AcqRel);
    }
    let now = if gaps { now_ns() } else { 0 };
    let last = local.last_poll.replace(now);
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
