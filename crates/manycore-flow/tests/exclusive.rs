//! Exclusive templates under both policies: at most one instance runs at a
//! time; the queue hands the gate to exactly one waiter per release, in
//! FIFO order; self-continuations are counted. No test depends on timing:
//! contention is made certain by holding the gate from the test.

mod common;
use common::{eventually, runtime};
use manycore_flow::{Exclusion, Gate, GateHold, Template, User};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Runs 200 instances of an exclusive template on two cores; the body
/// counts how many bodies are inside at once.
fn at_most_one_runs(policy: Exclusion) {
    let rt = runtime(2);
    let gate = Gate::new(policy);
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let (i2, m2) = (inside.clone(), most.clone());
    let critical = Template::<u32, User>::exclusive(1, &gate, move |_ctx, x| {
        let now = i2.fetch_add(1, Ordering::SeqCst) + 1;
        m2.fetch_max(now, Ordering::SeqCst);
        // Some work inside, so that overlaps would have room to happen.
        let mut acc = 0u64;
        for k in 0..2000u64 {
            acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(k));
        }
        i2.fetch_sub(1, Ordering::SeqCst);
        tx.send((x[0], acc)).unwrap();
    });
    for i in 0..200u32 {
        critical.start(rt.core(i as usize % 2), vec![i]).unwrap();
    }
    let mut ids: Vec<u32> = (0..200).map(|_| rx.recv_timeout(WAIT).unwrap().0).collect();
    ids.sort();
    assert_eq!(ids, (0..200).collect::<Vec<_>>());
    assert_eq!(most.load(Ordering::SeqCst), 1, "{policy:?}");
    assert_eq!(gate.stats().runs, 200);
    // The last body has sent its value; its gate is released as it returns.
    eventually("the last release", || !gate.is_held());
    if policy == Exclusion::Queue {
        assert_eq!(gate.stats().self_continuations, 0);
    } else {
        assert_eq!(gate.stats().queued, 0);
    }
}

#[test]
fn at_most_one_runs_with_self_continuation() {
    at_most_one_runs(Exclusion::SelfContinuation);
}

#[test]
fn at_most_one_runs_with_the_queue() {
    at_most_one_runs(Exclusion::Queue);
}

/// A template whose bodies take the gate along and hand it to the test.
fn holding(gate: &Gate) -> (Template<usize, User>, mpsc::Receiver<(usize, GateHold)>) {
    let (tx, rx) = mpsc::channel();
    let t = Template::<usize, User>::exclusive(1, gate, move |ctx, x| {
        let hold = ctx.hold_gate().expect("an exclusive body holds its gate");
        // Only once: the gate is the hold's now.
        assert!(ctx.hold_gate().is_none());
        tx.send((x[0], hold)).unwrap();
    });
    (t, rx)
}

#[test]
fn the_queue_hands_over_to_exactly_one_waiter_in_fifo_order() {
    let rt = runtime(2);
    let gate = Gate::new(Exclusion::Queue);
    let (t, held) = holding(&gate);
    t.start(rt.core(0), vec![0]).unwrap();
    let (first, mut hold) = held.recv_timeout(WAIT).unwrap();
    assert_eq!(first, 0);
    assert!(gate.is_held());
    // Waiters on alternating cores, each queued before the next starts, so
    // that the queue's order is known.
    const N: usize = 8;
    for i in 1..=N {
        t.start(rt.core(i % 2), vec![i]).unwrap();
        eventually("the waiter to queue", || gate.waiting() == i);
    }
    assert!(held.try_recv().is_err(), "ran while the gate was held");
    for next in 1..=N {
        drop(hold); // release: hands the gate to the first waiter only
        let (i, h) = held.recv_timeout(WAIT).unwrap();
        assert_eq!(i, next, "FIFO");
        assert_eq!(
            gate.waiting(),
            N - next,
            "exactly one waiter left the queue"
        );
        assert!(held.try_recv().is_err(), "a second waiter ran");
        assert!(gate.is_held());
        hold = h;
    }
    hold.release();
    assert!(!gate.is_held());
    let s = gate.stats();
    assert_eq!(
        (s.runs, s.queued, s.handoffs),
        (N as u64 + 1, N as u64, N as u64)
    );
    assert_eq!(s.self_continuations, 0);
}

#[test]
fn self_continuation_retries_until_released_and_is_counted() {
    let rt = runtime(2);
    let gate = Gate::new(Exclusion::SelfContinuation);
    let (t, held) = holding(&gate);
    t.start(rt.core(0), vec![0]).unwrap();
    let (_, mut hold) = held.recv_timeout(WAIT).unwrap();
    const N: usize = 4;
    for i in 1..=N {
        t.start(rt.core(i % 2), vec![i]).unwrap();
    }
    // Each loser retries through its core's queue while the gate is held.
    eventually("a self-continuation", || {
        gate.stats().self_continuations > 0
    });
    assert!(held.try_recv().is_err(), "ran while the gate was held");
    assert_eq!(gate.waiting(), 0);
    let mut ran = vec![0];
    for _ in 1..=N {
        drop(hold);
        let (i, h) = held.recv_timeout(WAIT).unwrap();
        assert!(gate.is_held());
        ran.push(i);
        hold = h;
    }
    drop(hold);
    ran.sort();
    assert_eq!(ran, (0..=N).collect::<Vec<_>>());
    assert!(held.try_recv().is_err());
    assert!(!gate.is_held());
    assert_eq!(gate.stats().runs, N as u64 + 1);
}

#[test]
fn a_gate_shared_by_two_templates_excludes_both() {
    let rt = runtime(2);
    let gate = Gate::new(Exclusion::Queue);
    let (a, held) = holding(&gate);
    let (tx, ran) = mpsc::channel();
    let b = Template::<u8, User>::exclusive(1, &gate, move |_ctx, x| tx.send(x[0]).unwrap());
    a.start(rt.core(0), vec![0]).unwrap();
    let (_, hold) = held.recv_timeout(WAIT).unwrap();
    b.start(rt.core(1), vec![7]).unwrap();
    eventually("b to queue", || gate.waiting() == 1);
    assert!(ran.try_recv().is_err());
    drop(hold);
    assert_eq!(ran.recv_timeout(WAIT), Ok(7));
}

#[test]
fn a_hold_released_on_another_core_hands_over() {
    // The paper's device semaphore: the body takes the gate along, a later
    // thread on the other core releases it.
    let rt = runtime(2);
    let gate = Gate::new(Exclusion::Queue);
    let (tx, rx) = mpsc::channel();
    let later = Template::<GateHoldBox, User>::new(1, |_ctx, holds| {
        for h in holds {
            h.0.release();
        }
    });
    let (later2, tx2) = (later.clone(), tx);
    let c1 = rt.core(1).clone();
    let device = Template::<u32, User>::exclusive(1, &gate, move |ctx, x| {
        tx2.send(x[0]).unwrap();
        let hold = ctx.hold_gate().unwrap();
        later2.start(&c1, vec![GateHoldBox(hold)]).unwrap();
    });
    for i in 0..20 {
        device.start(rt.core(0), vec![i]).unwrap();
    }
    let mut got: Vec<u32> = (0..20).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
    got.sort();
    assert_eq!(got, (0..20).collect::<Vec<_>>());
    eventually("the last release", || !gate.is_held());
    assert_eq!(gate.stats().runs, 20);
}

/// A hold travels as the value of a slot.
struct GateHoldBox(GateHold);
