//! Steering: a victim keeps a sleeping thief off its own CPU when it hands
//! it a job, and the thief gives itself its full CPU set back when it runs.

use super::heartbeat::now_ns;
use super::Pool;
use crate::raw::Local;
use manycore_sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering::Relaxed};

/// What a victim needs to steer a sleeping thief onto another CPU. Hints
/// outside the steal protocol: every access is Relaxed and pairs with
/// nothing, since no memory is published through them; a stale value costs
/// at most a needless or a missed steering, and the affinity syscalls order
/// themselves. (Under loom, steering is stubbed out: no syscalls.)
#[derive(Debug, Default)]
pub(crate) struct Steer {
    /// The worker's kernel thread id, or 0 if it may not be steered (it is
    /// pinned, or the process has one CPU). Stored by the worker when it is
    /// bound (`bind`); read by victims.
    tid: AtomicI32,
    /// When (`now_ns`) the worker started asking for work; 0 while it is
    /// not. Stored by the worker in its idle round (`Pool::register`: not in
    /// `mark_hungry`, which runs between a stolen piece's end and its `DONE`
    /// and should not read the clock), cleared by the worker when it starts
    /// a job (`unsteer_self`); read by victims, which steer only a worker
    /// that has asked for longer than `STEER_AFTER_NS`.
    hungry_since: AtomicU64,
    /// Whether the worker's affinity is narrowed by steering: `UNNARROWED`,
    /// `NARROWING` or `NARROWED`, below.
    narrowed: AtomicU8,
}

/// `Steer::narrowed`: the worker has its full CPU set, as far as steering
/// goes. Restored by the worker (`unsteer`, a swap, then a syscall if the
/// old value was not this) when it starts a job or in its idle round, or by
/// the victim whose syscall failed.
const UNNARROWED: u8 = 0;
/// `Steer::narrowed`: a victim is narrowing the worker's set; stored by the
/// victim before its syscall, so that a worker that restores its set
/// meanwhile leaves a trace (the mark is gone when the victim looks again).
#[cfg(not(loom))]
const NARROWING: u8 = 1;
/// `Steer::narrowed`: a victim has narrowed the worker's set; CAS from
/// `NARROWING` by the victim after its syscall. If the CAS fails, the
/// worker restored its set meanwhile, perhaps before the narrowing landed,
/// and the victim restores the full set itself.
#[cfg(not(loom))]
const NARROWED: u8 = 2;

/// How long a worker must have been asking for work before a victim steers
/// it (see [`Pool::steer`]): a thief that asked more recently is still
/// spinning, on a CPU of its own.
#[cfg(not(loom))]
const STEER_AFTER_NS: u64 = 20_000;

impl Steer {
    /// Records the calling thread (worker of this `Steer`) as steerable or not.
    pub(crate) fn set_tid(&self) {
        self.tid.store(steerable_tid(), Relaxed);
    }

    /// The worker starts (now) to ask for work, as far as steering goes.
    #[inline]
    pub(crate) fn start_hungry_clock(&self) {
        self.hungry_since.store(now_ns(), Relaxed);
    }

    /// Whether [`start_hungry_clock`](Self::start_hungry_clock) ran since
    /// the worker last started a job.
    #[inline]
    pub(crate) fn hungry_clock_running(&self) -> bool {
        self.hungry_since.load(Relaxed) != 0
    }
}

impl Pool {
    /// Right after handing a job to thief `t` (worker `me`'s promotion),
    /// before waking it: if `t` has asked for work long enough to be asleep,
    /// keep it off the calling thread's CPU.
    ///
    /// Why: Linux wakes a sleeping thread on the waker's CPU when it judges
    /// the two to share data (wake-affine), and the thief then queues behind
    /// its own victim while the other CPU idles until the next load balance,
    /// milliseconds later (docs/notes/2026-11-25-steal-steering.md). The
    /// thief restores its full CPU set when it starts the job.
    #[cfg(not(loom))]
    pub(super) fn steer(&self, t: usize, me: usize) {
        let st = &self.workers[t].steer;
        let tid = st.tid.load(Relaxed);
        let since = st.hungry_since.load(Relaxed);
        if tid == 0 || since == 0 || now_ns().saturating_sub(since) < STEER_AFTER_NS {
            return;
        }
        let Some(here) = manycore_sync::cpu::current_cpu() else {
            return;
        };
        let others: Vec<usize> = manycore_sync::cpu::original()
            .iter()
            .copied()
            .filter(|&c| c != here)
            .collect();
        if others.is_empty() {
            return;
        }
        // Marked before the syscall, so that a thief that takes the job at
        // once (it was awake after all) restores its set, and confirmed
        // after it: if the thief restored its set meanwhile (the mark is
        // gone), our narrowing may have landed after its restoring, and
        // nobody else would undo it (the thief would stay narrowed to one
        // CPU until its next steering): undo it here.
        st.narrowed.store(NARROWING, Relaxed);
        if manycore_sync::cpu::set_thread_affinity(tid, &others).is_err() {
            st.narrowed.store(UNNARROWED, Relaxed);
            return;
        }
        if st
            .narrowed
            .compare_exchange(NARROWING, NARROWED, Relaxed, Relaxed)
            .is_err()
        {
            let _ = set_full_affinity(tid);
        }
        self.workers[me].counters.bump_steered();
    }
    #[cfg(loom)]
    pub(super) fn steer(&self, _t: usize, _me: usize) {}

    /// Gives worker `t` its full CPU set back (called by `t` itself, once it
    /// runs).
    fn unsteer(&self, t: usize) {
        let st = &self.workers[t].steer;
        if st.narrowed.swap(UNNARROWED, Relaxed) != UNNARROWED {
            let _ = set_full_affinity(st.tid.load(Relaxed));
        }
    }

    /// Worker `me`, idle: if a victim steered it for a job that was taken
    /// back, its full CPU set back (this does not move it).
    pub(super) fn unsteer_idle(&self, me: usize) {
        if self.workers[me].steer.narrowed.load(Relaxed) != UNNARROWED {
            self.unsteer(me);
        }
    }

    /// A worker about to run a job: if a victim steered it, its full CPU set
    /// back (it runs where it was steered to; this only lets it move later).
    #[inline]
    pub(super) fn unsteer_self(&self, local: &Local) {
        if let Some((_, me)) = local.pool() {
            let st = &self.workers[me].steer;
            if st.hungry_since.load(Relaxed) != 0 {
                st.hungry_since.store(0, Relaxed);
            }
            if st.narrowed.load(Relaxed) != UNNARROWED {
                self.unsteer(me);
            }
        }
    }
}

#[cfg(not(loom))]
fn set_full_affinity(tid: i32) -> std::io::Result<()> {
    manycore_sync::cpu::set_thread_affinity(tid, manycore_sync::cpu::original())
}
#[cfg(loom)]
fn set_full_affinity(_tid: i32) -> std::io::Result<()> {
    Ok(())
}

/// Whether the calling thread may be steered: not pinned, more than one CPU.
#[cfg(not(loom))]
fn steerable_tid() -> i32 {
    let n = manycore_sync::cpu::original().len();
    match manycore_sync::cpu::current_affinity() {
        Ok(a) if n > 1 && a.len() == n => manycore_sync::cpu::thread_id(),
        _ => 0,
    }
}
#[cfg(loom)]
fn steerable_tid() -> i32 {
    0
}
