//! Probe `flowioq`: the reactor ping-pong of `manycore bench flow --only
//! reactor` (two kernel instances on one core bouncing 8 bytes through two
//! pipes registered with a `Reactor`), alone, for `perf record`/`strace
//! -c`. Prints the median and minimum microseconds per round trip over
//! batches of 2,000, and the reactor's counters per round trip: requests,
//! those answered on the issuers' thread (`direct`), the reactor's kernel
//! waits and the eventfd wake-ups.
//!
//! `cargo run --release -p manycore-probes --bin flowioq -- [SECS=3]`

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use manycore_flow::{Ctx, Device, Instance, IoResult, Kernel, Reactor};
use manycore_probes::arg;
use manycore_rt::Runtime;

const BATCH: u64 = 2_000;

fn main() {
    let secs: f64 = arg(1, 3.0);
    let rt = Runtime::builder().cores(1).build().expect("runtime");
    let reactor = Reactor::new().expect("reactor");
    let (p1r, p1w) = manycore_flow::pipe().expect("pipe");
    let (p2r, p2w) = manycore_flow::pipe().expect("pipe");
    let reg = |fd| Arc::new(reactor.register(fd).expect("register"));
    let (a_out, a_in) = (reg(p1w), reg(p2r));
    let (b_in, b_out) = (reg(p1r), reg(p2w));
    Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| b_arm(ctx, b_in, b_out)).expect("B");
    let before = reactor.stats();
    let (mut per, mut rounds) = (Vec::new(), 0u64);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        let (tx, rx) = mpsc::channel();
        let (o, i) = (a_out.clone(), a_in.clone());
        Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| {
            a_round(ctx, o, i, BATCH, Instant::now(), tx)
        })
        .expect("A");
        let d = rx.recv_timeout(Duration::from_secs(30)).expect("a batch");
        per.push(d.as_secs_f64() * 1e6 / BATCH as f64);
        rounds += BATCH;
    }
    let after = reactor.stats();
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
    reactor.shutdown();
    rt.shutdown();
}

/// B: read pipe 1; its receiver answers on pipe 2 and reads again.
fn b_arm(ctx: &Ctx<'_, Kernel>, inp: Arc<Device>, out: Arc<Device>) {
    let i2 = inp.clone();
    let receiver = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
        let Some(Ok(data)) = got.into_iter().next() else {
            return;
        };
        if let Ok(ack) = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {}) {
            out.write(ctx, data, ack.slot(0));
        }
        b_arm(ctx, i2, out);
    });
    if let Ok(r) = receiver {
        inp.read(ctx, 8, r.slot(0));
    }
}

/// A: read pipe 2 (its receiver starts the next round), write pipe 1.
fn a_round(
    ctx: &Ctx<'_, Kernel>,
    out: Arc<Device>,
    inp: Arc<Device>,
    left: u64,
    t0: Instant,
    done: mpsc::Sender<Duration>,
) {
    if left == 0 {
        let _ = done.send(t0.elapsed());
        return;
    }
    let (o2, i2) = (out.clone(), inp.clone());
    let receiver = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
        if let Some(Ok(_)) = got.first() {
            a_round(ctx, o2, i2, left - 1, t0, done);
        }
    });
    let ack = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {});
    if let (Ok(r), Ok(a)) = (receiver, ack) {
        inp.read(ctx, 8, r.slot(0));
        out.write(ctx, left.to_le_bytes().to_vec(), a.slot(0));
    }
}
