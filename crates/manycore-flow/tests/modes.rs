//! Thread modes (FUCE): a user thread reaches kernel threads only through a
//! kernel-interface thread. Typed handles make a direct continuation a
//! compile error (the `compile_fail` example on `Ctx`); here: the checks at
//! graph build time and at signal time, and the allowed path.

mod common;
use common::runtime;
use manycore_flow::{
    BuildError, GraphBuilder, Instance, Kernel, KernelInterface, ModeKind, Outcome, Outside,
    SignalErrorKind, Slot, User,
};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn the_rule_as_values() {
    use ModeKind::*;
    let all = [User, KernelInterface, Kernel];
    for from in all {
        for to in all {
            let allowed = !(from == User && to == Kernel);
            assert_eq!(from.may_continue_to(to), allowed, "{from} -> {to}");
        }
    }
}

#[test]
fn a_graph_edge_from_user_to_kernel_is_rejected_when_built() {
    let mut g = GraphBuilder::<u8>::new();
    let u = g.node(1, |x| x[0]);
    let k = g.node_in(ModeKind::Kernel, 1, |x| x[0]);
    g.input(u, 0);
    g.connect(u, k, 0);
    g.output(k);
    assert_eq!(
        g.build().unwrap_err(),
        BuildError::ModeViolation {
            from: Some(0),
            to: 1,
            from_mode: ModeKind::User,
            to_mode: ModeKind::Kernel
        }
    );
}

#[test]
fn a_graph_input_straight_into_a_kernel_node_is_rejected() {
    let mut g = GraphBuilder::<u8>::new();
    let k = g.node_in(ModeKind::Kernel, 1, |x| x[0]);
    g.input(k, 0);
    g.output(k);
    assert!(matches!(
        g.build(),
        Err(BuildError::ModeViolation { from: None, .. })
    ));
}

#[test]
fn a_graph_through_the_kernel_interface_runs() {
    // user -> kernel-interface -> kernel -> user
    let mut g = GraphBuilder::<u32>::new();
    let u = g.node(1, |x| x[0] + 1);
    let gate = g.node_in(ModeKind::KernelInterface, 1, |x| x[0] * 10);
    let k = g.node_in(ModeKind::Kernel, 1, |x| x[0] + 5);
    let back = g.node(1, |x| x[0] * 2);
    g.input(u, 0);
    g.connect(u, gate, 0)
        .connect(gate, k, 0)
        .connect(k, back, 0);
    g.output(back);
    let graph = g.build().unwrap();
    let rt = runtime(2);
    let out = graph.run(rt.cores(), vec![1]).unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(vec![((1 + 1) * 10 + 5) * 2]));
}

#[test]
fn a_slot_whose_mode_is_a_value_is_checked_when_signalled() {
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    let kernel = Instance::<u8, Kernel>::new(rt.core(1), 1, |_, _| {}).unwrap();
    let kernel_slot = kernel.slot(0).erase();
    assert_eq!(kernel_slot.mode(), ModeKind::Kernel);
    let ks = kernel_slot.clone();
    // A user body that was handed the kernel thread's slot as data.
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        let r = ctx
            .signal_any(&ks, 1)
            .map_err(|e| (e.kind(), e.into_value()));
        let _ = ctx.signal(&result, r);
    })
    .unwrap();
    assert_eq!(
        out.wait_timeout(WAIT),
        Ok(Err((
            SignalErrorKind::ModeViolation {
                from: ModeKind::User,
                to: ModeKind::Kernel
            },
            Some(1)
        )))
    );
    // Refused before claiming: a kernel-mode sender still can fill it.
    assert!(!kernel.is_complete());
    assert!(Outside::<Kernel>::new().signal_any(&kernel_slot, 2).is_ok());
    // The same from outside, as a user.
    let again = Outside::<User>::new()
        .signal_any(&kernel_slot, 3)
        .unwrap_err();
    assert!(matches!(
        again.kind(),
        SignalErrorKind::ModeViolation { .. }
    ));
}

#[test]
fn the_system_call_path_with_typed_handles() {
    // user -> kernel-interface (gate) -> kernel -> user (receiver)
    let rt = runtime(2);
    let (result, out) = Outcome::new(rt.core(0)).unwrap();
    let receiver: Slot<u64, User> = result;
    let kernel = Instance::<(u64, Slot<u64, User>), Kernel>::new(rt.core(1), 1, |ctx, req| {
        let (arg, reply) = req.into_iter().next().unwrap();
        let _ = ctx.signal(&reply, arg * 2);
    })
    .unwrap();
    let gate =
        Instance::<(u64, Slot<u64, User>), KernelInterface>::new(rt.core(0), 1, move |ctx, req| {
            let req = req.into_iter().next().unwrap();
            let _ = ctx.continue_to(&kernel, 0, req);
        })
        .unwrap();
    Instance::<(), User>::new(rt.core(1), 0, move |ctx, _| {
        let _ = ctx.continue_to(&gate, 0, (21, receiver));
    })
    .unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(42));
}

#[test]
fn typed_erasure_round_trips() {
    let rt = runtime(1);
    let k = Instance::<u8, Kernel>::new(rt.core(0), 1, |_, _| {}).unwrap();
    let any = k.slot(0).erase();
    assert!(any.clone().typed::<User>().is_none());
    let back = any.typed::<Kernel>().unwrap();
    assert_eq!(back.index(), 0);
    assert_eq!(back.instance().mode(), ModeKind::Kernel);
}
