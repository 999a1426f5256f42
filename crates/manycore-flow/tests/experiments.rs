//! The experiment functions run and return consistent numbers (tiny runs;
//! nothing here asserts on time or speed).
#![cfg(feature = "internals")]

use manycore_flow::experiments::{
    backends, fig5, fig7_11, livelock, reactor_round_trip, reactor_stream, Design,
};
use manycore_flow::Exclusion;
use std::time::Duration;

#[test]
fn fig5_counts_in_its_period() {
    let p = fig5(2, 2, Duration::from_micros(2), Duration::from_millis(5)).unwrap();
    assert_eq!((p.devices, p.cores), (2, 2));
    assert_eq!(p.period, Duration::from_millis(5));
}

#[test]
fn fig7_11_completes_every_call_under_both_policies() {
    for policy in [Exclusion::SelfContinuation, Exclusion::Queue] {
        let p = fig7_11(policy, 10, Duration::from_micros(1), 1, 2).unwrap();
        assert_eq!((p.policy, p.calls), (policy, 10));
        if policy == Exclusion::Queue {
            assert_eq!(p.self_continuations, 0);
        } else {
            assert_eq!(p.queued, 0);
        }
    }
}

#[test]
fn livelock_accounts_for_every_event() {
    for design in [Design::Flow, Design::ThreadPerEvent] {
        let p = livelock(
            design,
            20_000,
            Duration::from_micros(5),
            Duration::from_millis(20),
            2,
        )
        .unwrap();
        assert_eq!(p.design, design);
        assert!(p.accepted <= p.offered, "{p:?}");
        assert!(p.completed + p.rejected <= p.accepted, "{p:?}");
    }
}

#[test]
fn reactor_probes_run_on_every_backend() {
    for b in backends() {
        let r = reactor_round_trip(b, 20).unwrap();
        assert_eq!((r.backend, r.rounds), (b, 20));
        let s = reactor_stream(b, 2, Duration::from_millis(5)).unwrap();
        assert_eq!((s.backend, s.devices), (b, 2));
        assert!(s.bytes <= s.completions * manycore_flow::experiments::STREAM_READ as u64);
    }
}
