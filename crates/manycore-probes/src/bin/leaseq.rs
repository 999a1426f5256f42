//! Probe `leaseq`: what the reactor's lease costs an edge that no issuer
//! takes. An outside issuer makes `WRITES` writes to a pipe device (each
//! goes through and, with a read parked elsewhere, polls the reactor's
//! epoll instance, which keeps the reactor thread out of it); then a
//! thread outside the reactor writes to the pipe of the parked read, and
//! the probe times the read's answer from that write. Prints the median,
//! 90th percentile and maximum microseconds over `ROUNDS` rounds.
//!
//! `cargo run --release -p manycore-probes --bin leaseq -- [WRITES=200] [ROUNDS=200]`

use manycore_flow::{pipe, Backend, IoResult, Kernel, Outcome, Outside, Reactor};
use manycore_probes::arg;
use manycore_rt::Runtime;
use std::fs::File;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn main() {
    let writes: u64 = arg(1, 200);
    let rounds: usize = arg(2, 200);
    let rt = Runtime::builder().cores(1).build().expect("runtime");
    let reactor = Reactor::with_backend(Backend::Epoll).expect("reactor");
    let (xr, xw) = pipe().expect("pipe");
    let (yr, yw) = pipe().expect("pipe");
    let x = reactor.register(xr).expect("register");
    let y = reactor.register(yw).expect("register");
    let (mut xw, mut yr) = (File::from(xw), File::from(yr));
    let by = Outside::<Kernel>::new();
    let mut lat = Vec::with_capacity(rounds);
    let mut sink = vec![0u8; writes as usize];
    for _ in 0..rounds {
        let (done, out) = Outcome::<IoResult<Vec<u8>>>::new(rt.core(0)).expect("outcome");
        x.read(&by, 1, done);
        for _ in 0..writes {
            let (wrote, n) = Outcome::<IoResult<usize>>::new(rt.core(0)).expect("outcome");
            y.write(&by, b"y".to_vec(), wrote);
            n.wait_timeout(Duration::from_secs(10))
                .expect("a write's answer")
                .expect("a write");
        }
        let t0 = Instant::now();
        xw.write_all(b"x").expect("the outside write");
        out.wait_timeout(Duration::from_secs(10))
            .expect("the read's answer")
            .expect("a read");
        lat.push(t0.elapsed().as_secs_f64() * 1e6);
        yr.read_exact(&mut sink).expect("drain");
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "edge after {writes} polling writes, answered in: median {:.1} us, p90 {:.1} us, max {:.1} us ({rounds} rounds)",
        lat[lat.len() / 2],
        lat[lat.len() * 9 / 10],
        lat[lat.len() - 1],
    );
}
