//! The fork-join workloads of `manycore bench steal`: fib, knary, a tree sum
//! and quicksort, each sequential (`_seq`) and once per fork-join
//! implementation: manycore-steal with a context (`_mc`) or the plain
//! `join` (`_mc_plain`), rayon (`_rayon`) and chili (`_chili`). The parallel
//! versions are written once, in two macros (for a join that hands each side
//! a context, and for one that does not), so that every implementation runs
//! the same code. Public so that the dev probes (`crates/manycore-probes`)
//! time exactly these functions.

use std::hint::black_box;

use manycore_steal::Ctx;

/// fib(n), no cutoff.
pub fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}

/// The paper's idle work: `i` dependent steps the optimiser cannot remove.
/// Out of line, so that every implementation runs this one copy of the loop:
/// inlined copies are placed differently in each kernel, and where a copy's
/// loop falls across a 64-byte boundary it ran up to 8% slower (i = 10000),
/// whoever's kernel it was in.
#[inline(never)]
pub fn idle(i: u32, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..i {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

/// The parameters of knary(k, m, i).
#[derive(Debug, Clone, Copy)]
pub struct Knary {
    /// Children per node.
    pub k: u32,
    /// Depth of the tree.
    pub m: u32,
    /// Idle steps per node.
    pub i: u32,
}

/// knary(k, m, i): every node does `i` idle steps, then (above depth m)
/// runs its k children; the parallel versions split the k children in
/// halves by binary joins.
pub fn knary_seq(p: Knary, depth: u32) -> u64 {
    let mut acc = idle(p.i, u64::from(depth));
    if depth + 1 < p.m {
        for _ in 0..p.k {
            acc = acc.wrapping_add(knary_seq(p, depth + 1));
        }
    }
    acc
}
/// A node of a binary tree of u64s.
#[derive(Debug)]
pub struct Node {
    /// Its value.
    pub val: u64,
    /// The left subtree.
    pub left: Option<Box<Node>>,
    /// The right subtree.
    pub right: Option<Box<Node>>,
}

/// A balanced binary tree of exactly `n` nodes, allocated in pre-order
/// (parent, left subtree, right subtree), as straightforward code builds it.
/// The layout matters at 10 million nodes: a left-first walk (sequential,
/// manycore, rayon) then streams forward through memory. chili runs `b`
/// (the right subtree) first, which favours the reverse, post-order layout.
pub fn build_tree(n: usize, next: &mut u64) -> Option<Box<Node>> {
    if n == 0 {
        return None;
    }
    *next += 1;
    let mut node = Box::new(Node {
        val: *next,
        left: None,
        right: None,
    });
    let l = (n - 1) / 2;
    node.left = build_tree(l, next);
    node.right = build_tree(n - 1 - l, next);
    Some(node)
}
/// The sum of a tree's values.
pub fn sum_seq(t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => n.val + sum_seq(&n.left) + sum_seq(&n.right),
    }
}
/// Drops a tree without deep recursion (10 million nodes).
pub fn drop_tree(t: Option<Box<Node>>) {
    let mut stack: Vec<Box<Node>> = t.into_iter().collect();
    while let Some(mut n) = stack.pop() {
        stack.extend(n.left.take());
        stack.extend(n.right.take());
    }
}

/// Below this length quicksort sorts by insertion.
pub const SORT_CUTOFF: usize = 32;

pub fn insertion_sort(v: &mut [u64]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}
/// Hoare partition around the median of three; returns the split point.
pub fn partition(v: &mut [u64]) -> usize {
    let (a, b, c) = (v[0], v[v.len() / 2], v[v.len() - 1]);
    let pivot = a.max(b).min(a.min(b).max(c));
    let (mut i, mut j) = (0usize, v.len() - 1);
    loop {
        while v[i] < pivot {
            i += 1;
        }
        while v[j] > pivot {
            j -= 1;
        }
        if i >= j {
            return j + 1;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
}
/// Quicksort with insertion sort below [`SORT_CUTOFF`].
pub fn qsort_seq(v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    qsort_seq(l);
    qsort_seq(r);
}
/// The parallel workloads for a join that hands each side a context `s` of
/// type `$ctx` (`s.join(|s| a, |s| b)`), under the names given.
macro_rules! with_context {
    ($ctx:ty => $fib:ident, $knary:ident, $children:ident, $sum:ident, $qsort:ident) => {
        /// fib(n), a join at every call.
        pub fn $fib(s: $ctx, n: u64) -> u64 {
            if n < 2 {
                return n;
            }
            let (a, b) = s.join(|s| $fib(s, n - 1), |s| $fib(s, n - 2));
            a + b
        }
        /// knary(k, m, i) from `depth` down.
        pub fn $knary(s: $ctx, p: Knary, depth: u32) -> u64 {
            let acc = idle(p.i, u64::from(depth));
            if depth + 1 < p.m {
                acc.wrapping_add($children(s, p, depth + 1, p.k))
            } else {
                acc
            }
        }
        /// `n` children at `depth`, split in halves.
        pub fn $children(s: $ctx, p: Knary, depth: u32, n: u32) -> u64 {
            if n == 1 {
                return $knary(s, p, depth);
            }
            let h = n / 2;
            let (a, b) = s.join(
                |s| $children(s, p, depth, h),
                |s| $children(s, p, depth, n - h),
            );
            a.wrapping_add(b)
        }
        /// The sum of a tree's values.
        pub fn $sum(s: $ctx, t: &Option<Box<Node>>) -> u64 {
            match t {
                None => 0,
                Some(n) => {
                    let (a, b) = s.join(|s| $sum(s, &n.left), |s| $sum(s, &n.right));
                    n.val + a + b
                }
            }
        }
        /// Quicksort, the two parts in a join.
        pub fn $qsort(s: $ctx, v: &mut [u64]) {
            if v.len() <= SORT_CUTOFF {
                return insertion_sort(v);
            }
            let m = partition(v);
            let (l, r) = v.split_at_mut(m);
            s.join(|s| $qsort(s, l), |s| $qsort(s, r));
        }
    };
}

/// The parallel workloads for a join of two plain closures (`$join(|| a,
/// || b)`), under the names given.
macro_rules! without_context {
    ($join:path => $fib:ident, $knary:ident, $children:ident, $sum:ident, $qsort:ident) => {
        /// fib(n), a join at every call.
        pub fn $fib(n: u64) -> u64 {
            if n < 2 {
                return n;
            }
            let (a, b) = $join(|| $fib(n - 1), || $fib(n - 2));
            a + b
        }
        /// knary(k, m, i) from `depth` down.
        pub fn $knary(p: Knary, depth: u32) -> u64 {
            let acc = idle(p.i, u64::from(depth));
            if depth + 1 < p.m {
                acc.wrapping_add($children(p, depth + 1, p.k))
            } else {
                acc
            }
        }
        /// `n` children at `depth`, split in halves.
        pub fn $children(p: Knary, depth: u32, n: u32) -> u64 {
            if n == 1 {
                return $knary(p, depth);
            }
            let h = n / 2;
            let (a, b) = $join(
                || $children(p, depth, h),
                || $children(p, depth, n - h),
            );
            a.wrapping_add(b)
        }
        /// The sum of a tree's values.
        pub fn $sum(t: &Option<Box<Node>>) -> u64 {
            match t {
                None => 0,
                Some(n) => {
                    let (a, b) = $join(|| $sum(&n.left), || $sum(&n.right));
                    n.val + a + b
                }
            }
        }
        /// Quicksort, the two parts in a join.
        pub fn $qsort(v: &mut [u64]) {
            if v.len() <= SORT_CUTOFF {
                return insertion_sort(v);
            }
            let m = partition(v);
            let (l, r) = v.split_at_mut(m);
            $join(|| $qsort(l), || $qsort(r));
        }
    };
}

with_context!(Ctx<'_> => fib_mc, knary_mc, knary_mc_children, sum_mc, qsort_mc);
with_context!(&mut chili::Scope<'_> =>
    fib_chili, knary_chili, knary_chili_children, sum_chili, qsort_chili);
without_context!(rayon::join =>
    fib_rayon, knary_rayon, knary_rayon_children, sum_rayon, qsort_rayon);
without_context!(manycore_steal::join =>
    fib_mc_plain, knary_mc_plain, knary_mc_plain_children, sum_mc_plain, qsort_mc_plain);

pub fn random_u64s(n: usize) -> Vec<u64> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// `iters` dependent multiply-adds: busy work of a known length.
pub fn spin_work(iters: u64) -> u64 {
    let mut x = 1u64;
    for _ in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}
