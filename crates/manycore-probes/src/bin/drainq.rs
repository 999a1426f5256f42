//! Probe `drainq`: how fast core 1 runs spawned closures whose messages are
//! already in its ring (the consumer side alone). Core 0 keeps core 1 busy
//! for 3 ms, sends 60,000 spawns meanwhile (the ring holds them all), and
//! core 1 times from the end of the busy closure to the last spawn. Prints
//! the median of 20 such drains.
//!
//! `cargo run --release -p manycore-probes --bin drainq`
//!
//! No knobs (cores pinned, polling, a ring of 2^17 slots). Seen on an AMD
//! EPYC host: 131-133 Mmsg/s, against 31-62 for the same spawns streamed
//! (`tpq`), where core 1 reads every slot right after core 0 wrote it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use manycore_probes::median;
use manycore_rt::{IdlePolicy, Runtime};

thread_local! {
    static SUM: Cell<u64> = const { Cell::new(0) };
    static START: Cell<Option<Instant>> = const { Cell::new(None) };
}

const N: u64 = 60_000;

fn main() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Poll)
        .pin(true)
        .ring_capacity(1 << 17)
        .build()
        .expect("runtime");
    let c1 = rt.core(1).clone();
    let rates = rt
        .core(0)
        .call(move || {
            (0..20)
                .map(|_| {
                    c1.spawn(|| {
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_millis(3) {}
                        START.with(|c| c.set(Some(Instant::now())));
                    })
                    .expect("spawn");
                    for i in 0..N {
                        c1.spawn(move || SUM.with(|s| s.set(s.get().wrapping_add(i))))
                            .expect("spawn");
                    }
                    let el = c1
                        .call(|| START.with(|c| c.get().map(|t| t.elapsed())))
                        .wait()
                        .expect("call")
                        .expect("start mark");
                    N as f64 / el.as_secs_f64() / 1e6
                })
                .collect::<Vec<f64>>()
        })
        .wait()
        .expect("probe");
    let rate = median(&rates).unwrap_or(f64::NAN);
    println!("consumer-only drain: {rate:.1} Mmsg/s (median of 20)");
    rt.shutdown();
}
