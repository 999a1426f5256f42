use super::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Register the next sequence number.
    Insert,
    /// Remove a sequence number (registered or not, removed or not).
    Remove(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Insert),
        3 => (0u64..64).prop_map(Op::Remove),
    ]
}

proptest! {
    /// Against a plain map: every removal returns exactly what was
    /// registered under that number and not yet removed (once), and the
    /// count of entries agrees, whatever the order of inserts and removals.
    #[test]
    fn behaves_as_a_map(ops in proptest::collection::vec(op(), 0..200)) {
        let mut a: Awaiting<u64> = Awaiting::default();
        let mut model: std::collections::HashMap<u64, u64> = Default::default();
        let mut next = 0u64;
        for o in ops {
            match o {
                Op::Insert => {
                    a.insert(next, next * 10 + 1);
                    model.insert(next, next * 10 + 1);
                    next += 1;
                }
                Op::Remove(s) => {
                    prop_assert_eq!(a.remove(s), model.remove(&s));
                }
            }
            prop_assert_eq!(a.len(), model.len());
        }
        for s in 0..next {
            prop_assert_eq!(a.remove(s), model.remove(&s));
        }
        prop_assert_eq!(a.len(), 0);
    }
}
