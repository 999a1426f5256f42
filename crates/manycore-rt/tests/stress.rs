//! Stress, sized for CI (seconds): 4 cores on however many CPUs, everyone
//! sending to everyone with per-source order and a checksum verified; many
//! sleep-mode round trips with no hang; outside threads in order.
use manycore_rt::{current, IdlePolicy, Runtime};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    static LAST: RefCell<Vec<Option<u64>>> = const { RefCell::new(Vec::new()) };
}

fn all_to_all(policy: IdlePolicy, cores: usize, per_pair: u64, cap: usize) {
    let rt = Runtime::builder()
        .cores(cores)
        .idle(policy)
        .ring_capacity(cap)
        .build()
        .unwrap();
    let sum = Arc::new(AtomicU64::new(0));
    let count = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = rt.cores().to_vec();
    let invs: Vec<_> = (0..cores)
        .map(|src| {
            let handles = handles.clone();
            let (sum, count) = (sum.clone(), count.clone());
            rt.core(src).call(move || {
                for seq in 0..per_pair {
                    for (dst, h) in handles.iter().enumerate() {
                        if dst == src {
                            continue;
                        }
                        let (sum, count) = (sum.clone(), count.clone());
                        h.spawn(move || {
                            // Per-source FIFO: each receiver checks seq increases by one.
                            LAST.with(|l| {
                                let mut l = l.borrow_mut();
                                if l.len() < 64 {
                                    l.resize(64, None);
                                }
                                let prev = l[src].replace(seq);
                                assert_eq!(
                                    prev.map_or(0, |p| p + 1),
                                    seq,
                                    "core {} got {seq} from {src} after {prev:?}",
                                    current().unwrap().index()
                                );
                            });
                            sum.fetch_add(seq * 1000 + src as u64, Ordering::Relaxed);
                            count.fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    }
                }
            })
        })
        .collect();
    for inv in invs {
        inv.wait().unwrap();
    }
    drop(rt); // drains
    let n = cores as u64;
    assert_eq!(
        count.load(Ordering::Relaxed),
        n * (n - 1) * per_pair,
        "messages lost"
    );
    let expect: u64 = (0..n)
        .map(|src| (n - 1) * (0..per_pair).map(|s| s * 1000 + src).sum::<u64>())
        .sum();
    assert_eq!(sum.load(Ordering::Relaxed), expect, "checksum");
}

#[test]
fn four_cores_all_to_all_sleep() {
    all_to_all(IdlePolicy::Sleep, 4, 5_000, 16);
}

#[test]
fn four_cores_all_to_all_hybrid_tiny_rings_spill() {
    // Capacity 2 forces the spill queues constantly; order must still hold.
    all_to_all(IdlePolicy::default(), 4, 3_000, 2);
}

#[test]
fn sleep_round_trips_never_hang() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let n = std::env::var("MANYCORE_STRESS_ROUND_TRIPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000u64);
    let total = rt
        .core(0)
        .call(move || {
            let mut acc = 0u64;
            for i in 0..n {
                acc += c1.call(move || i & 1).wait().unwrap();
            }
            acc
        })
        .wait_timeout(Duration::from_secs(600))
        .unwrap();
    assert_eq!(total, n / 2);
}

#[test]
fn outside_threads_keep_their_order() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .ring_capacity(2)
        .lanes(2)
        .build()
        .unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let c = rt.core((t % 2) as usize).clone();
            std::thread::spawn(move || {
                let last = Arc::new(AtomicU64::new(u64::MAX));
                for i in 0..5_000u64 {
                    let last = last.clone();
                    c.spawn(move || {
                        let prev = last.swap(i, Ordering::Relaxed);
                        assert_eq!(prev.wrapping_add(1), i);
                    })
                    .unwrap();
                }
                c.call(|| ()).wait().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(rt.stats().iter().map(|s| s.panics).sum::<u64>(), 0);
}

/// A core that stays inside one invocation and keeps sending reaches no
/// poll, so its full ring spills: the spill must still drain into the ring
/// as it goes (in order), or the receiver would starve until the invocation
/// returns. The sender sends until the receiver has run more messages than
/// the ring holds (bounded: it gives up after 20 s, and the test fails).
#[test]
fn a_sender_inside_one_invocation_keeps_its_spill_flowing() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        })
        .ring_capacity(2)
        .build()
        .unwrap();
    let got = Arc::new(AtomicU64::new(0));
    let order_ok = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let c1 = rt.core(1).clone();
    let (g, ok) = (got.clone(), order_ok.clone());
    let sent = rt
        .core(0)
        .call(move || {
            let start = std::time::Instant::now();
            let mut sent = 0u64;
            while g.load(Ordering::Acquire) < 64 {
                if start.elapsed() > Duration::from_secs(20) {
                    return Err(sent);
                }
                let (g, ok) = (g.clone(), ok.clone());
                let seq = sent;
                c1.spawn(move || {
                    if g.load(Ordering::Relaxed) != seq {
                        ok.store(false, Ordering::Relaxed);
                    }
                    g.fetch_add(1, Ordering::Release);
                })
                .unwrap();
                sent += 1;
                if sent % 1024 == 0 {
                    // Give the receiver's thread a chance on a busy machine.
                    std::thread::yield_now();
                }
            }
            Ok(sent)
        })
        .wait()
        .unwrap();
    let sent = sent.expect("the receiver starved: spilled messages never reached the ring");
    // Everything sent arrives, in order, once the sender polls again.
    let c1 = rt.core(1).clone();
    let g = got.clone();
    rt.core(0)
        .call(move || c1.call(move || g.load(Ordering::Acquire)).wait())
        .wait()
        .unwrap()
        .unwrap();
    assert_eq!(got.load(Ordering::Acquire), sent);
    assert!(order_ok.load(Ordering::Relaxed));
}
