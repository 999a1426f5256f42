//! Random DAGs of zero-wait threads, placed on random cores, compute what
//! the same functions evaluated in order compute.

use manycore_flow::{GraphBuilder, NodeId};
use manycore_rt::{IdlePolicy, Runtime};
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

/// Where one input slot of a node gets its value.
#[derive(Debug, Clone)]
enum Source {
    /// The value of an earlier node (an index reduced modulo the node's
    /// index, so every graph is acyclic by construction).
    Node(usize),
    /// A graph input.
    Input,
}

#[derive(Debug, Clone)]
struct Spec {
    /// Per node: its input sources and its core.
    nodes: Vec<(Vec<Source>, usize)>,
    /// Values of the graph inputs, in the order the inputs appear.
    inputs: Vec<u64>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let source = prop_oneof![any::<usize>().prop_map(Source::Node), Just(Source::Input)];
    let node = (prop::collection::vec(source, 0..4), 0..2usize);
    (
        prop::collection::vec(node, 1..12),
        prop::collection::vec(any::<u64>(), 48),
    )
        .prop_map(|(nodes, inputs)| Spec { nodes, inputs })
}

/// The function of node `i`: mixes its inputs with its index.
fn mix(i: usize, xs: &[u64]) -> u64 {
    xs.iter()
        .enumerate()
        .fold(i as u64 * 0x9e37_79b9 + 1, |acc, (s, x)| {
            acc.rotate_left(7) ^ x.wrapping_mul(s as u64 * 2 + 3)
        })
}

/// Resolves sources: `Node(j)` becomes an earlier node's index; node 0 can
/// only take graph inputs.
fn resolve(i: usize, s: &Source) -> Option<usize> {
    match *s {
        Source::Node(j) if i > 0 => Some(j % i),
        _ => None,
    }
}

fn sequential(spec: &Spec) -> Vec<u64> {
    let mut inputs = spec.inputs.iter().copied();
    let mut vals: Vec<u64> = Vec::new();
    for (i, (srcs, _)) in spec.nodes.iter().enumerate() {
        let xs: Vec<u64> = srcs
            .iter()
            .map(|s| match resolve(i, s) {
                Some(j) => vals[j],
                None => inputs.next().unwrap_or(0),
            })
            .collect();
        vals.push(mix(i, &xs));
    }
    vals
}

fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        Runtime::builder()
            .cores(2)
            .idle(IdlePolicy::Sleep)
            .build()
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_dags_compute_what_sequential_code_computes(spec in spec()) {
        let mut g = GraphBuilder::<u64>::new();
        let mut ids: Vec<NodeId> = Vec::new();
        let mut inputs = Vec::new();
        let mut next_input = spec.inputs.iter().copied();
        for (i, (srcs, core)) in spec.nodes.iter().enumerate() {
            let id = g.node(srcs.len(), move |xs| mix(i, xs));
            g.place(id, *core);
            for (slot, s) in srcs.iter().enumerate() {
                match resolve(i, s) {
                    Some(j) => {
                        g.connect(ids[j], id, slot);
                    }
                    None => {
                        g.input(id, slot);
                        inputs.push(next_input.next().unwrap_or(0));
                    }
                }
            }
            ids.push(id);
        }
        // Every node is an output, so every value is checked.
        for &id in &ids {
            g.output(id);
        }
        let graph = g.build().unwrap();
        let out = graph.run(runtime().cores(), inputs).unwrap();
        prop_assert_eq!(out.wait_timeout(WAIT).unwrap(), sequential(&spec));
    }
}
