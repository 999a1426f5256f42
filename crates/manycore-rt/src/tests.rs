//! Unit tests of the crate's plain data structures, each held against a
//! simple model (proptest).

use crate::sparse::Sparse;
use crate::spill::SpillQueue;
use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};

/// An operation on a spill queue: queue a value, or let the ring take up
/// to `n` values.
#[derive(Debug, Clone)]
enum SpillOp {
    Push(u32),
    Drain(usize),
}

fn spill_op() -> impl Strategy<Value = SpillOp> {
    prop_oneof![
        3 => any::<u32>().prop_map(SpillOp::Push),
        1 => (0usize..80).prop_map(SpillOp::Drain),
    ]
}

proptest! {
    /// The spill queue is a FIFO (the model: a VecDeque) that says, on each
    /// push, whether it has reached the limit; it hands values to the ring
    /// oldest first, stopping at the first the ring refuses, which stays at
    /// the front; and an emptied queue is still a FIFO.
    #[test]
    fn spill_queue_matches_vecdeque(
        limit in 1usize..70,
        ops in proptest::collection::vec(spill_op(), 0..300),
    ) {
        let mut q = SpillQueue::default();
        let mut model = VecDeque::new();
        for op in ops {
            match op {
                SpillOp::Push(v) => {
                    model.push_back(v);
                    prop_assert_eq!(q.push(v, limit), model.len() >= limit);
                }
                SpillOp::Drain(n) => {
                    let mut ring = Vec::new();
                    let moved = q.drain_into(|v| {
                        if ring.len() < n {
                            ring.push(v);
                            Ok(())
                        } else {
                            Err(v)
                        }
                    });
                    prop_assert_eq!(moved, ring.len());
                    let expect: Vec<u32> = model.drain(..moved.min(model.len())).collect();
                    prop_assert_eq!(ring, expect);
                }
            }
            prop_assert_eq!(q.len(), model.len());
            prop_assert_eq!(q.is_empty(), model.is_empty());
        }
        let mut rest = Vec::new();
        q.drain_into(|v| {
            rest.push(v);
            Ok(())
        });
        prop_assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
    }

    /// `Sparse` is a map (the model: a BTreeMap): lookups, replacement,
    /// in-order iteration and `next_key` agree with it.
    #[test]
    fn sparse_matches_btreemap(
        ops in proptest::collection::vec((0usize..300, any::<u16>()), 0..200),
        probes in proptest::collection::vec(0usize..320, 0..50),
    ) {
        let mut s = Sparse::default();
        let mut model = BTreeMap::new();
        for (k, v) in ops {
            prop_assert_eq!(s.insert(k, v), model.insert(k, v));
        }
        for p in probes {
            prop_assert_eq!(s.get(p), model.get(&p));
            prop_assert_eq!(s.next_key(p), model.range(p..).next().map(|(k, _)| *k));
            if let Some(v) = s.get_mut(p) {
                *v = v.wrapping_add(1);
                let m = model.get_mut(&p).expect("the model has the key too");
                *m = m.wrapping_add(1);
            }
        }
        let got: Vec<(usize, u16)> = s.iter().map(|(k, v)| (k, *v)).collect();
        let expect: Vec<(usize, u16)> = model.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(&got, &expect);
        let got_mut: Vec<(usize, u16)> = s.iter_mut().map(|(k, v)| (k, *v)).collect();
        prop_assert_eq!(got_mut, expect);
    }
}
