//! Runtime shutdown while instances are pending: whoever waits gets a typed
//! error, never a hang; later signals and creations are refused.

mod common;
use common::runtime;
use manycore_flow::{
    Exclusion, FlowError, Gate, GraphBuilder, Instance, Outcome, Outside, SignalErrorKind,
    Template, User,
};
use std::sync::mpsc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn pending_instances_end_in_shutdown_errors() {
    let rt = runtime(2);
    let (result, out) = Outcome::<u32>::new(rt.core(0)).unwrap();
    let inst = Instance::<u32, User>::new(rt.core(1), 2, move |ctx, xs| {
        let _ = ctx.signal(&result, xs[0] + xs[1]);
    })
    .unwrap();
    Outside::<User>::new().continue_to(&inst, 0, 1).unwrap();
    rt.shutdown();
    // The instance (holding the sink's slot) and the sink were dropped with
    // their cores: the wait ends. `wait`, not `wait_timeout`: it must end.
    assert_eq!(out.wait(), Err(FlowError::Shutdown));
    let err = Outside::<User>::new().continue_to(&inst, 1, 2).unwrap_err();
    assert_eq!(err.kind(), SignalErrorKind::Shutdown);
}

#[test]
fn creation_after_shutdown_is_refused() {
    let rt = runtime(1);
    let core = rt.core(0).clone();
    rt.shutdown();
    assert_eq!(
        Instance::<u8, User>::new(&core, 1, |_, _| {}).unwrap_err(),
        FlowError::Shutdown
    );
    assert_eq!(Outcome::<u8>::new(&core).unwrap_err(), FlowError::Shutdown);
    let t = Template::<u8, User>::new(0, |_, _| {});
    assert_eq!(t.start(&core, vec![]), Err(FlowError::Shutdown));
}

#[test]
fn a_graph_run_cut_short_by_shutdown() {
    let mut g = GraphBuilder::<u8>::new();
    let a = g.node(2, |x| x[0] + x[1]);
    g.input(a, 0);
    g.input(a, 1);
    g.output(a);
    let graph = g.build().unwrap();
    let rt = runtime(2);
    let out = graph.run(rt.cores(), vec![1, 2]).unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(vec![3]));
    // A run racing the shutdown: it finished before, or it was cut short;
    // either way the wait ends with a typed answer.
    let out = graph.run(rt.cores(), vec![3, 4]).unwrap();
    rt.shutdown();
    let r = out.wait();
    assert!(r == Ok(vec![7]) || r == Err(FlowError::Shutdown), "{r:?}");
    assert_eq!(
        graph.run(rt.cores(), vec![1, 1]).unwrap_err(),
        FlowError::Shutdown
    );
}

/// Waiters at a gate the test holds across the shutdown.
fn gate_held_across_shutdown(policy: Exclusion) {
    let rt = runtime(2);
    let gate = Gate::new(policy);
    let (hold_tx, hold_rx) = mpsc::channel();
    let (result, out) = Outcome::<usize>::new(rt.core(0)).unwrap();
    let t = Template::<usize, User>::exclusive(1, &gate, move |ctx, x| {
        if x[0] == 0 {
            hold_tx.send(ctx.hold_gate().unwrap()).unwrap();
        } else {
            let _ = ctx.signal(&result, x[0]);
        }
    });
    t.start(rt.core(0), vec![0]).unwrap();
    let hold = hold_rx.recv_timeout(WAIT).unwrap();
    for i in 1..=3 {
        t.start(rt.core(i % 2), vec![i]).unwrap();
    }
    // Under self-continuation the losers retry (a bounded number of times,
    // then wait in the queue); under the queue they wait at once. Either
    // way the shutdown ends, and so does the wait.
    rt.shutdown();
    assert_eq!(out.wait(), Err(FlowError::Shutdown), "{policy:?}");
    // Releasing now finds nobody left to hand over to: the gate is free.
    drop(hold);
    assert!(!gate.is_held(), "{policy:?}");
}

#[test]
fn queued_waiters_end_in_shutdown_errors() {
    gate_held_across_shutdown(Exclusion::Queue);
}

#[test]
fn self_continuing_waiters_end_in_shutdown_errors() {
    gate_held_across_shutdown(Exclusion::SelfContinuation);
}
