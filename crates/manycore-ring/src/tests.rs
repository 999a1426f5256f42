use super::*;
use crate::test_rec::Rec;
use proptest::prelude::*;
use std::collections::VecDeque;

#[test]
fn capacity_rounds_up() {
    assert_eq!(channel::<u8>(3).unwrap().0.capacity(), 4);
    assert_eq!(channel::<u8>(1).unwrap().0.capacity(), 2);
    assert_eq!(channel::<u8>(0).unwrap_err(), RingError::InvalidCapacity(0));
    assert!(channel::<u8>(MAX_CAPACITY + 1).is_err());
}

#[test]
fn slot_is_one_line_for_small_payloads() {
    let (tx, _rx) = channel::<[u64; 7]>(2).unwrap();
    assert_eq!(tx.capacity(), 2);
    assert_eq!(std::mem::size_of::<[u64; 7]>() + 8, 64);
}

#[test]
fn full_and_empty() {
    let (mut tx, mut rx) = channel::<u32>(2).unwrap();
    assert!(rx.is_empty());
    tx.try_push(1).unwrap();
    tx.try_push(2).unwrap();
    assert!(tx.is_full());
    assert_eq!(tx.try_push(3), Err(3));
    assert_eq!(rx.try_pop(), Some(1));
    tx.try_push(3).unwrap();
    assert_eq!(rx.pop_batch(10, |_| {}), 2);
    assert!(rx.is_empty());
    assert_eq!((tx.pushed(), rx.popped()), (3, 3));
}

proptest! {
    /// The ring behaves like a bounded VecDeque for any sequence of pushes and pops.
    #[test]
    fn matches_vecdeque(cap in 1usize..9, ops in proptest::collection::vec((any::<bool>(), any::<u32>()), 0..400)) {
        let (mut tx, mut rx) = channel::<(u32, u32)>(cap).unwrap();
        let real_cap = tx.capacity();
        let mut model: VecDeque<(u32, u32)> = VecDeque::new();
        for (push, v) in ops {
            if push {
                let r = tx.try_push_tagged((v, v ^ 1), v);
                if model.len() < real_cap {
                    prop_assert!(r.is_ok());
                    model.push_back((v, v ^ 1));
                } else {
                    prop_assert_eq!(r, Err((v, v ^ 1)));
                }
            } else {
                let got = rx.try_pop_tagged();
                prop_assert_eq!(got.map(|(x, _)| x), model.pop_front());
                if let Some((x, tag)) = got { prop_assert_eq!(tag, x.0); }
            }
            prop_assert_eq!(rx.is_empty(), model.is_empty());
            prop_assert_eq!(tx.is_full(), model.len() == real_cap);
        }
    }
}

#[test]
fn packed_small_records_share_lines() {
    let (mut tx, mut rx) = packed::channel::<Rec>(16).unwrap();
    assert_eq!(tx.capacity(), 16);
    // A push needs room for the largest record (4 cells) and the end mark
    // after it: 12 one-cell records fit in 16 cells.
    for id in 0..12 {
        assert!(tx.try_push(Rec::new(1, id)).is_ok());
    }
    assert!(tx.is_full());
    assert!(tx.try_push(Rec::new(1, 99)).is_err());
    assert_eq!(tx.unpublished(), 12);
    assert!(rx.is_empty() && rx.try_pop().is_none());
    assert!(tx.publish());
    assert!(!tx.publish());
    for id in 0..12 {
        assert_eq!(rx.try_pop().map(|r| r.id), Some(id));
    }
    assert!(rx.is_empty());
}

#[test]
fn packed_published_at_once_and_behind_pending() {
    let (mut tx, mut rx) = packed::channel::<Rec>(8).unwrap();
    assert!(tx.try_push_published_with(|| Rec::new(2, 0)).is_ok());
    assert_eq!(tx.unpublished(), 0);
    assert_eq!(rx.try_pop().map(|r| (r.cells(), r.id)), Some((2, 0)));
    // A pending record, then one published at once: both go out, in order.
    assert!(tx.try_push(Rec::new(1, 1)).is_ok());
    assert!(rx.try_pop().is_none());
    assert!(tx.try_push_published_with(|| Rec::new(1, 2)).is_ok());
    assert_eq!(tx.unpublished(), 0);
    assert!(!tx.publish());
    assert_eq!(rx.try_pop().map(|r| r.id), Some(1));
    assert_eq!(rx.try_pop().map(|r| r.id), Some(2));
    assert!(rx.try_pop().is_none());
    // Full: `make` comes back uncalled and nothing is published.
    assert!(tx.try_push(Rec::new(3, 3)).is_ok());
    assert!(tx.try_push(Rec::new(1, 4)).is_ok());
    assert!(tx.is_full());
    assert!(tx.try_push_published_with(|| Rec::new(1, 5)).is_err());
    assert!(rx.try_pop().is_none());
    assert!(tx.publish());
    assert_eq!(rx.try_pop().map(|r| r.id), Some(3));
    assert_eq!(rx.try_pop().map(|r| r.id), Some(4));
}

proptest! {
    /// The packed ring is a FIFO of published records: for any sequence of
    /// pushes (1 to 4 cells; pending, or published at once with every
    /// pending one before them), publishes and pops, a pop returns the
    /// oldest published record with every word of its cells intact (also
    /// when it runs into the shadow cells past the end, and over cells
    /// whose header words held body words of older records), a push
    /// succeeds exactly when the largest record and the end mark would
    /// fit, and the counts of unpublished cells and of the space match a
    /// model.
    #[test]
    fn packed_matches_model(
        cap in 8usize..40,
        ops in proptest::collection::vec((0u8..4, 1u64..5), 0..500),
    ) {
        let (mut tx, mut rx) = packed::channel::<Rec>(cap).unwrap();
        let real = tx.capacity();
        prop_assert!(real.is_power_of_two() && real >= cap && real >= 8);
        let mut published: VecDeque<Rec> = VecDeque::new();
        let mut pending: VecDeque<Rec> = VecDeque::new();
        let (mut used, mut next) = (0usize, 0u64);
        for (op, cells) in ops {
            match op {
                0 | 3 => {
                    let now = op == 3;
                    // Room for the largest record (4) and the end mark after it.
                    let fits = used + 4 < real;
                    let ok = if now {
                        tx.try_push_published_with(|| Rec::new(cells, next)).is_ok()
                    } else {
                        tx.try_push(Rec::new(cells, next)).is_ok()
                    };
                    prop_assert_eq!(ok, fits);
                    if fits {
                        pending.push_back(Rec::new(cells, next));
                        used += cells as usize;
                        next += 1;
                        if now {
                            published.extend(pending.drain(..));
                        }
                    }
                }
                1 => {
                    prop_assert_eq!(tx.publish(), !pending.is_empty());
                    published.extend(pending.drain(..));
                }
                _ => {
                    let got = rx.try_pop();
                    let want = published.pop_front();
                    prop_assert_eq!(got.map(|r| (r.cells(), r.id)), want.map(|r| (r.cells(), r.id)));
                    if let (Some(g), Some(w)) = (got, want) {
                        prop_assert_eq!(g.words(), w.words());
                        used -= g.cells() as usize;
                    }
                }
            }
            prop_assert_eq!(tx.unpublished(), pending.iter().map(|r| r.cells() as usize).sum::<usize>());
            prop_assert_eq!(rx.is_empty(), published.is_empty());
            prop_assert_eq!(tx.is_full(), used + 4 >= real);
        }
    }
}
