//! Dev probe: binary tree sum, sequential vs runtime T1/T2 (min of runs).
use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{with_ctx, Ctx, StealExt};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Node {
    val: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}
fn build(n: usize, next: &mut u64) -> Option<Box<Node>> {
    if n == 0 {
        return None;
    }
    *next += 1;
    let val = *next;
    let l = (n - 1) / 2;
    Some(Box::new(Node {
        val,
        left: build(l, next),
        right: build(n - 1 - l, next),
    }))
}
fn seq(t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => n.val + seq(&n.left) + seq(&n.right),
    }
}
fn mc(s: Ctx<'_>, t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => {
            let (a, b) = s.join(|s| mc(s, &n.left), |s| mc(s, &n.right));
            n.val + a + b
        }
    }
}
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |s| s.parse().unwrap());
    let tree = Arc::new(build(n, &mut 0));
    let rts: Vec<Runtime> = [1, 2]
        .iter()
        .map(|&c| {
            Runtime::builder()
                .cores(c)
                .idle(IdlePolicy::Hybrid {
                    spin: Duration::from_micros(50),
                })
                .pin(true)
                .build()
                .unwrap()
        })
        .collect();
    let mut best = [f64::MAX; 3];
    for _ in 0..9 {
        let t = Instant::now();
        black_box(seq(&tree));
        best[0] = best[0].min(t.elapsed().as_secs_f64() * 1e3);
        for (k, rt) in rts.iter().enumerate() {
            let tr = tree.clone();
            let d = rt.install(move || {
                let t = Instant::now();
                black_box(with_ctx(|s| mc(s, &tr)));
                t.elapsed()
            });
            best[k + 1] = best[k + 1].min(d.as_secs_f64() * 1e3);
        }
    }
    println!(
        "tree({n}) min: Ts {:.2}  T1 {:.2} ({:.2}x)  T2 {:.2} (Ts/T2 {:.2})  {:?}",
        best[0],
        best[1],
        best[1] / best[0],
        best[2],
        best[0] / best[2],
        manycore_steal::steal_stats(&rts[1])
    );
    std::mem::forget(tree);
}
