//! Round trips between rank 0 and rank 1, in one job, interleaved: a raw
//! MPI ping-pong of 4 bytes (on the engine thread, through
//! `World::with_mpi`) against `place.call` of a registered function that
//! returns its `u32` argument, from rank 0's main thread to a core of rank
//! 1 (and, for scale, to a core of rank 0 itself). Medians of the
//! repetitions, in microseconds.
//!
//! ```text
//! cargo build --release -p manycore-mpi --features mpi --example pingpong
//! mpirun --allow-run-as-root --oversubscribe -n 2 target/release/examples/pingpong [sleep|hybrid|poll]
//! ```
//!
//! Built without the `mpi` feature it only says so.

#[cfg(not(feature = "mpi"))]
fn main() {
    println!("pingpong measures MPI round trips: build it with --features mpi and run it under mpirun -n 2");
}

#[cfg(feature = "mpi")]
mod mpi_pingpong {
    use manycore_mpi::mpi;
    use manycore_mpi::{remote_fn, World};
    use manycore_rt::IdlePolicy;
    use mpi::traits::*;
    use std::time::{Duration, Instant};

    remote_fn! {
        fn echo(x: u32) -> u32 { x }
    }

    const ITERS: u32 = 2000;
    const REPS: usize = 7;
    const TAG: mpi::Tag = 7;
    const T: Duration = Duration::from_secs(10);

    /// Mean round trip of `ITERS` raw 4-byte ping-pongs between ranks 0 and 1.
    fn raw(world: &World) -> Duration {
        world
            .with_mpi(|c| {
                let me = c.rank();
                let peer = c.process_at_rank(1 - me);
                let mut buf = [0u8; 4];
                let t = Instant::now();
                for _ in 0..ITERS {
                    if me == 0 {
                        peer.send_with_tag(&buf[..], TAG);
                        peer.receive_into_with_tag(&mut buf[..], TAG);
                    } else {
                        peer.receive_into_with_tag(&mut buf[..], TAG);
                        peer.send_with_tag(&buf[..], TAG);
                    }
                }
                t.elapsed() / ITERS
            })
            .expect("engine")
    }

    /// Mean round trip of `ITERS` calls of `echo` on (rank, core 0).
    fn calls(world: &World, rank: usize) -> Duration {
        let p = world.place(rank, 0);
        let t = Instant::now();
        for i in 0..ITERS {
            assert_eq!(p.call(&echo, i).wait_timeout(T), Ok(i));
        }
        t.elapsed() / ITERS
    }

    fn median(mut v: Vec<Duration>) -> f64 {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6
    }

    pub fn main() -> Result<(), Box<dyn std::error::Error>> {
        let policy = match std::env::args().nth(1).as_deref() {
            Some("poll") => IdlePolicy::Poll,
            Some("hybrid") => IdlePolicy::default(),
            _ => IdlePolicy::Sleep,
        };
        let world = World::builder().idle(policy).init()?;
        if world.size() < 2 {
            eprintln!("run with mpirun -n 2");
            return Ok(());
        }
        let (mut r, mut c1, mut c0) = (vec![], vec![], vec![]);
        let barrier = |w: &World| w.all_reduce(0u8, |a, _| a).map(|_| ());
        for _ in 0..REPS {
            if world.rank() < 2 {
                r.push(raw(&world));
            }
            barrier(&world)?;
            if world.rank() == 0 {
                c1.push(calls(&world, 1));
                c0.push(calls(&world, 0));
            }
            barrier(&world)?;
        }
        if world.rank() == 0 {
            let (r, c1, c0) = (median(r), median(c1), median(c0));
            println!("idle policy of the cores: {policy:?}; {REPS} repetitions of {ITERS} round trips, medians");
            println!("raw MPI 4-byte ping-pong, engine threads:  {r:8.2} us");
            println!(
                "place.call(echo) rank 0 -> rank 1 core 0: {c1:8.2} us  ({:.1}x raw)",
                c1 / r
            );
            println!("place.call(echo) rank 0 -> rank 0 core 0: {c0:8.2} us");
        }
        world.finalize()?;
        Ok(())
    }
}

#[cfg(feature = "mpi")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    mpi_pingpong::main()
}
