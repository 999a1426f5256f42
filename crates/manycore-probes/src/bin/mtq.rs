//! mtq: what one MPI round trip costs under `MPI_THREAD_MULTIPLE` (Open
//! MPI's own locks on every call, no lock of ours) against
//! `MPI_THREAD_SERIALIZED` with a mutex taken around every MPI call (the
//! way `manycore-mpi`'s progress lock guards them), on the calls a poll
//! makes: a non-blocking send and a posted receive, each tested until done.
//!
//! ```text
//! cargo build --release -p manycore-probes --features mpi --bin mtq
//! mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 target/release/mtq serialized
//! mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 target/release/mtq multiple
//! ```
//!
//! Rank 0 prints the level asked for and provided, and the median over 11
//! batches (the first is warm-up) of each batch's mean round trip.

use manycore_mpi::mpi;
use mpi::environment::Threading;
use mpi::traits::*;
use std::sync::Mutex;
use std::time::Instant;

const TAG: i32 = 1;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let level = args.get(1).map(String::as_str).unwrap_or("serialized");
    let rounds: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let (threading, locked) = match level {
        "multiple" => (Threading::Multiple, false),
        _ => (Threading::Serialized, true),
    };
    let Some((universe, provided)) = mpi::initialize_with_threading(threading) else {
        eprintln!("mtq: MPI was already initialized");
        std::process::exit(1);
    };
    let world = universe.world();
    let me = world.rank();
    if world.size() != 2 {
        eprintln!("mtq: run on 2 ranks");
        std::process::exit(2);
    }
    let peer = world.process_at_rank(1 - me);
    let lock = Mutex::new(());
    // The lock around one MPI call, when the level needs ours.
    let take = || locked.then(|| lock.lock().unwrap_or_else(|e| e.into_inner()));
    let a = [7u8; 41];
    let mut b = [0u8; 41];
    let mut means = Vec::new();
    for batch in 0..11 {
        world.barrier();
        let t = Instant::now();
        for _ in 0..rounds {
            for step in 0..2 {
                mpi::request::scope(|sc| {
                    let g = take();
                    let mut r = if (step == 0) == (me == 0) {
                        peer.immediate_send_with_tag(sc, &a[..], TAG)
                    } else {
                        peer.immediate_receive_into_with_tag(sc, &mut b[..], TAG)
                    };
                    drop(g);
                    loop {
                        let g = take();
                        let done = r.test();
                        drop(g);
                        match done {
                            Ok(_) => break,
                            Err(again) => r = again,
                        }
                    }
                });
            }
        }
        if batch > 0 {
            means.push(t.elapsed().as_secs_f64() * 1e9 / rounds as f64);
        }
    }
    if me == 0 {
        means.sort_by(f64::total_cmp);
        println!(
            "mtq {level}: provided {provided:?}, round trip median {:.0} ns (batches {:.0}-{:.0} ns)",
            means[means.len() / 2],
            means[0],
            means[means.len() - 1]
        );
    }
}
