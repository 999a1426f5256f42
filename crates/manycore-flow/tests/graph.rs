//! Static graphs: the checks `build` makes, and runs.

mod common;
use common::runtime;
use manycore_flow::{BuildError, FlowError, GraphBuilder, NodeId};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn id(g: &mut GraphBuilder<u8>, inputs: usize) -> NodeId {
    g.node(inputs, |x| x.iter().copied().fold(0, u8::wrapping_add))
}

#[test]
fn a_slot_fed_twice_is_rejected() {
    let mut g = GraphBuilder::<u8>::new();
    let a = id(&mut g, 1);
    let b = id(&mut g, 1);
    g.input(a, 0);
    g.connect(a, b, 0);
    g.input(b, 0);
    g.output(b);
    assert_eq!(
        g.build().unwrap_err(),
        BuildError::SlotFedTwice { node: 1, slot: 0 }
    );
}

#[test]
fn an_unfed_slot_is_rejected() {
    let mut g = GraphBuilder::<u8>::new();
    let a = id(&mut g, 2);
    g.input(a, 1);
    g.output(a);
    assert_eq!(
        g.build().unwrap_err(),
        BuildError::SlotUnfed { node: 0, slot: 0 }
    );
}

#[test]
fn a_cycle_is_rejected() {
    let mut g = GraphBuilder::<u8>::new();
    let a = id(&mut g, 2);
    let b = id(&mut g, 1);
    g.input(a, 0);
    g.connect(a, b, 0).connect(b, a, 1);
    g.output(b);
    assert!(matches!(g.build(), Err(BuildError::Cycle(_))));
}

#[test]
fn missing_nodes_slots_and_outputs_are_rejected() {
    let mut g = GraphBuilder::<u8>::new();
    let a = id(&mut g, 1);
    g.input(a, 3);
    g.output(a);
    assert_eq!(
        g.build().unwrap_err(),
        BuildError::NoSuchSlot { node: 0, slot: 3 }
    );

    let mut g = GraphBuilder::<u8>::new();
    let a = id(&mut g, 0);
    // A node id from a bigger graph names no node here.
    let far = {
        let mut big = GraphBuilder::<u8>::new();
        for _ in 0..5 {
            id(&mut big, 0);
        }
        id(&mut big, 0)
    };
    g.place(far, 0);
    g.output(a);
    assert_eq!(g.build().unwrap_err(), BuildError::NoSuchNode(5));

    let mut g = GraphBuilder::<u8>::new();
    id(&mut g, 0);
    assert_eq!(g.build().unwrap_err(), BuildError::NoOutputs);
}

#[test]
fn runs_repeatedly_with_fresh_instances_and_fan_out() {
    // x -> {double, square} -> sum; also x itself is an output.
    let mut g = GraphBuilder::<u64>::new();
    let x = g.node(1, |v| v[0]);
    let double = g.node(1, |v| v[0] * 2);
    let square = g.node(1, |v| v[0] * v[0]);
    let sum = g.node(2, |v| v[0] + v[1]);
    g.input(x, 0);
    g.connect(x, double, 0).connect(x, square, 0);
    g.connect(double, sum, 0).connect(square, sum, 1);
    g.output(sum);
    g.output(x);
    g.place(sum, 1).place(x, 0);
    let graph = g.build().unwrap();
    assert_eq!((graph.inputs(), graph.outputs()), (1, 2));
    let rt = runtime(2);
    let runs: Vec<_> = (0..20u64)
        .map(|i| (i, graph.run(rt.cores(), vec![i]).unwrap()))
        .collect();
    for (i, out) in runs {
        assert_eq!(out.wait_timeout(WAIT), Ok(vec![2 * i + i * i, i]));
    }
}

#[test]
fn constant_nodes_fire_at_once() {
    let mut g = GraphBuilder::<u32>::new();
    let c = g.node(0, |_| 7);
    let d = g.node(0, |_| 5);
    let m = g.node(2, |v| v[0] * v[1]);
    g.connect(c, m, 0).connect(d, m, 1);
    g.output(m);
    let graph = g.build().unwrap();
    let rt = runtime(2);
    assert_eq!(
        graph.run(rt.cores(), vec![]).unwrap().wait_timeout(WAIT),
        Ok(vec![35])
    );
}

#[test]
fn run_checks_inputs_and_placement() {
    let mut g = GraphBuilder::<u8>::new();
    let a = id(&mut g, 1);
    g.input(a, 0);
    g.output(a);
    g.place(a, 5);
    let graph = g.build().unwrap();
    let rt = runtime(2);
    assert_eq!(
        graph.run(rt.cores(), vec![]).unwrap_err(),
        FlowError::InputCount {
            expected: 1,
            got: 0
        }
    );
    assert_eq!(
        graph.run(rt.cores(), vec![1]).unwrap_err(),
        FlowError::NoSuchCore { index: 5, cores: 2 }
    );
    assert!(matches!(
        graph.run(&[], vec![1]),
        Err(FlowError::NoSuchCore { .. })
    ));
}

#[test]
fn a_panicking_node_fails_the_run() {
    let mut g = GraphBuilder::<u8>::new();
    let a = g.node(1, |v| if v[0] == 0 { panic!("zero") } else { v[0] });
    let b = g.node(1, |v| v[0]);
    g.input(a, 0);
    g.connect(a, b, 0);
    g.output(b);
    let graph = g.build().unwrap();
    let rt = runtime(2);
    assert_eq!(
        graph.run(rt.cores(), vec![0]).unwrap().wait_timeout(WAIT),
        Err(FlowError::Panicked("zero".into()))
    );
    assert_eq!(
        graph.run(rt.cores(), vec![4]).unwrap().wait_timeout(WAIT),
        Ok(vec![4])
    );
}
