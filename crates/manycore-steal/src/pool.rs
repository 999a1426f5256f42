//! The shared side of stealing: per-worker mailboxes, the demand word, the
//! tick and heartbeat, the thief's idle hook and the owner's wait for a
//! stolen job.
//!
//! MuSE (Leberecht, section 3.2) runs every call on the stack and spawns only
//! on demand, bounding sequential runs by `MAX_SEQUENTIAL` so that the
//! scheduler keeps polling; here an idle worker announces demand (its bit in
//! [`Pool::hungry`] plus `HUNGRY` in its mailbox) and sleeps, and a busy
//! worker, at its ticks (every so many joins) and at every recorded join of
//! the context form, looks at the demand word and, if someone is hungry,
//! promotes its oldest latent frame straight into that thief's mailbox; every
//! few ticks its heartbeat polls the scheduler's messages. The protocol is
//! described in `README.md` and model-checked in `tests/loom.rs`.

use crate::raw::{self, JobHeader, Local};
use manycore_sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use manycore_sync::{Arc, CachePadded, EventCount, SpinBudget};
use std::cell::RefCell;
use std::ptr::NonNull;
use std::time::Duration;

/// Mailbox value: not asking for work.
pub(crate) const EMPTY: usize = 0;
/// Mailbox value: asking for work (any larger value is a job's address).
pub(crate) const HUNGRY: usize = 1;

/// Largest tick interval multiplier after promotions that came back unstolen.
const MAX_BACKOFF: u32 = 16;

/// How long an owner waits for its stolen job before it announces demand.
#[cfg(not(loom))]
const QUIET_WAIT: Duration = Duration::from_micros(2);

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

// Process-wide settings and statistics are std atomics on purpose: they are
// hints outside the steal protocol (loom's atomics cannot live in statics).
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

/// What the steal protocol needs from the scheduler a worker lives in: the
/// seam between this crate and `manycore-rt` (or the built-in thread pool).
pub(crate) trait Host: Send + Sync + 'static {
    /// Runs pending incoming messages on the calling core (bounded batch).
    fn poll_once(&self) -> usize;
    /// Wakes worker `i` if it sleeps in its idle loop, after a job was put
    /// in its mailbox; never lost, even if `i` is just about to sleep (its
    /// sleep re-check looks at the mailbox after announcing itself).
    fn notify(&self, i: usize);
}

/// A worker's shared state.
#[derive(Debug, Default)]
pub(crate) struct WorkerShared {
    /// `EMPTY`, `HUNGRY`, or the address of a job handed to this worker.
    /// Alone on its line, as is `ec`: a victim's publishing CAS, the thief's
    /// claiming CAS and the victim's look at `ec` right after (to wake the
    /// thief) would otherwise fight over one line. Measured with a traced
    /// steal (rdtsc marks), on one line: the thief's claim 160 ns, the
    /// victim's wake-up 120 ns; apart: 70 and 20-40 ns.
    mailbox: CachePadded<AtomicUsize>,
    /// Where this worker sleeps while it waits for a stolen job (and, in the
    /// built-in pool, while idle). Written only by a sleeper.
    pub(crate) ec: CachePadded<EventCount>,
    /// Steering (see [`Pool::steer`]); hints outside the steal protocol.
    steer: Steer,
    /// This worker's counters, written by it alone (a victim counts its own
    /// promotions and reclaims on its own line, not on one all share).
    counters: Counters,
}

/// What a victim needs to steer a sleeping thief onto another CPU. Plain std
/// atomics: nothing in the protocol depends on them.
#[derive(Debug, Default)]
struct Steer {
    /// The worker's kernel thread id, or 0 if it may not be steered (it is
    /// pinned, or the process has one CPU).
    tid: std::sync::atomic::AtomicI32,
    /// When (`now_ns`) the worker last started asking for work; 0 if it is not.
    hungry_since: std::sync::atomic::AtomicU64,
    /// A victim narrowed the worker's affinity (`NARROWED`), or is doing
    /// so (`NARROWING`: between its mark and its syscall); the worker
    /// restores it (`UNNARROWED` again).
    narrowed: std::sync::atomic::AtomicU8,
}

/// `Steer::narrowed`: the worker has its full CPU set (as far as steering
/// goes), a victim is narrowing it, or has narrowed it.
const UNNARROWED: u8 = 0;
#[cfg(not(loom))]
const NARROWING: u8 = 1;
#[cfg(not(loom))]
const NARROWED: u8 = 2;

/// Counters, for tests and benchmarks; each has one writer (the worker
/// whose `WorkerShared` holds it), so a count is a load and a store.
#[derive(Debug, Default)]
struct Counters {
    promotions: AtomicU64,
    handbacks: AtomicU64,
    reclaims: AtomicU64,
    steered: std::sync::atomic::AtomicU64,
}

impl Counters {
    /// Adds one to `c` (single writer: the owning worker).
    fn bump(c: &AtomicU64) {
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
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

/// The workers of one runtime (or built-in pool) that steal from each other.
pub(crate) struct Pool {
    workers: Box<[CachePadded<WorkerShared>]>,
    /// Bit i: worker i is (probably) hungry. A hint; the mailbox decides.
    hungry: CachePadded<AtomicU64>,
    host: Box<dyn Host>,
    /// How long a waiting owner spins before it sleeps.
    spin: Duration,
    /// This pool's own `MAX_SEQUENTIAL` (0: the process-wide setting).
    max_sequential: u32,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers.len())
            .field("hungry", &self.hungry.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// At most this many workers take part in stealing (the demand word's width).
pub(crate) const MAX_WORKERS: usize = 64;

impl Pool {
    pub(crate) fn new(n: usize, host: Box<dyn Host>, spin: Duration) -> Self {
        let n = n.clamp(1, MAX_WORKERS);
        Self {
            workers: (0..n)
                .map(|_| CachePadded::new(WorkerShared::default()))
                .collect(),
            hungry: CachePadded::new(AtomicU64::new(0)),
            host,
            spin,
            max_sequential: 0,
        }
    }

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

    pub(crate) fn len(&self) -> usize {
        self.workers.len()
    }

    pub(crate) fn worker(&self, i: usize) -> &WorkerShared {
        &self.workers[i]
    }

    pub(crate) fn stats(&self) -> StealStats {
        let mut s = StealStats::default();
        for w in self.workers.iter() {
            let c = &w.counters;
            s.promotions += c.promotions.load(Ordering::Relaxed);
            s.handbacks += c.handbacks.load(Ordering::Relaxed);
            s.reclaims += c.reclaims.load(Ordering::Relaxed);
            s.steered += c.steered.load(std::sync::atomic::Ordering::Relaxed);
        }
        s
    }

    /// Wakes worker `i` wherever it sleeps: in `wait_stolen` (its event count)
    /// or in its scheduler's idle loop (the host's doorbell).
    fn wake(&self, i: usize) {
        self.workers[i].ec.notify_one();
        self.host.notify(i);
    }

    /// True if a job waits in worker `i`'s mailbox.
    pub(crate) fn has_job(&self, i: usize) -> bool {
        self.workers[i].mailbox.load(Ordering::Relaxed) > HUNGRY
    }

    /// Takes the job in worker `me`'s mailbox, if any.
    pub(crate) fn take_job(&self, me: usize) -> Option<NonNull<JobHeader>> {
        let mb = &self.workers[me].mailbox;
        // Acquire; pairs with the Release CAS in `serve` (the frame's contents).
        let m = mb.load(Ordering::Acquire);
        if m <= HUNGRY {
            return None;
        }
        // Acquire, as above. Fails only if the owner took the job back.
        if mb
            .compare_exchange(m, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            NonNull::new(m as *mut JobHeader)
        } else {
            None
        }
    }

    /// Announces that worker `me` wants work (no-op if it already does, or if a
    /// job is already waiting for it).
    pub(crate) fn register(&self, me: usize) {
        let w = &self.workers[me];
        let since = &w.steer.hungry_since;
        // Only this worker moves its mailbox away from EMPTY.
        match w.mailbox.load(Ordering::Relaxed) {
            EMPTY => {
                since.store(now_ns(), std::sync::atomic::Ordering::Relaxed);
                w.mailbox.store(HUNGRY, Ordering::Relaxed);
                // Release; pairs with the Acquire `fetch_and` in `serve`: a
                // victim that claims the bit sees HUNGRY in the mailbox.
                self.hungry.fetch_or(1 << me, Ordering::Release);
            }
            // Marked hungry by `mark_hungry` (which reads no clock): the
            // wait starts now, as far as steering is concerned.
            HUNGRY if since.load(std::sync::atomic::Ordering::Relaxed) == 0 => {
                since.store(now_ns(), std::sync::atomic::Ordering::Relaxed);
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
            mb.store(HUNGRY, Ordering::Relaxed);
        }
    }

    /// After [`mark_hungry`](Self::mark_hungry) and `DONE`: sets the demand
    /// bit, unless the owner has already handed this worker a job directly.
    pub(crate) fn publish_demand(&self, me: usize) {
        if self.workers[me].mailbox.load(Ordering::Relaxed) == HUNGRY {
            // Release; pairs with the Acquire `fetch_and` in `serve`.
            self.hungry.fetch_or(1 << me, Ordering::Release);
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
        if mb.load(Ordering::Relaxed) == HUNGRY
            && mb
                .compare_exchange(HUNGRY, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // As in `withdraw`: a victim that claimed the bit already fails
            // its CAS (the mailbox is EMPTY) and puts its frame back.
            self.hungry.fetch_and(!(1u64 << me), Ordering::Relaxed);
        }
    }

    /// Withdraws worker `me`'s demand; returns a job that arrived meanwhile
    /// (the caller must run it).
    pub(crate) fn withdraw(&self, me: usize) -> Option<NonNull<JobHeader>> {
        let mb = &self.workers[me].mailbox;
        loop {
            match mb.load(Ordering::Acquire) {
                EMPTY => return None,
                HUNGRY => {
                    if mb
                        .compare_exchange(HUNGRY, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        // Clear the hint too, so that victims do not claim
                        // and fail on it (a victim that claimed it already
                        // fails its CAS, as the mailbox is EMPTY).
                        self.hungry.fetch_and(!(1u64 << me), Ordering::Relaxed);
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

    /// At a tick (or a recorded join) of worker `me`, whose chain starts at
    /// `start`: hand the oldest latent frames to hungry workers, one each:
    /// first to those that `handback` names (they returned a piece of ours
    /// and marked themselves HUNGRY before their `DONE`, which we saw; no
    /// demand bit is claimed for them), then to those whose demand bit is set.
    ///
    /// A handback thief's demand bit may be set too, or be set after we
    /// served it (`publish_demand` races with us): a victim that claims such
    /// a stale bit fails its CAS (the mailbox holds a job or is EMPTY) and
    /// puts its frame back, as for a thief that withdrew.
    pub(crate) fn serve(&self, start: *const JobHeader, me: usize, handback: u64) {
        let mut direct = handback & !(1u64 << me);
        let mut served = 0u64;
        while direct != 0 {
            let Some(job) = raw::oldest_latent(start) else {
                return;
            };
            let t = direct.trailing_zeros() as usize;
            direct &= !(1u64 << t);
            if t < self.workers.len() && self.hand_over(job, me, t, false) {
                served |= 1u64 << t;
                Counters::bump(&self.workers[me].counters.handbacks);
            }
        }
        // A thief just served directly may have set its bit meanwhile:
        // claiming that would only fail.
        let mut hint = self.hungry.load(Ordering::Relaxed) & !(1u64 << me) & !served;
        while hint != 0 {
            // Claim a thief only with a frame in hand: a claimed demand bit
            // that is not served would leave the thief unseen by everyone.
            let Some(job) = raw::oldest_latent(start) else {
                return;
            };
            let t = hint.trailing_zeros() as usize;
            let bit = 1u64 << t;
            hint &= !bit;
            // Acquire; pairs with the Release `fetch_or` in `register`.
            if self.hungry.fetch_and(!bit, Ordering::Acquire) & bit == 0 {
                continue; // another victim claimed this thief
            }
            self.hand_over(job, me, t, true);
        }
    }

    /// Promotes `job` (worker `me`'s oldest latent frame) to thief `t` and
    /// puts it in `t`'s mailbox if `t` is still HUNGRY; then steers `t` (if
    /// `steer`) and wakes it. Returns false if `t` was no longer HUNGRY (it
    /// withdrew, or another victim served it): the frame was never seen and
    /// is put back.
    fn hand_over(&self, job: NonNull<JobHeader>, me: usize, t: usize, steer: bool) -> bool {
        raw::promote(job, me, t);
        // Release; pairs with the Acquire load/CAS in `take_job`: the thief
        // sees `b` and `owner` as written by this thread. The CAS is this
        // thread's first touch of the thief's mailbox line: a load first
        // would fetch the line shared and the CAS then fetch it again,
        // exclusive, before the thief can see its job.
        let ok = self.workers[t]
            .mailbox
            .compare_exchange(
                HUNGRY,
                job.as_ptr() as usize,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok();
        if ok {
            // Before the wake-up: a sleeping thief cannot have started the
            // job yet, and wakes where it is steered. (A thief served by
            // handback marked itself hungry just now: awake, not steered.)
            if steer {
                self.steer(t, me);
            }
            Counters::bump(&self.workers[me].counters.promotions);
            self.wake(t);
        } else {
            raw::unpromote(job);
        }
        ok
    }

    /// Right after handing a job to thief `t` (worker `me`'s promotion),
    /// before waking it: if `t` has asked for work long enough to be asleep,
    /// keep it off the calling thread's CPU.
    ///
    /// Why: Linux wakes a sleeping thread on the waker's CPU when it judges
    /// the two to share data (wake-affine), and the thief then queues behind
    /// its own victim while the other CPU idles until the next load balance
    /// (milliseconds: longer than a whole fib(30)). Measured with the wq
    /// probe, fib(30) on 2 unpinned cores after 5 ms of idleness: T2 = 1.76x
    /// the sequential time, the same as T1; pinned, 0.8x. The thief restores
    /// its full CPU set when it starts the job.
    #[cfg(not(loom))]
    fn steer(&self, t: usize, me: usize) {
        use std::sync::atomic::Ordering::Relaxed;
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
        // nobody else would undo it (the thief stayed narrowed to one CPU
        // until its next steering; the runtime tests saw a core left
        // narrowed for 10 s once in 15 runs): undo it here.
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
        let c = &self.workers[me].counters.steered;
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
    #[cfg(loom)]
    fn steer(&self, _t: usize, _me: usize) {}

    /// Gives worker `t` its full CPU set back (called by `t` itself, once it
    /// runs).
    fn unsteer(&self, t: usize) {
        let st = &self.workers[t].steer;
        if st
            .narrowed
            .swap(UNNARROWED, std::sync::atomic::Ordering::Relaxed)
            != UNNARROWED
        {
            let _ = set_full_affinity(st.tid.load(std::sync::atomic::Ordering::Relaxed));
        }
    }

    /// A worker about to run a job: if a victim steered it, its full CPU set
    /// back (it runs where it was steered to; this only lets it move later).
    #[inline]
    fn unsteer_self(&self, local: &Local) {
        if let Some((_, me)) = local.pool() {
            let st = &self.workers[me].steer;
            if st.hungry_since.load(std::sync::atomic::Ordering::Relaxed) != 0 {
                st.hungry_since
                    .store(0, std::sync::atomic::Ordering::Relaxed);
            }
            if st.narrowed.load(std::sync::atomic::Ordering::Relaxed) != UNNARROWED {
                self.unsteer(me);
            }
        }
    }

    /// The idle hook of worker `me`: run a job handed to it, or announce demand.
    /// Returns true if it ran a job.
    pub(crate) fn on_idle(this: &Arc<Self>, me: usize) -> bool {
        bind(this, me);
        let this: &Self = this;
        raw::with_local(|local| {
            if let Some(job) = this.take_job(me) {
                local.last_poll.set(0);
                this.run_job(job, local);
                true
            } else {
                this.register(me);
                // Steered for a job that was taken back: running now, it
                // may have its full CPU set again (this does not move it).
                if this.workers[me]
                    .steer
                    .narrowed
                    .load(std::sync::atomic::Ordering::Relaxed)
                    != UNNARROWED
                {
                    this.unsteer(me);
                }
                false
            }
        })
    }

    pub(crate) fn run_job(&self, job: NonNull<JobHeader>, local: &Local) {
        self.unsteer_self(local);
        // A piece just stolen is not handed on before this worker's next tick.
        local.eager.set(false);
        // The piece is a tree of its own: its top levels are recorded.
        let depth = local.depth.replace(0);
        // SAFETY: `job` came out of this worker's mailbox by `take_job`'s
        // Acquire CAS, and this thread is worker `me` of this pool.
        let owner = unsafe { raw::run_stolen(job, local) };
        local.depth.set(depth);
        if let Some((_, me)) = local.pool() {
            self.publish_demand(me);
        }
        // The owner sleeps, if at all, on its event count (in `wait_stolen`).
        self.workers[owner].ec.notify_one();
    }
}

/// The pool this thread is a worker of, and its index. Every change is
/// mirrored into `Local::pool` (invariant B of `raw.rs`), which is cleared
/// again when the thread-local is destroyed.
struct Binding(RefCell<Option<(Arc<Pool>, usize)>>);

impl Binding {
    fn set(&self, b: Option<(Arc<Pool>, usize)>) -> Option<(Arc<Pool>, usize)> {
        let (p, me) = b
            .as_ref()
            .map_or((std::ptr::null(), 0), |(p, i)| (Arc::as_ptr(p), *i));
        raw::set_pool(p, me);
        self.0.replace(b)
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        raw::set_pool(std::ptr::null(), 0);
    }
}

#[cfg(not(loom))]
thread_local! {
    static BOUND: Binding = const { Binding(RefCell::new(None)) };
}
#[cfg(loom)]
loom::thread_local! {
    static BOUND: Binding = Binding(RefCell::new(None));
}

/// Makes the calling thread worker `me` of `pool` (no-op if it already is).
pub(crate) fn bind(pool: &Arc<Pool>, me: usize) {
    BOUND.with(|b| {
        if !matches!(&*b.0.borrow(), Some((p, i)) if Arc::ptr_eq(p, pool) && *i == me) {
            if me < pool.len() {
                pool.workers[me]
                    .steer
                    .tid
                    .store(steerable_tid(), std::sync::atomic::Ordering::Relaxed);
            }
            b.set(Some((pool.clone(), me)));
        }
    });
}

/// How long a worker must have been asking for work before a victim steers
/// it (see [`Pool::steer`]): a thief that asked more recently is still
/// spinning, on a CPU of its own.
#[cfg(not(loom))]
const STEER_AFTER_NS: u64 = 20_000;

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

/// Undoes [`bind`], returning the previous binding.
pub(crate) fn unbind() -> Option<(Arc<Pool>, usize)> {
    BOUND.with(|b| b.set(None))
}

/// Restores a binding returned by [`unbind`].
pub(crate) fn rebind(prev: Option<(Arc<Pool>, usize)>) {
    BOUND.with(|b| drop(b.set(prev)));
}

fn with_bound<R>(f: impl FnOnce(Option<(&Arc<Pool>, usize)>) -> R) -> R {
    BOUND.with(|b| {
        let b = b.0.borrow();
        f(b.as_ref().map(|(p, i)| (p, *i)))
    })
}

/// The pool and index of the calling thread, if it is a worker.
pub(crate) fn current() -> Option<(Arc<Pool>, usize)> {
    with_bound(|b| b.map(|(p, i)| (p.clone(), i)))
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

static GAP_STATS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static MAX_GAP_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Starts (or restarts) measuring the longest gap between two polls of a
/// worker inside a join tree; [`max_poll_gap`] reads it.
pub fn measure_poll_gaps(on: bool) {
    MAX_GAP_NS.store(0, std::sync::atomic::Ordering::Relaxed);
    GAP_STATS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The longest gap between two heartbeat polls seen since
/// [`measure_poll_gaps`]`(true)`.
pub fn max_poll_gap() -> Duration {
    Duration::from_nanos(MAX_GAP_NS.load(std::sync::atomic::Ordering::Relaxed))
}

/// A join of a worker whose chain starts at `local.head`: if some worker is
/// hungry, serve it now (one Relaxed load when nobody is).
#[inline(always)]
pub(crate) fn serve_if_hungry(local: &Local) {
    if !local.eager.get() {
        return;
    }
    if let Some((p, me)) = local.pool() {
        if local.handback.get() != 0 || p.hungry.load(Ordering::Relaxed) & !(1u64 << me) != 0 {
            serve_now(p, local, me);
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

#[cold]
#[inline(never)]
fn serve_now(p: &Pool, local: &Local, me: usize) {
    local.eager.set(false);
    p.serve(local.head.get(), me, local.handback.replace(0));
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
        p.serve(local.head.get(), me, local.handback.replace(0));
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
    let gaps = GAP_STATS.load(std::sync::atomic::Ordering::Relaxed);
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
        MAX_GAP_NS.fetch_max(now - last, std::sync::atomic::Ordering::Relaxed);
    }
    poll_host(p, local);
}

/// Runs the host's pending messages; a join tree among them starts at the
/// top (its first levels are recorded), not at the depth of the join that
/// polls.
fn poll_host(p: &Pool, local: &Local) {
    let depth = local.depth.replace(0);
    p.host.poll_once();
    local.depth.set(depth);
}

/// The owner's side of a promoted frame handed to worker `thief`: take it
/// back if the thief has not started it (returns false: run `b` inline), or
/// wait for the thief's `DONE` while running other work (returns true: the
/// result is in the frame).
pub(crate) fn wait_stolen(local: &Local, job: &JobHeader, thief: usize) -> bool {
    let (pool, me) = local
        .pool()
        .expect("a promoted frame implies a bound worker");
    let addr = job as *const JobHeader as usize;
    // Relaxed: on success the thief never read the frame. Not tried once the
    // thief has marked the frame STARTED: the CAS would fail, and take the
    // thief's mailbox line away from it just before it marks itself hungry.
    if !raw::is_started(job)
        && !raw::is_done(job)
        && pool.workers[thief]
            .mailbox
            .compare_exchange(addr, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        Counters::bump(&pool.workers[me].counters.reclaims);
        // If the thief was steered, it stays so until it runs again (its
        // idle loop or its next job gives it its full set back). Restored
        // here, while it is still waking up, it could be woken onto this
        // CPU, behind us, and not run for milliseconds: knary(4,10,0) after
        // 20 ms idle (wq probe) then took T1's time in 3 runs of 12.
        local
            .backoff
            .set((local.backoff.get() * 2).min(MAX_BACKOFF));
        return false;
    }
    // First wait a little without asking for work: a piece stolen from a
    // small tree is about to come back, and helping with what is left of it
    // would cost both workers more (claiming, handing over, withdrawing)
    // than it saves.
    #[cfg(not(loom))]
    {
        let mut quiet = SpinBudget::new(QUIET_WAIT);
        while !raw::is_done(job) && quiet.spin() {}
    }
    let ec = &pool.workers[me].ec;
    let mut spin = SpinBudget::new(if cfg!(loom) {
        Duration::ZERO
    } else {
        pool.spin
    });
    loop {
        if raw::is_done(job) {
            break;
        }
        // Help: run what a victim (usually the thief itself) hands us.
        if let Some(j) = pool.take_job(me) {
            pool.run_job(j, local);
            spin.reset();
            continue;
        }
        pool.register(me);
        if spin.spin() {
            continue;
        }
        poll_host(pool, local);
        let key = ec.prepare_wait();
        if raw::is_done(job) || pool.has_job(me) {
            ec.cancel_wait();
            continue;
        }
        #[cfg(loom)]
        ec.wait(key);
        #[cfg(not(loom))]
        {
            // Bounded so that messages are still polled while we wait.
            let _ = ec.wait_timeout(key, Duration::from_millis(1));
        }
        spin.reset();
    }
    if let Some(j) = pool.withdraw(me) {
        pool.run_job(j, local);
    }
    local.backoff.set(1);
    true
}
