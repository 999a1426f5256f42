//! The buddy allocator against a simple model: random connect/close sequences
//! never overlap, the blocks always tile the buffer, the first connection gets
//! everything, and everything merges back into one block.
use manycore_sock::BuddyAllocator;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Open,
    Close(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![3 => Just(Op::Open), 2 => any::<usize>().prop_map(Op::Close)]
}

fn check_tiling(b: &BuddyAllocator) {
    let mut next = 0u32;
    for (off, size, _) in b.blocks() {
        assert_eq!(off, next, "gap or overlap at {off}");
        assert!(size.is_power_of_two() && size >= b.min());
        assert_eq!(off % size, 0, "block not aligned to its size");
        next = off + size;
    }
    assert_eq!(next, b.total());
}

proptest! {
    #[test]
    fn random_connect_close(total_log in 8u32..16, min_log in 4u32..8, ops in prop::collection::vec(op(), 1..200)) {
        let total = 1u32 << total_log;
        let min = 1u32 << min_log.min(total_log);
        let mut b = BuddyAllocator::new(total, min).unwrap();
        // Model: owner -> (off, size), maintained from the allocator's reports.
        let mut model: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
        let mut next_id = 0u64;
        for o in ops {
            match o {
                Op::Open => {
                    let id = next_id;
                    next_id += 1;
                    let was_empty = model.is_empty();
                    let can = model.len() < (total / min) as usize;
                    match b.alloc(id) {
                        Some(g) => {
                            prop_assert!(can);
                            if was_empty {
                                prop_assert_eq!((g.off, g.size), (0, total), "first gets all");
                            }
                            if let Some((v, vs)) = g.split {
                                let e = model.get_mut(&v).expect("split a live owner");
                                prop_assert_eq!(e.1, vs * 2);
                                prop_assert_eq!(e.0 + vs, g.off);
                                e.1 = vs;
                            }
                            model.insert(id, (g.off, g.size));
                        }
                        None => prop_assert!(!can, "refused with room left"),
                    }
                }
                Op::Close(k) => {
                    if model.is_empty() { continue; }
                    let id = *model.keys().nth(k % model.len()).unwrap();
                    model.remove(&id);
                    for (o, size) in b.free(id).unwrap() {
                        let e = model.get_mut(&o).expect("grew a live owner");
                        prop_assert!(size > e.1);
                        e.1 = size;
                    }
                }
            }
            check_tiling(&b);
            // No two live blocks overlap, and the model agrees with the allocator.
            let mut v: Vec<_> = model.values().copied().collect();
            v.sort();
            for w in v.windows(2) {
                prop_assert!(w[0].0 + w[0].1 <= w[1].0, "overlap {:?}", w);
            }
            for (id, blk) in &model {
                prop_assert_eq!(b.block_of(*id), Some(*blk));
            }
        }
        let ids: Vec<u64> = model.keys().copied().collect();
        for id in ids {
            model.remove(&id);
            for (o, size) in b.free(id).unwrap() {
                model.get_mut(&o).unwrap().1 = size;
            }
        }
        prop_assert_eq!(b.blocks().collect::<Vec<_>>(), vec![(0, total, None)]);
        prop_assert_eq!(b.alloc(99).map(|g| (g.off, g.size)), Some((0, total)));
    }
}
