use manycore_rt::{IdlePolicy, Runtime};
use std::cell::Cell;
use std::time::Instant;
thread_local! { static SUM: Cell<u64> = const { Cell::new(0) }; }

fn rt_tput(policy: IdlePolicy, n: u64) -> f64 {
    let rt = Runtime::builder().cores(2).idle(policy).build().unwrap();
    let c1 = rt.core(1).clone();
    let mps = rt
        .core(0)
        .call(move || {
            let t0 = Instant::now();
            for i in 0..n {
                c1.spawn(move || SUM.with(|s| s.set(s.get() + i))).unwrap();
            }
            let got = c1.call(|| SUM.with(|s| s.replace(0))).wait().unwrap();
            assert_eq!(got, n * (n - 1) / 2);
            n as f64 / t0.elapsed().as_secs_f64() / 1e6
        })
        .wait()
        .unwrap();
    rt.shutdown();
    mps
}

fn ring_tput(n: u64) -> f64 {
    let cpus = manycore_sync::cpu::original().to_vec();
    let (mut tx, mut rx) = manycore_ring::channel::<u64>(256).unwrap();
    let c1 = cpus[1 % cpus.len()];
    let t = std::thread::spawn(move || {
        manycore_sync::cpu::pin_current(c1).ok();
        let mut s = 0u64;
        let mut got = 0;
        while got < n {
            match rx.try_pop() {
                Some(v) => {
                    s += v;
                    got += 1;
                }
                None => std::hint::spin_loop(),
            }
        }
        s
    });
    let t0 = Instant::now();
    let mut i = 0;
    while i < n {
        if tx.try_push(i).is_ok() {
            i += 1
        } else {
            std::hint::spin_loop()
        }
    }
    let s = t.join().unwrap();
    assert_eq!(s, n * (n - 1) / 2);
    n as f64 / t0.elapsed().as_secs_f64() / 1e6
}

fn main() {
    for _ in 0..3 {
        println!(
            "ring(u64) {:.1} M/s  rt-poll {:.1} M/s  rt-hybrid {:.1} M/s",
            ring_tput(5_000_000),
            rt_tput(IdlePolicy::Poll, 5_000_000),
            rt_tput(IdlePolicy::default(), 5_000_000)
        );
    }
}
