//! Unit tests of the protocol pieces on one thread: the claim word's
//! verdicts and the turnstile's states (the races are in `loom_tests.rs`).

use crate::claims::{Claim, Claims, MAX_INPUTS};
use crate::turnstile::Turnstile;

#[test]
fn claims_tell_filled_from_fired() {
    let c = Claims::new(3);
    assert_eq!(c.claim(1), Claim::Won);
    assert_eq!(c.claim(1), Claim::Filled);
    assert_eq!(c.claim(0), Claim::Won);
    assert!(!c.is_complete());
    assert_eq!(c.claim(2), Claim::Won);
    assert!(c.is_complete());
    for slot in 0..3 {
        assert_eq!(c.claim(slot), Claim::Fired);
    }
}

#[test]
fn claims_at_the_width_limit() {
    let c = Claims::new(MAX_INPUTS);
    for slot in 0..MAX_INPUTS {
        assert!(!c.is_complete());
        assert_eq!(c.claim(slot), Claim::Won);
    }
    assert!(c.is_complete());
    assert_eq!(c.claim(MAX_INPUTS - 1), Claim::Fired);
    let started = Claims::filled(2);
    assert!(started.is_complete());
    assert_eq!(started.claim(0), Claim::Fired);
    assert!(Claims::filled(0).is_complete());
}

#[test]
fn turnstile_states() {
    let t = Turnstile::<u32>::new();
    assert!(!t.is_held());
    assert!(t.try_acquire());
    assert!(!t.try_acquire());
    assert_eq!(t.release(), None);
    assert_eq!(t.acquire_or_enqueue(7), Some(7));
    for w in 1..=5 {
        assert_eq!(t.acquire_or_enqueue(w), None);
        assert_eq!(t.queued(), w as usize);
    }
    assert!(!t.try_acquire(), "no barging past the queue");
    for w in 1..=5 {
        assert_eq!(t.release(), Some(w));
        assert!(t.is_held());
        assert_eq!(t.queued(), 5 - w as usize);
    }
    assert_eq!(t.release(), None);
    assert!(!t.is_held());
    assert!(t.try_acquire());
}
