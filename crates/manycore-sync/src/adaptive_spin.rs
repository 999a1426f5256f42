//! [`AdaptiveSpin`]: how long, and how, a thread that found nothing to do
//! waits before it sleeps, decided afresh for every wait from what the
//! waits before it saw and from how many threads are awake.
//!
//! # Why
//!
//! Spinning pays only while the partner runs. A spinner whose partner has
//! no CPU keeps it from getting one, and sleeping costs a futex round
//! trip (tens of microseconds on a virtual machine) that spinning saves
//! when the answer comes soon. So the choice has two inputs, as in the
//! anchors this follows:
//!
//! * **How soon work comes** (Linux's cpuidle "menu" governor predicts the
//!   next idle period; glibc's adaptive mutex tracks how long spins took).
//!   Each thread keeps a [`GapPredictor`]: a moving average of the length
//!   of its recent idle gaps, each measured from the moment a wait starts
//!   spinning on the clock to the moment work is found, whether it was
//!   found spinning or after a sleep. A wait spins for about twice the
//!   predicted gap, at most the policy's budget; when the predicted gap is
//!   longer than the budget, spinning would not pay, and the wait sleeps
//!   after the few free spins.
//! * **Whether the partner can run** (Linux adaptive mutexes spin only
//!   while the owner is on a CPU; Go's scheduler spins only when a P is
//!   idle). A process-wide count, [`Awake`], holds the threads of manycore
//!   that are awake: cores running or spinning, and outside threads
//!   that the runtime counts (while they spin in a wait, and in
//!   `manycore-rt` while they have calls in flight and are not parked).
//!   While it is larger than the process's CPUs
//!   ([`cpu::original`](crate::cpu::original)), a spinning thread yields
//!   its CPU at every turn instead of pausing in place: the partner, if it
//!   waits for this CPU, runs at once, and the wait still ends as soon as
//!   the answer is in. Two more rules hold while the count is larger:
//!   - a wait yields from its first turn, without the free spins: a core
//!     that has just answered a call would otherwise poll 64 times before
//!     its caller, waiting for the same CPU, gets it back;
//!   - a wait runs out only once its budget has passed *and* it has
//!     yielded as many times as there are awake threads per CPU (one
//!     turn of each): the budget is wall-clock time, and a thread that
//!     the scheduler left off its CPU for a while has not spun that long.
//!     Sleeping before every thread that shares the CPU had its turn
//!     would give up on a partner that never ran; after the turn, the
//!     budget decides as before.
//!
//! Any value of the count and the prediction is safe: they choose between
//! spinning, yielding and sleeping, never whether a wake-up is delivered
//! (the doorbell protocol does that). That is why the count is a plain
//! process-wide std atomic, outside the loom models.
//!
//! # Example
//!
//! ```
//! use manycore_sync::{AdaptiveSpin, GapPredictor};
//! use std::time::Duration;
//!
//! let pred = GapPredictor::new(Duration::from_micros(50));
//! let mut spin = AdaptiveSpin::new(Duration::from_micros(50), &pred);
//! let mut found = false;
//! while !found {
//!     found = true; // look for work here
//!     if found {
//!         spin.found(); // teaches the predictor the gap just seen
//!         break;
//!     }
//!     if !spin.spin() {
//!         // sleep here, then `spin.slept()`
//!     }
//! }
//! ```

use crate::atomic::spin_loop;
use crate::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Free spins before the clock starts (as [`SpinBudget`](crate::SpinBudget)).
const FREE_SPINS: u32 = 64;

/// The shortest budget a wait that expects work spins for.
const MIN_SPIN: Duration = Duration::from_micros(2);

/// Threads of manycore that are awake (see the module's docs).
static AWAKE: CachePadded<AtomicUsize> = CachePadded::new(AtomicUsize::new(0));

/// The process's CPUs, read once.
static CPUS: OnceLock<usize> = OnceLock::new();

/// The process-wide count of awake threads of manycore: cores that are
/// running or spinning and outside threads that are counted (while they
/// spin in a wait, or as their runtime says).
#[derive(Debug)]
pub struct Awake;

impl Awake {
    /// Counts the calling thread as awake until the guard is dropped.
    pub fn enter() -> AwakeGuard {
        AWAKE.fetch_add(1, Ordering::Relaxed);
        AwakeGuard(())
    }
    /// Counts the calling thread as asleep until the guard is dropped (a
    /// core about to block in the kernel).
    pub fn leave() -> AsleepGuard {
        AWAKE.fetch_sub(1, Ordering::Relaxed);
        AsleepGuard(())
    }
    /// Whether more threads are awake than the process has CPUs.
    #[inline]
    pub fn crowded() -> bool {
        AWAKE.load(Ordering::Relaxed) > cpus()
    }
    /// The current count (for diagnostics).
    pub fn count() -> usize {
        AWAKE.load(Ordering::Relaxed)
    }
}

/// Yields that give every awake thread sharing a CPU one turn: the awake
/// threads per CPU, rounded up.
fn rotation() -> usize {
    AWAKE.load(Ordering::Relaxed).div_ceil(cpus())
}

/// The process's CPU count, from its original CPU set.
fn cpus() -> usize {
    *CPUS.get_or_init(|| crate::cpu::original().len().max(1))
}

/// Keeps the calling thread counted as awake ([`Awake::enter`]).
#[derive(Debug)]
#[must_use = "the thread is counted only while the guard lives"]
pub struct AwakeGuard(());

impl Drop for AwakeGuard {
    fn drop(&mut self) {
        AWAKE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Keeps the calling thread counted as asleep ([`Awake::leave`]).
#[derive(Debug)]
#[must_use = "the thread is uncounted only while the guard lives"]
pub struct AsleepGuard(());

impl Drop for AsleepGuard {
    fn drop(&mut self) {
        AWAKE.fetch_add(1, Ordering::Relaxed);
    }
}

/// One thread's prediction of its next idle gap: a moving average (weight
/// 1/8) of its recent gaps, each capped at twice the budget it was seen
/// under, so that one long sleep does not outweigh many short waits.
#[derive(Debug)]
pub struct GapPredictor {
    ema_ns: Cell<u64>,
    /// Waits that were told not to spin since the last probe.
    unspun: Cell<u32>,
}

/// One wait in this many spins its whole budget even when the predicted
/// gap says it would not pay: a probe. Without it a prediction learnt
/// asleep could never come down (a gap measured asleep includes the
/// wake-up, tens of microseconds on a VM, which may alone exceed the
/// budget); with it, a wait that would have been served within the budget
/// is seen, and spinning comes back. A probe that fails costs one budget
/// per this many waits that were long anyway.
const PROBE_EVERY: u32 = 16;

impl GapPredictor {
    /// A predictor that starts by expecting gaps of half of `budget`
    /// (so the first waits spin, and learn).
    pub fn new(budget: Duration) -> Self {
        Self {
            ema_ns: Cell::new(saturating_ns(budget) / 2),
            unspun: Cell::new(0),
        }
    }
    /// The predicted gap.
    pub fn predicted(&self) -> Duration {
        Duration::from_nanos(self.ema_ns.get())
    }
    fn record(&self, gap: Duration, max: Duration) {
        let cap = saturating_ns(max).saturating_mul(2);
        let g = saturating_ns(gap).min(cap) as i128;
        let e = self.ema_ns.get() as i128;
        self.ema_ns.set((e + (g - e) / 8).max(0) as u64);
    }
    /// The spin budget of the next wait under a policy's `max`: about
    /// twice the predicted gap, at least [`MIN_SPIN`], at most `max`; zero
    /// when the predicted gap is longer than `max`, but for one wait in
    /// [`PROBE_EVERY`], which spins for `max`.
    fn budget(&self, max: Duration) -> Duration {
        if max == Duration::MAX {
            return max;
        }
        let p = self.predicted();
        if p > max {
            let n = self.unspun.get() + 1;
            if n >= PROBE_EVERY {
                self.unspun.set(0);
                max
            } else {
                self.unspun.set(n);
                Duration::ZERO
            }
        } else {
            (p.saturating_mul(2).saturating_add(MIN_SPIN)).min(max)
        }
    }
}

fn saturating_ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// One wait's spinning: a wall-clock budget chosen by a [`GapPredictor`]
/// (at most `max`; `Duration::MAX` spins until work comes, `ZERO` never
/// spins), pausing in place while [`Awake`] is within the CPUs and
/// yielding the CPU at every turn while it is not.
#[derive(Debug)]
pub struct AdaptiveSpin<'a> {
    pred: &'a GapPredictor,
    max: Duration,
    budget: Duration,
    /// When the clock started (the first spin past the free ones).
    clock: Option<Instant>,
    /// When this idle gap started, if it went past the free spins.
    gap: Option<Instant>,
    calls: u32,
    crowded: bool,
    /// Yields made since the clock started.
    yields: u32,
    /// Count this thread in [`Awake`] while it spins on the clock (an
    /// outside thread; a core counts itself for its whole life).
    count_self: bool,
    awake: Option<AwakeGuard>,
}

impl<'a> AdaptiveSpin<'a> {
    /// A wait under a policy's `max` budget, taught by `pred`.
    pub fn new(max: Duration, pred: &'a GapPredictor) -> Self {
        Self {
            pred,
            max,
            budget: pred.budget(max),
            clock: None,
            gap: None,
            calls: 0,
            crowded: false,
            yields: 0,
            count_self: false,
            awake: None,
        }
    }

    /// Like [`new`](Self::new), for a thread that is not otherwise counted
    /// in [`Awake`] (an outside thread waiting for a core): it counts
    /// itself from its first spin on the clock until the budget is spent,
    /// work is found, or the spin is dropped. A wait that ends within the
    /// free spins touches the shared count not at all.
    pub fn counted(max: Duration, pred: &'a GapPredictor) -> Self {
        Self {
            count_self: true,
            ..Self::new(max, pred)
        }
    }

    /// Work was found: if this gap went past the free spins, teach the
    /// predictor its length; start a new gap.
    #[inline]
    pub fn found(&mut self) {
        if let Some(g) = self.gap.take() {
            self.pred.record(g.elapsed(), self.max);
            self.budget = self.pred.budget(self.max);
        }
        self.clock = None;
        self.calls = 0;
        self.yields = 0;
        self.awake = None;
    }

    /// The wait slept and woke: the gap goes on (it ends with
    /// [`found`](Self::found)), the spin budget starts over.
    pub fn slept(&mut self) {
        self.clock = None;
        self.calls = 0;
        self.yields = 0;
    }

    /// Spins once; false once the budget is spent (sleep then). The first
    /// spins are free (no clock, no pause), unless the last look found
    /// more awake threads than CPUs; after them every call reads the
    /// count of awake threads now and then, and pauses or, while there are
    /// more awake threads than CPUs, yields. While crowded, the budget is
    /// spent only once it has passed and this wait has yielded one turn of
    /// every awake thread per CPU (see the module's docs).
    #[inline]
    pub fn spin(&mut self) -> bool {
        if self.max.is_zero() {
            return false;
        }
        self.calls = self.calls.wrapping_add(1);
        if self.calls < FREE_SPINS && !self.crowded {
            return true;
        }
        if self.crowded || self.calls & 63 == 0 {
            let now = Instant::now();
            match self.clock {
                None => {
                    self.clock = Some(now);
                    self.gap.get_or_insert(now);
                    if self.count_self {
                        self.awake = Some(Awake::enter());
                    }
                }
                Some(s)
                    if now.duration_since(s) >= self.budget
                        && (!self.crowded || self.yields as usize >= rotation()) =>
                {
                    self.awake = None;
                    return false;
                }
                Some(_) => {}
            }
            self.crowded = Awake::crowded();
        }
        if self.crowded {
            self.yields = self.yields.saturating_add(1);
            crate::thread::yield_now();
        } else {
            spin_loop();
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn long_gaps_stop_the_spinning_and_short_ones_bring_it_back() {
        let max = Duration::from_micros(50);
        let p = GapPredictor::new(max);
        assert!(p.budget(max) > Duration::ZERO);
        for _ in 0..64 {
            p.record(Duration::from_millis(5), max);
        }
        let budgets: Vec<Duration> = (0..PROBE_EVERY).map(|_| p.budget(max)).collect();
        assert_eq!(
            budgets.iter().filter(|b| b.is_zero()).count(),
            PROBE_EVERY as usize - 1,
            "long gaps: no spin but for one probe in {PROBE_EVERY}"
        );
        assert!(budgets.contains(&max));
        for _ in 0..64 {
            p.record(Duration::from_micros(1), max);
        }
        let b = p.budget(max);
        assert!(b >= MIN_SPIN && b < max, "{b:?}");
    }

    #[test]
    fn extreme_budgets() {
        let p = GapPredictor::new(Duration::MAX);
        p.record(Duration::MAX, Duration::MAX);
        assert_eq!(p.budget(Duration::MAX), Duration::MAX);
        let z = GapPredictor::new(Duration::ZERO);
        let mut s = AdaptiveSpin::new(Duration::ZERO, &z);
        assert!(!s.spin());
        s.found();
    }

    #[test]
    fn a_spin_runs_out_and_a_found_gap_is_learned() {
        let max = Duration::from_micros(200);
        let p = GapPredictor::new(max);
        let mut s = AdaptiveSpin::new(max, &p);
        let mut n = 0u64;
        while s.spin() {
            n += 1;
            assert!(n < 1 << 40);
        }
        let before = p.predicted();
        s.found();
        assert_ne!(
            p.predicted(),
            before,
            "a gap past the free spins is recorded"
        );
    }

    #[test]
    fn a_crowded_spin_gives_every_thread_a_turn_before_it_runs_out() {
        // Four awake threads per CPU (other tests may add more): a spin
        // whose budget is spent at once still yields four times first.
        let guards: Vec<AwakeGuard> = (0..cpus() * 4).map(|_| Awake::enter()).collect();
        let max = Duration::from_nanos(1);
        let p = GapPredictor::new(max);
        let mut s = AdaptiveSpin::new(max, &p);
        let mut n = 0u64;
        while s.spin() {
            n += 1;
            assert!(n < 1 << 30);
        }
        assert!(s.yields >= 4, "{} yields", s.yields);
        assert!(n < u64::from(FREE_SPINS) + 64 * u64::from(s.yields) + 64);
        drop(guards);
        s.found();
        assert_eq!(s.yields, 0);
    }

    proptest::proptest! {
        /// Whatever gaps it has seen, a predictor's budget is zero (or, for
        /// a probe, `max`) when the predicted gap is longer than the
        /// policy's budget, and otherwise between the least spin (or `max`,
        /// if smaller) and `max`.
        #[test]
        fn the_budget_stays_within_the_policy(
            max_us in 0u64..2_000,
            gaps in proptest::collection::vec(0u64..10_000_000, 0..64),
        ) {
            let max = Duration::from_micros(max_us);
            let p = GapPredictor::new(max);
            for g in gaps {
                p.record(Duration::from_nanos(g), max);
                let b = p.budget(max);
                proptest::prop_assert!(b <= max);
                proptest::prop_assert!(p.predicted() <= max.saturating_mul(2));
                if p.predicted() > max {
                    proptest::prop_assert!(b == Duration::ZERO || b == max, "a probe spins max");
                } else {
                    proptest::prop_assert!(b >= MIN_SPIN.min(max));
                }
            }
        }
    }
}
