use super::*;
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
