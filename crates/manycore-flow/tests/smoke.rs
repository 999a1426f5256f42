//! Public-API smoke tests: instances, continuation signals (local and
//! cross-core), firing, and every error a sender can see.

mod common;
use common::runtime;
use manycore_flow::{
    Exclusion, FlowError, Gate, Instance, Outcome, Outside, SignalErrorKind, Slot, Template, User,
    MAX_INPUTS,
};
use manycore_rt::current;
use std::sync::mpsc;
use std::time::Duration;

/// Every wait in these tests is bounded by this (it is never reached when
/// the code is right; the machines are slow and shared).
const WAIT: Duration = Duration::from_secs(30);

fn user() -> Outside<User> {
    Outside::new()
}

/// `n` values from `rx`, sorted (each wait bounded by `WAIT`).
fn recv_sorted<T: Ord>(rx: &mpsc::Receiver<T>, n: usize) -> Vec<T> {
    let mut got: Vec<T> = (0..n).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
    got.sort();
    got
}

/// Every one of `insts` has fired: a further signal is refused with
/// `Fired`.
fn assert_all_fired(insts: &[Instance<u32, User>]) {
    for inst in insts {
        let err = user().continue_to(inst, 0, 1).unwrap_err();
        assert_eq!(err.kind(), SignalErrorKind::Fired);
    }
}

#[test]
fn fires_when_every_slot_is_filled_with_values_in_slot_order() {
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    let inst = Instance::<u32, User>::new(rt.core(1), 3, move |ctx, xs| {
        let _ = ctx.signal(&result, xs.into_vec());
    })
    .unwrap();
    assert_eq!(inst.inputs(), 3);
    assert_eq!(inst.core().index(), 1);
    user().continue_to(&inst, 2, 30).unwrap();
    user().continue_to(&inst, 0, 10).unwrap();
    assert!(!inst.is_complete());
    assert!(out.try_get().is_none(), "fired with a slot missing");
    user().signal(&inst.slot(1), 20).unwrap();
    assert!(inst.is_complete());
    assert_eq!(out.wait_timeout(WAIT), Ok(vec![10, 20, 30]));
}

#[test]
fn an_instance_on_each_core_runs_on_its_core() {
    let rt = runtime(3);
    let (tx, rx) = mpsc::channel();
    let insts: Vec<_> = (0..rt.num_cores())
        .map(|i| {
            let tx = tx.clone();
            Instance::<usize, User>::new(rt.core(i), 1, move |ctx, xs| {
                let on = current().unwrap().index();
                tx.send((xs[0], on, ctx.core().index())).unwrap();
            })
            .unwrap()
        })
        .collect();
    for (i, inst) in insts.iter().enumerate() {
        user().continue_to(inst, 0, i).unwrap();
    }
    let got = recv_sorted(&rx, insts.len());
    assert_eq!(got, vec![(0, 0, 0), (1, 1, 1), (2, 2, 2)]);
}

#[test]
fn cross_core_and_local_signals_from_bodies() {
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    // On core 1: waits for one value from core 0 (cross-core) and one from
    // a body on core 1 itself (local).
    let join = Instance::<(usize, usize), User>::new(rt.core(1), 2, move |ctx, xs| {
        let _ = ctx.signal(&result, (xs.into_vec(), ctx.core().index()));
    })
    .unwrap();
    let (a, b) = (join.slot(0), join.slot(1));
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        ctx.signal(&a, (0, ctx.core().index())).unwrap();
    })
    .unwrap();
    Instance::<(), User>::new(rt.core(1), 0, move |ctx, _| {
        ctx.signal(&b, (1, ctx.core().index())).unwrap();
    })
    .unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok((vec![(0, 0), (1, 1)], 1)));
}

#[test]
fn a_signal_overtaking_the_creation_message_is_kept() {
    // Core 0 creates an instance on core 1 and hands it to the main thread
    // (another source of messages to core 1): whichever of "create" and
    // "signal" reaches core 1 first, the instance fires once, with the value.
    let rt = runtime(2);
    for round in 0..50u32 {
        let (result, out) = Outcome::new(rt.core(0)).unwrap();
        let c1 = rt.core(1).clone();
        let inst = rt
            .core(0)
            .call(move || {
                Instance::<u32, User>::new(&c1, 1, move |ctx, xs| {
                    let _ = ctx.signal(&result, xs[0]);
                })
                .unwrap()
            })
            .wait()
            .unwrap();
        user().continue_to(&inst, 0, round).unwrap();
        assert_eq!(out.wait_timeout(WAIT), Ok(round));
    }
}

#[test]
fn creation_and_signal_queued_at_a_busy_owner() {
    // Core 1 is kept busy while the main thread creates an instance there
    // (a message on the main thread's lane) and core 0 signals it (a
    // message on ring 0 -> 1): core 1 finds both at once, in an order its
    // poll decides. Either way the instance fires once, with the value.
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    let (unblock, blocked) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    // The blocker comes from core 0, so the signal (also from core 0) is
    // next in core 1's poll and the creation (from this thread) after it.
    let c1 = rt.core(1).clone();
    rt.core(0)
        .call(move || {
            c1.spawn(move || {
                started_tx.send(()).unwrap();
                let _ = blocked.recv_timeout(WAIT);
            })
        })
        .wait()
        .unwrap()
        .unwrap();
    started.recv_timeout(WAIT).unwrap();
    let inst = Instance::<u32, User>::new(rt.core(1), 1, move |ctx, xs| {
        let _ = ctx.signal(&result, xs[0]);
    })
    .unwrap();
    let to = inst.slot(0);
    rt.core(0)
        .call(move || user().signal(&to, 11).map_err(|e| e.kind()))
        .wait()
        .unwrap()
        .unwrap();
    unblock.send(()).unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(11));
}

/// Handles of instances a body completes on its own core, dropped there
/// while the core's ready stack holds the instances (the drop that writes
/// the count without a read-modify-write), alone or beside clones dropped
/// on another core: every instance fires once with its value, and every
/// body's captures are dropped once.
#[test]
fn handles_dropped_beside_the_ready_stack_fire_and_free_once() {
    use std::sync::Arc;
    let rt = runtime(2);
    let captured = Arc::new(());
    let (tx, rx) = mpsc::channel();
    let c1 = rt.core(1).clone();
    let cap = captured.clone();
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        let mut clones = Vec::new();
        for k in 0..100u32 {
            let (tx, cap) = (tx.clone(), cap.clone());
            let i = Instance::<u32, User>::new(ctx.core(), 1, move |_, xs| {
                let _ = (&cap, tx.send(xs[0]));
            })
            .unwrap();
            if k % 2 == 0 {
                clones.push(i.clone());
            }
            ctx.continue_to(&i, 0, k).unwrap();
            drop(i);
        }
        let _ = c1.spawn(move || drop(clones));
    })
    .unwrap();
    let mut got: Vec<u32> = (0..100).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    let t0 = std::time::Instant::now();
    while Arc::strong_count(&captured) > 1 {
        assert!(t0.elapsed() < WAIT, "a body's captures were never dropped");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        rx.recv_timeout(Duration::from_millis(10)).is_err(),
        "fired twice"
    );
}

#[test]
fn double_fill_is_refused_with_the_value_back_remote() {
    let rt = runtime(2);
    let inst = Instance::<String, User>::new(rt.core(1), 2, |_, _| {}).unwrap();
    user().continue_to(&inst, 0, "first".to_string()).unwrap();
    let err = user()
        .continue_to(&inst, 0, "second".to_string())
        .unwrap_err();
    assert_eq!(err.kind(), SignalErrorKind::AlreadyFilled);
    assert_eq!(err.slot(), 0);
    assert_eq!(err.into_value().as_deref(), Some("second"));
}

#[test]
fn double_fill_is_refused_local() {
    let rt = runtime(1);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        let x = Instance::<u8, User>::new(ctx.core(), 2, |_, _| {}).unwrap();
        let first = ctx.continue_to(&x, 1, 1).map_err(|e| e.kind());
        let second = ctx
            .continue_to(&x, 1, 2)
            .map_err(|e| (e.kind(), e.into_value()));
        let _ = ctx.signal(&result, (first, second));
    })
    .unwrap();
    assert_eq!(
        out.wait_timeout(WAIT),
        Ok((Ok(()), Err((SignalErrorKind::AlreadyFilled, Some(2)))))
    );
}

#[test]
fn signal_after_fire_is_refused_remote() {
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    let inst = Instance::<u8, User>::new(rt.core(1), 1, move |ctx, xs| {
        let _ = ctx.signal(&result, xs[0]);
    })
    .unwrap();
    user().continue_to(&inst, 0, 7).unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(7)); // it has fired
    let err = user().continue_to(&inst, 0, 8).unwrap_err();
    assert_eq!(err.kind(), SignalErrorKind::Fired);
    assert_eq!(err.into_value(), Some(8));
}

#[test]
fn signal_after_fire_is_refused_local() {
    // x fires and continues to y on the same core; y signals x again.
    let rt = runtime(1);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        let x_slot: std::sync::Arc<std::sync::OnceLock<Slot<u8>>> = Default::default();
        let x_slot2 = x_slot.clone();
        let y = Instance::<u8, User>::new(ctx.core(), 1, move |ctx, _| {
            let again = ctx.signal(x_slot2.get().unwrap(), 9).map_err(|e| e.kind());
            let _ = ctx.signal(&result, again);
        })
        .unwrap();
        let y0 = y.slot(0);
        let x = Instance::<u8, User>::new(ctx.core(), 1, move |ctx, xs| {
            let _ = ctx.signal(&y0, xs[0]);
        })
        .unwrap();
        x_slot.set(x.slot(0)).unwrap();
        ctx.continue_to(&x, 0, 1).unwrap();
    })
    .unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(Err(SignalErrorKind::Fired)));
}

#[test]
fn no_such_slot_is_refused() {
    let rt = runtime(1);
    let inst = Instance::<u8, User>::new(rt.core(0), 2, |_, _| {}).unwrap();
    let err = user().continue_to(&inst, 2, 1).unwrap_err();
    assert_eq!(err.kind(), SignalErrorKind::NoSuchSlot);
    assert_eq!(err.slot(), 2);
    // A refused signal claims nothing: the slots are still free.
    assert!(user().continue_to(&inst, 0, 1).is_ok());
    // No inputs at all: every slot is missing.
    let none = Instance::<u8, User>::new(rt.core(0), 0, |_, _| {}).unwrap();
    assert_eq!(
        user().continue_to(&none, 0, 1).unwrap_err().kind(),
        SignalErrorKind::NoSuchSlot
    );
}

#[test]
fn the_input_limit_and_input_counts_are_checked() {
    let rt = runtime(1);
    let too_many = Instance::<u8, User>::new(rt.core(0), MAX_INPUTS + 1, |_, _| {});
    assert_eq!(
        too_many.unwrap_err(),
        FlowError::TooManyInputs {
            inputs: MAX_INPUTS + 1
        }
    );
    // The most inputs there may be: every slot counts.
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    let wide = Instance::<usize, User>::new(rt.core(0), MAX_INPUTS, move |ctx, xs| {
        let _ = ctx.signal(&result, xs.iter().sum::<usize>());
    })
    .unwrap();
    for i in 0..MAX_INPUTS {
        user().continue_to(&wide, i, i).unwrap();
    }
    assert_eq!(out.wait_timeout(WAIT), Ok((0..MAX_INPUTS).sum()));

    let t = Template::<u8, User>::new(2, |_, _| {});
    assert_eq!(
        t.start(rt.core(0), vec![1]),
        Err(FlowError::InputCount {
            expected: 2,
            got: 1
        })
    );
}

#[test]
fn a_template_makes_many_instances_at_once() {
    let rt = runtime(2);
    let (tx, rx) = mpsc::channel();
    let square = Template::<u64, User>::new(2, move |_ctx, xs| {
        tx.send(xs[0] * xs[1]).unwrap();
    });
    let insts: Vec<_> = (0..100u64)
        .map(|i| square.instance(rt.core(i as usize % 2)).unwrap())
        .collect();
    for (i, inst) in insts.iter().enumerate() {
        user().continue_to(inst, 1, i as u64).unwrap();
    }
    for (i, inst) in insts.iter().enumerate().rev() {
        user().continue_to(inst, 0, i as u64).unwrap();
    }
    square.start(rt.core(0), vec![1000, 1000]).unwrap();
    let got = recv_sorted(&rx, 101);
    let mut want: Vec<u64> = (0..100).map(|i| i * i).collect();
    want.push(1_000_000);
    assert_eq!(got, want);
}

#[test]
fn a_panicking_body_does_not_take_its_core_down() {
    let rt = runtime(1);
    let boom = Instance::<u8, User>::new(rt.core(0), 1, |_, _| panic!("boom")).unwrap();
    user().continue_to(&boom, 0, 1).unwrap();
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    user().signal(&result, 5u8).unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(5));
}

#[test]
fn nothing_is_left_pending_after_a_run() {
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(1)).unwrap();
    let inst = Instance::<u8, User>::new(rt.core(0), 2, move |ctx, xs| {
        let _ = ctx.signal(&result, xs[0] + xs[1]);
    })
    .unwrap();
    user().continue_to(&inst, 0, 1).unwrap();
    user().continue_to(&inst, 1, 2).unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(3));
    for i in 0..2 {
        let left = rt.core(i).call(manycore_flow::pending_here).wait().unwrap();
        assert_eq!(left, 0, "core {i}");
    }
}

#[test]
fn routed_signals_reach_instances_made_on_their_owner_and_entries_reused() {
    // Instances made on core 1 itself are registered there at once, so
    // core 0's signals to them name them by registry entry (no counted
    // reference in the message). Three inputs each: the first two
    // deliveries leave the instance waiting (it goes back to its entry),
    // the third fires it. Rounds reuse the entries of the instances the
    // round before fired; a signal to a fired instance is still refused
    // with `Fired`, and reaches nothing else.
    let rt = runtime(2);
    for round in 0..20u32 {
        let (result, out) = mpsc::channel();
        let on1 = rt.core(1).clone();
        let insts = rt
            .core(1)
            .call(move || {
                (0..8u32)
                    .map(|k| {
                        let result: mpsc::Sender<(u32, Vec<u32>)> = result.clone();
                        Instance::<u32, User>::new(&on1, 3, move |ctx, xs| {
                            assert_eq!(ctx.core().index(), 1);
                            let _ = result.send((k, xs.into_vec()));
                        })
                        .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
            .wait()
            .unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        let sent = insts.clone();
        Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
            for (k, inst) in sent.iter().enumerate() {
                let k = k as u32;
                for slot in [2, 0, 1] {
                    ctx.continue_to(inst, slot, round * 100 + k * 10 + slot as u32)
                        .unwrap();
                }
                let again = ctx.continue_to(inst, 1, 999).unwrap_err();
                assert_eq!(again.into_value(), Some(999));
            }
            let _ = done_tx.send(());
        })
        .unwrap();
        done_rx.recv_timeout(WAIT).unwrap();
        let got = recv_sorted(&out, 8);
        let want: Vec<_> = (0..8u32)
            .map(|k| {
                let b = round * 100 + k * 10;
                (k, vec![b, b + 1, b + 2])
            })
            .collect();
        assert_eq!(got, want);
        assert_all_fired(&insts);
    }
}

#[test]
fn routed_signals_fire_one_input_instances_and_templates_on_their_owner() {
    // One-input instances made on core 1 (closures, and instances of an
    // exclusive template), signalled from core 0 by registry entry: each
    // value completes its instance, which fires on core 1 with it. Rounds
    // reuse the entries; a second signal is still refused with `Fired`
    // (synchronously, its value given back), and reaches nothing else.
    let rt = runtime(2);
    let gate = Gate::new(Exclusion::Queue);
    for round in 0..20u32 {
        let (result, out) = mpsc::channel();
        let on1 = rt.core(1).clone();
        let gate = gate.clone();
        let insts = rt
            .core(1)
            .call(move || {
                let r = result.clone();
                let t = Template::<u32, User>::exclusive(1, &gate, move |ctx, xs| {
                    assert_eq!(ctx.core().index(), 1);
                    let _ = r.send(xs.into_vec());
                });
                (0..8u32)
                    .map(|k| {
                        if k % 2 == 0 {
                            return t.instance(&on1).unwrap();
                        }
                        let result = result.clone();
                        Instance::<u32, User>::new(&on1, 1, move |ctx, xs| {
                            assert_eq!(ctx.core().index(), 1);
                            let _ = result.send(xs.into_vec());
                        })
                        .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
            .wait()
            .unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        let sent = insts.clone();
        Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
            for (k, inst) in sent.iter().enumerate() {
                ctx.continue_to(inst, 0, round * 100 + k as u32).unwrap();
                let again = ctx.continue_to(inst, 0, 999).unwrap_err();
                assert_eq!(again.into_value(), Some(999));
            }
            let _ = done_tx.send(());
        })
        .unwrap();
        done_rx.recv_timeout(WAIT).unwrap();
        let got = recv_sorted(&out, 8);
        let want: Vec<_> = (0..8u32).map(|k| vec![round * 100 + k]).collect();
        assert_eq!(got, want);
        assert_all_fired(&insts);
        let left = rt.core(1).call(manycore_flow::pending_here).wait().unwrap();
        assert_eq!(left, 0);
    }
}
