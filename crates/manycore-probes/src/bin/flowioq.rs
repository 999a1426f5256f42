//! Probe `flowioq`: the reactor ping-pong of `manycore bench flow --only
//! reactor` (two kernel instances on one core bouncing 8 bytes through two
//! pipes registered with a `Reactor`), alone, for `perf record`/`strace
//! -c`. Prints the median and minimum microseconds per round trip over
//! batches of 2,000, and the reactor's counters per round trip: requests,
//! those answered on the issuers' thread (`direct`), the reactor's kernel
//! waits and the eventfd wake-ups.
//!
//! The set-up and the round trips are the bench's own (`FlowPingPong`,
//! under the epoll backend).
//!
//! With `eventfd` as the second argument, the bench's eventfd variant
//! (two eventfds, each one device both parties use).
//!
//! `cargo run --release -p manycore-probes --bin flowioq -- [SECS=3] [eventfd]`

use manycore_cli::benches::flow::reactor::FlowPingPong;
use manycore_flow::Backend;
use manycore_probes::{arg, arg_str};
use std::time::{Duration, Instant};

const BATCH: u64 = 2_000;

fn main() {
    let secs: f64 = arg(1, 3.0);
    let pp = match arg_str(2).as_deref() {
        Some("eventfd") => FlowPingPong::eventfds(Backend::Epoll),
        _ => FlowPingPong::new(Backend::Epoll),
    }
    .expect("set-up");
    let before = pp.stats();
    let (mut per, mut rounds) = (Vec::new(), 0u64);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        let d = pp.batch(BATCH).expect("a batch");
        per.push(d.as_secs_f64() * 1e6 / BATCH as f64);
        rounds += BATCH;
    }
    let after = pp.stats();
    per.sort_by(f64::total_cmp);
    let r = rounds as f64;
    println!(
        "median {:.2} us, min {:.2} us per round trip ({} batches); per round trip: \
         requests {:.2}, direct {:.2}, waits {:.3}, wakeups {:.3}",
        per[per.len() / 2],
        per[0],
        per.len(),
        (after.requests - before.requests) as f64 / r,
        (after.direct - before.direct) as f64 / r,
        (after.waits - before.waits) as f64 / r,
        (after.wakeups - before.wakeups) as f64 / r,
    );
}
