use manycore_rt::{IdlePolicy, Runtime};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn raw_atomic(n: u64) -> f64 {
    let cpus = manycore_sync::cpu::original().to_vec();
    let a = Arc::new(manycore_sync::CachePadded::new(AtomicU64::new(0)));
    let b = Arc::new(manycore_sync::CachePadded::new(AtomicU64::new(0)));
    let (a2, b2) = (a.clone(), b.clone());
    let c1 = cpus[1 % cpus.len()];
    let t = std::thread::spawn(move || {
        manycore_sync::cpu::pin_current(c1).ok();
        for i in 1..=n {
            while a2.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            b2.store(i, Ordering::Release);
        }
    });
    manycore_sync::cpu::pin_current(cpus[0]).ok();
    let t0 = Instant::now();
    for i in 1..=n {
        a.store(i, Ordering::Release);
        while b.load(Ordering::Acquire) != i {
            std::hint::spin_loop();
        }
    }
    let e = t0.elapsed();
    t.join().unwrap();
    manycore_sync::cpu::set_current_affinity(&cpus).ok();
    e.as_nanos() as f64 / n as f64
}

fn rt_rtt(policy: IdlePolicy, n: u64) -> f64 {
    let pin = std::env::var("PIN").map_or(true, |v| v == "1");
    let rt = Runtime::builder()
        .cores(2)
        .idle(policy)
        .pin(pin)
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let ns = rt
        .core(0)
        .call(move || {
            for i in 0..1000u64 {
                c1.call(move || i + 1).wait().unwrap();
            }
            let t0 = Instant::now();
            for i in 0..n {
                let r = c1.call(move || i + 1).wait().unwrap();
                assert_eq!(r, i + 1);
            }
            t0.elapsed().as_nanos() as f64 / n as f64
        })
        .wait()
        .unwrap();
    rt.shutdown();
    ns
}

fn raw_futex(n: u64) -> f64 {
    use manycore_sync::EventCount;
    struct S {
        v: AtomicU64,
        ec: EventCount,
    }
    let a = Arc::new(S {
        v: AtomicU64::new(0),
        ec: EventCount::new(),
    });
    let b = Arc::new(S {
        v: AtomicU64::new(0),
        ec: EventCount::new(),
    });
    fn wait_for(s: &S, i: u64) {
        loop {
            if s.v.load(Ordering::Acquire) == i {
                return;
            }
            let k = s.ec.prepare_wait();
            if s.v.load(Ordering::Acquire) == i {
                s.ec.cancel_wait();
                return;
            }
            s.ec.wait(k);
        }
    }
    let (a2, b2) = (a.clone(), b.clone());
    let t = std::thread::spawn(move || {
        for i in 1..=n {
            wait_for(&a2, i);
            b2.v.store(i, Ordering::Release);
            b2.ec.notify_one();
        }
    });
    let t0 = Instant::now();
    for i in 1..=n {
        a.v.store(i, Ordering::Release);
        a.ec.notify_one();
        wait_for(&b, i);
    }
    let e = t0.elapsed();
    t.join().unwrap();
    e.as_nanos() as f64 / n as f64
}

fn main() {
    let n = 200_000;
    for _ in 0..2 {
        println!("raw atomic {:.0} ns", raw_atomic(n));
        println!("poll {:.0} ns", rt_rtt(IdlePolicy::Poll, n));
        println!("hybrid {:.0} ns", rt_rtt(IdlePolicy::default(), n));
        println!("raw futex {:.0} ns", raw_futex(20_000));
        println!("sleep {:.0} ns", rt_rtt(IdlePolicy::Sleep, 20_000));
    }
    let _ = Duration::ZERO;
}
