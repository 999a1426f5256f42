//! Dev probe: how fast core 1 runs spawned closures whose messages are
//! already in its ring (the consumer side alone). Core 0 keeps core 1 busy
//! for 3 ms, sends 60,000 spawns meanwhile (the ring holds them all), and
//! core 1 times from the end of the busy closure to the last spawn.
//!
//! `cargo run --release -p manycore-rt --example drainq`
//!
//! Seen on an AMD EPYC host: 131-133 Mmsg/s, against 31-62 for the same
//! spawns streamed (`tpq`), where core 1 reads every slot right after core
//! 0 wrote it.
use manycore_rt::{IdlePolicy, Runtime};
use std::cell::Cell;
use std::time::{Duration, Instant};

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
    let rate = rt
        .core(0)
        .call(move || {
            let mut rates = Vec::new();
            for _ in 0..20 {
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
                rates.push(N as f64 / el.as_secs_f64() / 1e6);
            }
            rates.sort_by(|a, b| a.total_cmp(b));
            rates[rates.len() / 2]
        })
        .wait()
        .expect("probe");
    println!("consumer-only drain: {rate:.1} Mmsg/s (median of 20)");
    rt.shutdown();
}
