//! Probe `edgeq`: `manycore bench steal`'s `tree_sum(1023)x1000` (a tree of
//! about a microsecond, summed 1000 times in one `with_ctx`) on runtimes of
//! one and two cores set up as the bench sets them up. Prints the medians of
//! interleaved runs (sequential, T1, T2), their ratios, and the pool's steal
//! counters per T2 run: how many trees were split, and how many pieces came
//! back to a thief that had just returned one (handbacks).
//!
//! `cargo run --release -p manycore-probes --bin edgeq -- [REPS=21]`

use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{steal_stats, with_ctx, Ctx, StealExt};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Node {
    val: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

/// A balanced tree of `n` nodes, allocated in pre-order (as the bench's).
fn build(n: usize, next: &mut u64) -> Option<Box<Node>> {
    if n == 0 {
        return None;
    }
    let val = *next;
    *next += 1;
    let l = (n - 1) / 2;
    let left = build(l, next);
    let right = build(n - 1 - l, next);
    Some(Box::new(Node { val, left, right }))
}

fn sum_seq(t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => n.val + sum_seq(&n.left) + sum_seq(&n.right),
    }
}

fn sum_mc(s: Ctx<'_>, t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => {
            let (a, b) = s.join(|s| sum_mc(s, &n.left), |s| sum_mc(s, &n.right));
            n.val + a + b
        }
    }
}

fn runtime(cores: usize) -> Runtime {
    let rt = Runtime::builder()
        .cores(cores)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .build()
        .expect("runtime");
    manycore_steal::attach(&rt).expect("attach");
    rt
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(21);
    let rts = [runtime(1), runtime(2)];
    let tree = Arc::new(build(1023, &mut 0));
    let want: u64 = 1000 * (0..1023u64).sum::<u64>();
    let on = |rt: &Runtime| -> f64 {
        let t = tree.clone();
        rt.install(move || {
            let s = Instant::now();
            let r = with_ctx(|c| (0..1000).map(|_| sum_mc(c, black_box(&t))).sum::<u64>());
            assert_eq!(r, want);
            s.elapsed().as_secs_f64() * 1e3
        })
    };
    let (mut ts, mut t1, mut t2) = (Vec::new(), Vec::new(), Vec::new());
    let (mut promotions, mut handbacks, mut reclaims) = (0, 0, 0);
    for _ in 0..reps {
        std::thread::sleep(Duration::from_millis(5));
        let s = Instant::now();
        let r: u64 = (0..1000).map(|_| sum_seq(black_box(&tree))).sum();
        ts.push(s.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r, want);
        std::thread::sleep(Duration::from_millis(5));
        t1.push(on(&rts[0]));
        std::thread::sleep(Duration::from_millis(5));
        let before = steal_stats(&rts[1]);
        t2.push(on(&rts[1]));
        let after = steal_stats(&rts[1]);
        promotions += after.promotions - before.promotions;
        handbacks += after.handbacks - before.handbacks;
        reclaims += after.reclaims - before.reclaims;
    }
    let (ts, t1, t2) = (median(ts), median(t1), median(t2));
    let r = reps as u64;
    println!(
        "tree_sum(1023)x1000: Ts {ts:.3} ms  T1 {t1:.3} ms ({:.2}x)  T2 {t2:.3} ms ({:.2}x)  \
         per T2 run: promotions {} handbacks {} reclaims {}",
        t1 / ts,
        t2 / ts,
        promotions / r,
        handbacks / r,
        reclaims / r
    );
    for rt in &rts {
        rt.shutdown();
    }
}
