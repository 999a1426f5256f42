//! `livelock` takes every period, `Duration::ZERO` and `Duration::MAX`
//! included (a period the clock cannot hold runs for a century instead of
//! panicking). One test in this binary, so that the threads it counts are
//! its own.
#![cfg(feature = "internals")]

use manycore_flow::experiments::{livelock, Design};
use std::time::{Duration, Instant};

/// Threads of this process now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[test]
fn zero_and_max_periods() {
    // ZERO: nothing is offered, and the run ends.
    for design in [Design::Flow, Design::ThreadPerEvent] {
        let p = livelock(design, 10_000, Duration::from_micros(5), Duration::ZERO, 1).unwrap();
        assert_eq!((p.design, p.period), (design, Duration::ZERO));
        assert_eq!((p.offered, p.accepted, p.completed), (0, 0, 0), "{p:?}");
    }
    // MAX: the run goes on (it never ends; the process's exit ends it).
    // Its workers (a thread per event) appear only once the generator
    // offers events, that is past the computation of the deadline, which
    // used to panic. Waiting for them is bounded only against a broken
    // test.
    let base = threads();
    let run = std::thread::spawn(|| {
        livelock(
            Design::ThreadPerEvent,
            5_000,
            Duration::from_millis(1),
            Duration::MAX,
            1,
        )
    });
    // The run's thread, its dispatcher and at least one worker.
    let give_up = Instant::now() + Duration::from_secs(60);
    while threads() < base + 3 && !run.is_finished() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(
        !run.is_finished(),
        "{:?}",
        run.join().map_err(|_| "panicked")
    );
    assert!(threads() >= base + 2, "the run's threads are gone");
}
