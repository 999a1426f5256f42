//! Probe `ringq`: throughput of the bare ring (`manycore-ring`), one
//! producer thread pinned to CPU 0 and one consumer pinned to CPU 1, moving
//! 56-byte values (a message's size), with or without a `SeqCst` fence
//! after every push (what the runtime's doorbell protocol costs a sender).
//! Prints five runs of 20 million values.
//!
//! `cargo run --release -p manycore-probes --bin ringq -- [CAPACITY=256] [fence]`
//!
//! Seen on an AMD EPYC host (raw atomic round trip 49-100 ns): 103-144
//! Mmsg/s without the fence, 48-53 with it.

use std::sync::atomic::{fence, Ordering};
use std::time::Instant;

use manycore_probes::{arg, arg_str};

const N: u64 = 20_000_000;

fn main() {
    let cap: usize = arg(1, 256);
    let with_fence = arg_str(2).is_some_and(|a| a == "fence");
    for _ in 0..5 {
        let (mut tx, mut rx) = manycore_ring::channel::<[u64; 7]>(cap).expect("capacity");
        let consumer = std::thread::spawn(move || {
            let _ = manycore_sync::cpu::pin_current(1);
            let (mut sum, mut got) = (0u64, 0);
            while got < N {
                if let Some(v) = rx.try_pop() {
                    sum = sum.wrapping_add(v[0]);
                    got += 1;
                }
            }
            sum
        });
        let _ = manycore_sync::cpu::pin_current(0);
        let t = Instant::now();
        let mut i = 0;
        while i < N {
            if tx.try_push([i, 0, 0, 0, 0, 0, 0]).is_ok() {
                i += 1;
                if with_fence {
                    fence(Ordering::SeqCst);
                }
            }
        }
        let sum = consumer.join().expect("consumer");
        let el = t.elapsed();
        assert_eq!(sum, N * (N - 1) / 2, "lost or duplicated values");
        println!(
            "capacity {cap}, fence per push {with_fence}: {:.1} Mmsg/s",
            N as f64 / el.as_secs_f64() / 1e6
        );
    }
}
