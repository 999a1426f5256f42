//! `knary(k, m, i)`, the synthetic benchmark of Leberecht's MuSE paper
//! (section 3.2): a spawn tree of height `m` in which every inner node does
//! `i` idle operations and then spawns `k` subtasks. Written once against
//! [`Ctx::join`]: it runs sequentially ([`Ctx::sequential`]) or on any
//! number of ranks (`World::run_join`) with the same result, the number of
//! nodes, `(k^m - 1) / (k - 1)` (for k > 1).
//!
//! ```
//! use manycore_mpi::{knary, Ctx, Knary};
//! assert_eq!(knary.run(Ctx::sequential(), Knary::new(4, 5, 100)), 341);
//! ```

use crate::join::Ctx;
use serde::{Deserialize, Serialize};

/// The parameters of one [`knary`] node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knary {
    /// Subtasks spawned by every inner node.
    pub k: u32,
    /// Height of the tree (levels of nodes).
    pub m: u32,
    /// Idle operations per node.
    pub i: u32,
    /// This node's level, from 1 at the root.
    pub level: u32,
}

impl Knary {
    /// The root of `knary(k, m, i)`.
    pub fn new(k: u32, m: u32, i: u32) -> Self {
        Knary { k, m, i, level: 1 }
    }

    fn child(self) -> Self {
        Knary {
            level: self.level + 1,
            ..self
        }
    }

    /// The number of nodes of the whole tree (what `knary` returns).
    pub fn nodes(&self) -> u64 {
        // A tree of height 0 is still its root.
        (0..self.m.max(1)).map(|d| u64::from(self.k).pow(d)).sum()
    }
}

/// `i` idle operations the optimizer cannot remove.
fn idle(i: u32) {
    let mut x = 0u64;
    for j in 0..i {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(u64::from(j)));
    }
    std::hint::black_box(x);
}

fn children(cx: Ctx<'_>, p: Knary, n: u32) -> u64 {
    if n <= 1 {
        return knary.run(cx, p.child());
    }
    let (a, b) = cx.join(|cx| children(cx, p, n - 1), &knary, p.child());
    a + b
}

crate::remote_fn! {
    /// One node of `knary(k, m, i)`, the synthetic benchmark of
    /// Leberecht's MuSE paper (section 3.2): a spawn tree of height `m` in
    /// which every node does `i` idle operations and every inner node then
    /// spawns `k` subtasks, through [`Ctx::join`]. Returns the number of
    /// nodes of its subtree, so the root returns [`Knary::nodes`], however
    /// many ranks ran it.
    ///
    /// ```
    /// use manycore_mpi::{knary, Ctx, Knary};
    /// assert_eq!(knary.run(Ctx::sequential(), Knary::new(4, 5, 100)), 341);
    /// ```
    pub fn knary(cx: Ctx, p: Knary) -> u64 {
        idle(p.i);
        if p.level >= p.m || p.k == 0 {
            return 1;
        }
        1 + children(cx, p, p.k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_papers_tree() {
        // knary(4, 10, _) makes 349525 calls: the paper's "349531 total
        // subgraph calls" less the few of its runtime's start.
        let p = Knary::new(4, 10, 0);
        assert_eq!(p.nodes(), 349_525);
        assert_eq!(knary.run(Ctx::sequential(), Knary::new(4, 6, 5)), 1365);
        assert_eq!(knary.run(Ctx::sequential(), Knary::new(1, 7, 0)), 7);
        assert_eq!(knary.run(Ctx::sequential(), Knary::new(3, 1, 0)), 1);
        for p in [
            Knary::new(0, 3, 0),
            Knary::new(3, 0, 0),
            Knary::new(2, 5, 0),
        ] {
            assert_eq!(knary.run(Ctx::sequential(), p), p.nodes(), "{p:?}");
        }
    }
}
