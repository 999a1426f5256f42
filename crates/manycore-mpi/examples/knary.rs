//! `knary(k, m, i)` of the MuSE paper as a distributed join over every rank
//! of the job: the same result on 1 to 4 ranks.
//!
//! ```text
//! cargo build --release -p manycore-mpi --features mpi --example knary
//! mpirun --allow-run-as-root --oversubscribe -n 4 target/release/examples/knary [k m i]
//! ```
//!
//! Built without the `mpi` feature it runs the same program sequentially,
//! with the same result.

use manycore_mpi::{knary, Ctx, Knary};
use std::time::Instant;

/// `knary(k, m, i)` from the command line, (4, 8, 1000) by default.
fn params() -> Result<Knary, std::num::ParseIntError> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    Ok(match args[..] {
        [k, m, i] => Knary::new(k, m, i),
        _ => Knary::new(4, 8, 1000),
    })
}

#[cfg(not(feature = "mpi"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p = params()?;
    let t = Instant::now();
    let nodes = knary.run(Ctx::sequential(), p);
    println!(
        "knary({}, {}, {}) = {nodes} nodes, sequentially in {:.3} s (built without the mpi feature)",
        p.k,
        p.m,
        p.i,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(feature = "mpi")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p = params()?;
    let (k, m, i) = (p.k, p.m, p.i);
    let world = manycore_mpi::World::init()?;
    let t = Instant::now();
    let nodes = world.run_join(&knary, p)?;
    let elapsed = t.elapsed();
    // The result is the same on any number of ranks; the work moved.
    let s = world.join_stats();
    let moved = world.all_reduce(vec![(s.promoted, s.stolen)], |mut a, b| {
        a.extend(b);
        a
    })?;
    if world.rank() == 0 {
        let t1 = Instant::now();
        let seq = knary.run(Ctx::sequential(), p);
        let seq_time = t1.elapsed();
        assert_eq!(nodes, seq);
        println!(
            "knary({k}, {m}, {i}) = {nodes} nodes on {} ranks in {:.3} s (sequential {:.3} s)",
            world.size(),
            elapsed.as_secs_f64(),
            seq_time.as_secs_f64()
        );
        for (r, (promoted, stolen)) in moved.iter().enumerate() {
            println!("  rank {r}: promoted {promoted} frames, ran {stolen} stolen tasks");
        }
    }
    world.finalize()?;
    Ok(())
}
