//! Every `Duration` is a valid spin budget, `ZERO` and `MAX` included: a
//! zero budget never spins, a `MAX` one spins until the caller finds what
//! it waits for, and neither panics or overflows on the way (clock reads,
//! gap learning, counting in `Awake`). Bounded by loop counts, never by
//! time: `SPINS` calls take each spin well past its free spins and through
//! many clock reads.
#![cfg(not(loom))]

use manycore_sync::{AdaptiveSpin, Awake, GapPredictor, SpinBudget};
use std::time::Duration;

/// Spins per wait: past the 64 free spins and a few hundred clock reads.
const SPINS: u32 = 50_000;

#[test]
fn spin_budget_of_max_never_runs_out_and_zero_never_spins() {
    let mut s = SpinBudget::new(Duration::MAX);
    for _ in 0..SPINS {
        assert!(s.spin());
    }
    s.reset();
    for _ in 0..SPINS {
        assert!(s.spin());
    }
    let mut z = SpinBudget::new(Duration::ZERO);
    assert!(!z.spin());
    z.reset();
    assert!(!z.spin());
}

#[test]
fn adaptive_spin_of_max_never_runs_out_and_learns_its_gaps() {
    let p = GapPredictor::new(Duration::MAX);
    let mut s = AdaptiveSpin::new(Duration::MAX, &p);
    for _ in 0..SPINS {
        assert!(s.spin());
    }
    s.slept();
    for _ in 0..SPINS {
        assert!(s.spin());
    }
    // Learning the gap under a MAX budget does not overflow.
    s.found();
    for _ in 0..SPINS {
        assert!(s.spin());
    }
    s.found();
    // A predictor taught under MAX still serves a bounded wait, which
    // runs out (it predicts gaps too long to spin for).
    let mut b = AdaptiveSpin::new(Duration::from_micros(50), &p);
    let mut n = 0u64;
    while b.spin() {
        n += 1;
        assert!(n < 1 << 40, "a 50 µs budget never ran out");
    }
    // And ZERO never spins, whatever the predictor.
    let mut z = AdaptiveSpin::new(Duration::ZERO, &p);
    assert!(!z.spin());
    z.found();
}

/// The only test here that changes `Awake`, so the counts it reads are its
/// own (the others never count themselves).
#[test]
fn counted_spins_of_zero_and_max_count_and_uncount_themselves() {
    let p = GapPredictor::new(Duration::ZERO);
    let before = Awake::count();
    let mut z = AdaptiveSpin::counted(Duration::ZERO, &p);
    assert!(!z.spin());
    assert_eq!(Awake::count(), before, "a zero budget counted itself");
    z.found();
    drop(z);

    let p = GapPredictor::new(Duration::MAX);
    let mut m = AdaptiveSpin::counted(Duration::MAX, &p);
    for _ in 0..SPINS {
        assert!(m.spin());
    }
    assert_eq!(Awake::count(), before + 1, "a spin on the clock is awake");
    m.found();
    assert_eq!(Awake::count(), before, "found work: no longer counted");
    for _ in 0..SPINS {
        assert!(m.spin());
    }
    assert_eq!(Awake::count(), before + 1);
    drop(m);
    assert_eq!(Awake::count(), before, "a dropped spin is not counted");
}
