use manycore_rt::{IdlePolicy, Runtime};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
fn raw(n: u64) -> f64 {
    let cpus = manycore_sync::cpu::original().to_vec();
    let a = Arc::new(manycore_sync::CachePadded::new(AtomicU64::new(0)));
    let b = Arc::new(manycore_sync::CachePadded::new(AtomicU64::new(0)));
    let (a2, b2) = (a.clone(), b.clone());
    let c1 = cpus[1 % cpus.len()];
    let t = std::thread::spawn(move || { manycore_sync::cpu::pin_current(c1).ok();
        for i in 1..=n { while a2.load(Ordering::Acquire) != i { std::hint::spin_loop(); } b2.store(i, Ordering::Release); } });
    let c0 = cpus[0];
    let h = std::thread::spawn(move || { manycore_sync::cpu::pin_current(c0).ok();
        let t0 = Instant::now();
        for i in 1..=n { a.store(i, Ordering::Release); while b.load(Ordering::Acquire) != i { std::hint::spin_loop(); } }
        t0.elapsed().as_nanos() as f64 / n as f64 });
    t.join().unwrap(); h.join().unwrap()
}
fn rt(n: u64) -> f64 {
    let rt = Runtime::builder().cores(2).idle(IdlePolicy::Poll).build().unwrap();
    let c1 = rt.core(1).clone();
    rt.core(0).call(move || {
        let t0 = Instant::now();
        for i in 0..n { std::hint::black_box(c1.call(move || i + 1).wait().unwrap()); }
        t0.elapsed().as_nanos() as f64 / n as f64
    }).wait().unwrap()
}
fn main() {
    for _ in 0..5 { let n = 300_000; println!("raw {:.0} ns   rt-poll {:.0} ns", raw(n), rt(n)); }
}
