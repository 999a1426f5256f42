use manycore_rt::{IdlePolicy, Runtime};
use std::cell::Cell;
use std::time::Instant;
thread_local! { static SUM: Cell<u64> = const { Cell::new(0) }; }
fn cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}
fn main() {
    let mode = std::env::args().nth(1).unwrap_or("spawn".into());
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::default())
        .pin(true)
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let r = rt
        .core(0)
        .call(move || {
            let t = Instant::now();
            let c0 = cpu();
            let mut n = 0u64;
            while t.elapsed().as_secs_f64() < 2.0 {
                if mode == "spawn" {
                    for v in 0..100_000u64 {
                        c1.spawn(move || SUM.with(|s| s.set(s.get().wrapping_add(v))))
                            .unwrap();
                    }
                    let _ = c1.call(|| SUM.with(|s| s.get())).wait();
                } else {
                    let mut x = 0u64;
                    for _ in 0..100_000u64 {
                        x = c1.call(move || x + 1).wait().unwrap();
                    }
                }
                n += 100_000;
            }
            (
                n as f64 / t.elapsed().as_secs_f64(),
                (cpu() - c0) / n as f64,
            )
        })
        .wait()
        .unwrap();
    println!("{:.2} M/s, sender CPU {:.1} ns/msg", r.0 / 1e6, r.1);
}
