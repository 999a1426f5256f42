//! Property: `join` trees of random shape compute what sequential code computes.
#![cfg(not(loom))]

use manycore_steal::{join, with_ctx, Ctx, ThreadPool};
use proptest::prelude::*;
use std::sync::OnceLock;

#[derive(Debug, Clone)]
enum Tree {
    Leaf(u64),
    Node(Box<Tree>, Box<Tree>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = any::<u64>().prop_map(Tree::Leaf);
    leaf.prop_recursive(12, 512, 2, |inner| {
        (inner.clone(), inner).prop_map(|(l, r)| Tree::Node(Box::new(l), Box::new(r)))
    })
}

// A non-commutative combination, so that swapped results would be caught.
fn mix(a: u64, b: u64) -> u64 {
    a.rotate_left(7).wrapping_mul(31) ^ b.wrapping_add(0x9e37_79b9_7f4a_7c15)
}

fn seq(t: &Tree) -> u64 {
    match t {
        Tree::Leaf(v) => *v,
        Tree::Node(l, r) => mix(seq(l), seq(r)),
    }
}

fn par(t: &Tree) -> u64 {
    match t {
        Tree::Leaf(v) => *v,
        Tree::Node(l, r) => {
            let (a, b) = join(|| par(l), || par(r));
            mix(a, b)
        }
    }
}

fn par_ctx(s: Ctx<'_>, t: &Tree) -> u64 {
    match t {
        Tree::Leaf(v) => *v,
        Tree::Node(l, r) => {
            let (a, b) = s.join(|s| par_ctx(s, l), |s| par_ctx(s, r));
            mix(a, b)
        }
    }
}

fn pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| ThreadPool::builder().workers(3).max_sequential(3).build())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn join_trees_match_sequential(t in tree()) {
        let want = seq(&t);
        prop_assert_eq!(par(&t), want);
        prop_assert_eq!(pool().install(|| par(&t)), want);
        prop_assert_eq!(pool().install(|| with_ctx(|s| par_ctx(s, &t))), want);
    }
}
