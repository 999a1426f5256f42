//! Probe `packq`: the spawn stream against `rtrb` in one process, rounds
//! alternating (rtrb, then manycore, then rtrb...), so that both see the
//! same placement of the vCPUs and the same neighbours. Each round moves
//! `N` u64s through rtrb (two threads pinned to CPUs 0 and 1) and `N`
//! spawns of a closure capturing a u64 from core 0 to core 1 of a pinned
//! 2-core runtime inside one `batch_spawns` scope (the throughput rows of
//! `manycore bench pingpong`).
//! Prints each round's rates, then the medians and the median of the
//! per-round ratios manycore / rtrb, and the best round of each (on a
//! shared machine, the rate when no neighbour got in the way).
//!
//! `cargo run --release -p manycore-probes --bin packq -- [ROUNDS=15] [N=2000000]`
//!
//! Knobs: `POLL=1` idles by polling instead of the hybrid policy;
//! `UNSCOPED=1` sends the spawns outside `batch_spawns` (each published at
//! once, the default for a spawn).

use std::time::Instant;

use manycore_cli::benches::pingpong::rt::spawn_batch;
use manycore_probes::{arg, env_set, hybrid, median};
use manycore_rt::{IdlePolicy, Runtime};

/// Mmsg/s of `n` u64s through rtrb, producer on CPU 0, consumer on CPU 1.
fn rtrb_round(n: u64) -> f64 {
    let (mut tx, mut rx) = rtrb::RingBuffer::<u64>::new(4096);
    let consumer = std::thread::spawn(move || {
        let _ = manycore_sync::cpu::pin_current(1);
        let (mut sum, mut got) = (0u64, 0);
        while got < n {
            if let Ok(v) = rx.pop() {
                sum = sum.wrapping_add(v);
                got += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        sum
    });
    // The producer on a thread of its own, so that the main thread (which
    // then waits on the runtime's rows) stays unpinned.
    let producer = std::thread::spawn(move || {
        let _ = manycore_sync::cpu::pin_current(0);
        let t = Instant::now();
        let mut i = 0;
        while i < n {
            if tx.push(i).is_ok() {
                i += 1;
            }
        }
        t
    });
    let t = producer.join().expect("producer");
    let sum = consumer.join().expect("consumer");
    let el = t.elapsed();
    assert_eq!(sum, n.wrapping_mul(n - 1) / 2, "rtrb lost values");
    n as f64 / el.as_secs_f64() / 1e6
}

/// Mmsg/s of `n` spawns from core 0 to core 1 of `rt`, ended by a call:
/// the bench's own batch (`spawn_batch`), inside one `batch_spawns` scope
/// unless `scoped` is false (every spawn published at once).
fn manycore_round(rt: &Runtime, n: u64, scoped: bool) -> f64 {
    let c1 = rt.core(1).clone();
    let el = rt
        .core(0)
        .call(move || spawn_batch(&c1, "manycore", n, !scoped))
        .wait()
        .expect("round")
        .expect("every spawn ran");
    n as f64 / el.as_secs_f64() / 1e6
}

fn main() {
    let rounds: usize = arg(1, 15);
    let n: u64 = arg(2, 2_000_000);
    let idle = if env_set("POLL") {
        IdlePolicy::Poll
    } else {
        hybrid()
    };
    let scoped = !env_set("UNSCOPED");
    let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let x = rtrb_round(n);
        let rt = Runtime::builder()
            .cores(2)
            .idle(idle)
            .pin(true)
            .build()
            .expect("runtime");
        let y = manycore_round(&rt, n, scoped);
        rt.shutdown();
        println!(
            "round {i:2}: rtrb {x:7.1}  manycore {y:7.1} Mmsg/s  ratio {:.2}",
            y / x
        );
        a.push(x);
        b.push(y);
        r.push(y / x);
    }
    let max = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
    println!("max: rtrb {:.1}  manycore {:.1} Mmsg/s", max(&a), max(&b));
    println!(
        "median: rtrb {:.1}  manycore {:.1} Mmsg/s  ratio of medians {:.2}  median ratio {:.2}",
        median(&a).unwrap_or(f64::NAN),
        median(&b).unwrap_or(f64::NAN),
        median(&b).unwrap_or(f64::NAN) / median(&a).unwrap_or(f64::NAN),
        median(&r).unwrap_or(f64::NAN)
    );
}
