//! A rank that exits without finalizing, in the middle of a stream of calls
//! while rank 0 waits on a call to it: fatal (`src/README.md`, "Faults"),
//! and the launcher must then end the whole job with a failure status
//! rather than leave rank 0 waiting forever. `run-tests.sh` runs it as
//! `mpirun -n 2` under `timeout` and checks that the job ends, non-zero,
//! and not by the timeout. Alone (one rank, as `cargo test` runs it) there
//! is nobody to exit: it says so and passes.

use manycore_mpi::{remote_fn, World};
use std::time::Duration;

/// The call in whose middle rank 1 exits.
const EXIT_AT: u64 = 100;

remote_fn! {
    /// Call `i` of the stream; on rank 1, call `EXIT_AT` exits the process
    /// with status 3, its reply never sent.
    fn step(i: u64) -> u64 {
        let w = World::current().expect("a world");
        if w.rank() == 1 && i == EXIT_AT {
            eprintln!("rank 1: exiting with status 3 in the middle of call {i}, without finalizing");
            std::process::exit(3);
        }
        i + 1
    }
}

fn main() {
    let world = World::builder().cores(1).init().expect("World::init");
    if world.size() == 1 {
        world.finalize().expect("finalize");
        println!("rank_exit: needs 2 ranks; skipped on 1");
        println!("0 passed, 0 failed, 1 skipped");
        return;
    }
    if world.rank() == 0 {
        let p = world.place(1, 0);
        for i in 0..10 * EXIT_AT {
            // Four calls in flight, waited for without a bound: only the
            // launcher can end the wait for the call rank 1 dies in.
            let calls: Vec<_> = (0..4)
                .map(|k| (4 * i + k, p.call(&step, 4 * i + k)))
                .collect();
            for (j, c) in calls {
                let r = c.wait();
                if r != Ok(j + 1) {
                    println!("rank_exit: FAILED: call {j} answered {r:?}");
                    std::process::exit(1);
                }
            }
        }
        println!("rank_exit: FAILED: the stream ended, rank 1 never exited");
        std::process::exit(1);
    }
    // The other ranks serve until the launcher ends the job.
    loop {
        std::thread::sleep(Duration::from_millis(50));
    }
}
