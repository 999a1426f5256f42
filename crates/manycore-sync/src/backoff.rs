//! Bounded spinning: [`Backoff`] (exponential, then yielding; the crossbeam-utils
//! scheme) and [`SpinBudget`] (spin for a wall-clock budget, then give up).
//! Every spin in manycore is bounded: on a virtual machine with fewer real
//! CPUs than threads, the partner a spinner waits for may not be running, and
//! only sleeping lets it run.

use crate::atomic::spin_loop;
use std::time::{Duration, Instant};

const SPIN_LIMIT: u32 = 6;
const YIELD_LIMIT: u32 = 10;

/// Exponential backoff with a bound: `spin` doubles its pause up to 2^6 hints,
/// `snooze` then yields the CPU, and `is_completed` says it is time to block.
#[derive(Debug, Default)]
pub struct Backoff {
    step: u32,
}

impl Backoff {
    /// A fresh backoff.
    pub const fn new() -> Self {
        Self { step: 0 }
    }
    /// Starts over.
    pub fn reset(&mut self) {
        self.step = 0;
    }
    /// Spins for a short, growing, bounded while (for lock-free retry loops).
    pub fn spin(&mut self) {
        for _ in 0..1u32 << self.step.min(SPIN_LIMIT) {
            spin_loop();
        }
        if self.step <= SPIN_LIMIT {
            self.step += 1;
        }
    }
    /// Spins, and past the spin limit yields the thread (for waiting on another thread).
    pub fn snooze(&mut self) {
        if self.step <= SPIN_LIMIT {
            for _ in 0..1u32 << self.step {
                spin_loop();
            }
        } else {
            crate::thread::yield_now();
        }
        if self.step <= YIELD_LIMIT {
            self.step += 1;
        }
    }
    /// True once spinning and yielding have been tried long enough: block now.
    pub fn is_completed(&self) -> bool {
        self.step > YIELD_LIMIT
    }
}

/// A wall-clock spin budget. Reads the clock only every 64 calls, so a check
/// costs a few nanoseconds; the budget runs from the 64th call on, and from
/// then on every call also issues a spin-loop hint (`pause`).
#[derive(Debug)]
pub struct SpinBudget {
    budget: Duration,
    start: Option<Instant>,
    calls: u32,
}

impl SpinBudget {
    /// A budget of `budget`; the clock starts at the 64th [`SpinBudget::spin`].
    pub const fn new(budget: Duration) -> Self {
        Self {
            budget,
            start: None,
            calls: 0,
        }
    }
    /// Starts over.
    pub fn reset(&mut self) {
        self.start = None;
        self.calls = 0;
    }
    /// Spins once; returns false once the budget is spent (the caller should
    /// then sleep). A zero budget is spent at once.
    #[inline]
    pub fn spin(&mut self) -> bool {
        if self.budget.is_zero() {
            return false;
        }
        self.calls = self.calls.wrapping_add(1);
        // The clock starts at the 64th call, not the first: a wait that ends
        // within a few spins (the common case of a fast round trip) never
        // pays for a clock read (tens of ns on a VM).
        if self.calls & 63 == 0 {
            let now = Instant::now();
            match self.start {
                None => self.start = Some(now),
                Some(s) if now.duration_since(s) >= self.budget => return false,
                Some(_) => {}
            }
        }
        // The first 64 spins go without a pause instruction (tens of ns on
        // some CPUs): a partner that answers within a few hundred ns is seen
        // at once. After that, spin politely.
        if self.start.is_some() {
            spin_loop();
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    #[test]
    fn backoff_completes() {
        let mut b = Backoff::new();
        let mut n = 0;
        while !b.is_completed() {
            b.snooze();
            n += 1;
            assert!(n < 100, "backoff must be bounded");
        }
        b.reset();
        assert!(!b.is_completed());
    }
    #[test]
    fn spin_budget_runs_out() {
        let mut s = SpinBudget::new(Duration::from_millis(2));
        let t = Instant::now();
        while s.spin() {}
        assert!(t.elapsed() >= Duration::from_millis(2));
        let mut z = SpinBudget::new(Duration::ZERO);
        assert!(!z.spin());
    }
}
