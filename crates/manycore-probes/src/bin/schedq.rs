//! schedq: the reduce over 4 ranks x 2 cores of `manycore bench mpi`'s
//! `coll` part, raw `MPI_Reduce` and manycore's `World::reduce` rows
//! alternated, for a scheduler trace (`perf sched record -a`) of the two.
//! Each rank names its main thread after the row it runs (`r<rank>-raw<i>`,
//! `r<rank>-mc<i>`, through `/proc/thread-self/comm`; `r<rank>-mt<i>` from
//! the end of the manycore row's untimed warm-up), so that the trace's
//! switch events mark where every row, and its timed part, starts and ends.
//!
//! ```text
//! cargo build --release -p manycore-probes --features mpi --bin schedq
//! perf sched record -a -o sched.data -- mpirun --allow-run-as-root --oversubscribe \
//!     --bind-to none -n 4 target/release/schedq 10
//! ```
//!
//! Rank 0 prints each row's time per reduce (us, the slowest rank's, from
//! a barrier to the end of a closing all-reduce, as `bench mpi` times it).

use manycore_mpi::mpi;
use manycore_mpi::World;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Names the calling thread (15 bytes at most are kept).
fn name(s: &str) {
    let _ = std::fs::write("/proc/thread-self/comm", s);
}

fn raw(w: &World, k: usize) -> f64 {
    let me = w.rank() as u64;
    w.with_mpi(move |c| {
        let root = c.process_at_rank(0);
        let x = me + 1;
        let mut y = 0u64;
        c.barrier();
        let t = Instant::now();
        for _ in 0..k {
            if me == 0 {
                root.reduce_into_root(&x, &mut y, SystemOperation::sum());
            } else {
                root.reduce_into(&x, SystemOperation::sum());
            }
        }
        let mut z = 0u64;
        c.all_reduce_into(&y, &mut z, SystemOperation::sum());
        black_box(z);
        t.elapsed().as_secs_f64() * 1e6 / k as f64
    })
    .expect("with_mpi")
}

fn mc(w: &World, k: usize, timed: &str) -> f64 {
    let me = w.rank() as u64;
    let n = w.size() as u64;
    for _ in 0..k / 10 + 1 {
        w.reduce(me + 1, |a, b| a + b).expect("reduce");
    }
    w.all_reduce(0u8, |a, _| a).expect("barrier");
    name(timed);
    let t = Instant::now();
    for _ in 0..k {
        let r = w.reduce(me + 1, |a, b| a + b).expect("reduce");
        assert!(me != 0 || r == Some(n * (n + 1) / 2));
    }
    w.all_reduce(0u64, |a, b| a + b).expect("all_reduce");
    t.elapsed().as_secs_f64() * 1e6 / k as f64
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let w = World::builder()
        .cores(2)
        .timeout(Duration::from_secs(60))
        .init()
        .expect("World::init");
    let r = w.rank();
    name(&format!("r{r}-main"));
    let k = 1000;
    raw(&w, 10);
    mc(&w, 10, &format!("r{r}-main"));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..reps {
        for row in [i % 2, 1 - i % 2] {
            let t = if row == 0 {
                name(&format!("r{r}-raw{i}"));
                raw(&w, k)
            } else {
                name(&format!("r{r}-mc{i}"));
                mc(&w, k, &format!("r{r}-mt{i}"))
            };
            name(&format!("r{r}-main"));
            let t = w.all_reduce(t, f64::max).expect("max");
            if row == 0 {
                a.push(t)
            } else {
                b.push(t)
            }
        }
    }
    if r == 0 {
        for i in 0..reps {
            println!(
                "rep {i}: raw {:.3} us, manycore {:.3} us, {:.2}x",
                a[i],
                b[i],
                b[i] / a[i]
            );
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (ma, mb) = (med(&mut a), med(&mut b));
        println!(
            "median: raw {ma:.3} us, manycore {mb:.3} us, {:.2}x",
            mb / ma
        );
    }
    w.finalize().expect("finalize");
}
