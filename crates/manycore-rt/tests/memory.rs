//! Memory that grows with use: rings are made when two cores first talk,
//! and what a core queues toward a destination whose ring is full stays
//! under the runtime's spill limit, without a deadlock, in order, with
//! nothing lost.
use manycore_rt::{current, Error, IdlePolicy, Runtime};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

thread_local! {
    /// Per receiving core: the last sequence number seen from each source.
    static LAST: RefCell<Vec<Option<u64>>> = const { RefCell::new(Vec::new()) };
}

/// Checks that `seq` from `src` comes right after the previous one here.
fn in_order(src: usize, seq: u64) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        if l.len() <= src {
            l.resize(src + 1, None);
        }
        let prev = l[src].replace(seq);
        assert_eq!(
            prev.map_or(0, |p| p + 1),
            seq,
            "from core {src}: {seq} after {prev:?}"
        );
    });
}

/// Spins until `flag` is set, or gives up (false) after a bound that only
/// guards against a broken test: the flag is set by work that does not
/// depend on the spinner.
fn spin_until(flag: &AtomicBool) -> bool {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !flag.load(Ordering::Acquire) {
        if Instant::now() >= give_up {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

#[test]
fn flood_to_a_busy_core_stays_under_the_spill_limit() {
    const N: u64 = 1_000_000;
    const LIMIT: usize = 64;
    const CAP: usize = 256;
    let rt = Runtime::builder()
        .cores(2)
        .ring_capacity(CAP)
        .spill_limit(LIMIT)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicU64::new(0));
    let (started, saturated) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // Core 1 is busy from before the flood until core 0 has filled the ring
    // and the spill queue.
    let (b, s) = (started.clone(), saturated.clone());
    let busy = rt.core(1).call(move || {
        b.store(true, Ordering::Release);
        spin_until(&s)
    });
    assert!(spin_until(&started));
    let c1 = rt.core(1).clone();
    let r = ran.clone();
    let flood = rt.core(0).call(move || {
        for seq in 0..N {
            if seq == (CAP + LIMIT - 1) as u64 {
                // This send fills the spill queue (the ring is full): core 0
                // must now serve until core 1 makes room.
                saturated.store(true, Ordering::Release);
            }
            let r = r.clone();
            c1.spawn(move || {
                in_order(0, seq);
                r.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        }
        // FIFO per source: this runs after every message above.
        c1.call(|| ()).wait()
    });
    assert_eq!(flood.wait(), Ok(Ok(())));
    assert_eq!(busy.wait(), Ok(true), "core 1 never saw the flood start");
    assert_eq!(ran.load(Ordering::Relaxed), N, "messages lost");
    let spill = rt.debug_spill();
    assert_eq!(
        spill[0].0, LIMIT as u64,
        "the spill reached {} (limit {LIMIT})",
        spill[0].0
    );
    assert_eq!(spill[0].1, 0, "messages were queued past the limit");
}

#[test]
fn two_cores_flooding_each_other_do_not_deadlock() {
    const N: u64 = 200_000;
    let rt = Runtime::builder()
        .cores(2)
        .ring_capacity(4)
        .spill_limit(8)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicU64::new(0));
    let floods: Vec<_> = (0..2)
        .map(|src| {
            let peer = rt.core(1 - src).clone();
            let ran = ran.clone();
            rt.core(src).call(move || {
                for seq in 0..N {
                    let ran = ran.clone();
                    peer.spawn(move || {
                        in_order(src, seq);
                        ran.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap();
                }
                peer.call(|| ()).wait()
            })
        })
        .collect();
    for f in floods {
        assert_eq!(f.wait(), Ok(Ok(())));
    }
    assert_eq!(ran.load(Ordering::Relaxed), 2 * N, "messages lost");
    for (core, (peak, over)) in rt.debug_spill().into_iter().enumerate() {
        assert!(peak <= 8, "core {core} spilled {peak}");
        assert_eq!(over, 0, "core {core} queued past the limit");
    }
}

#[test]
fn a_flood_whose_messages_answer_back_completes() {
    // Core 0 floods core 1; every message makes core 1 send one back to
    // core 0. Core 1 meets the limit inside work it runs while it waits for
    // room: nothing deadlocks, nothing is lost, and order holds.
    const N: u64 = 100_000;
    let rt = Runtime::builder()
        .cores(2)
        .ring_capacity(4)
        .spill_limit(8)
        .build()
        .unwrap();
    let back = Arc::new(AtomicU64::new(0));
    let c0 = rt.core(0).clone();
    let c1 = rt.core(1).clone();
    let b = back.clone();
    let flood = rt.core(0).call(move || {
        for seq in 0..N {
            let (b, c0) = (b.clone(), c0.clone());
            c1.spawn(move || {
                in_order(0, seq);
                c0.spawn(move || {
                    in_order(1, seq);
                    b.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            })
            .unwrap();
        }
        // Core 1's answer to this comes after all its earlier answers.
        c1.call(|| ()).wait()
    });
    assert_eq!(flood.wait(), Ok(Ok(())));
    // The last answers may still be in flight to core 0; a call from core 1
    // to core 0 is ordered after them.
    let c0 = rt.core(0).clone();
    assert_eq!(
        rt.core(1).call(move || c0.call(|| ()).wait()).wait(),
        Ok(Ok(()))
    );
    assert_eq!(back.load(Ordering::Relaxed), N, "answers lost");
}

/// Builds `n` cores under `Sleep`, or None if the machine refuses them
/// (`Error::Resource`, which is what `build` must say then).
fn build_or_resource(n: usize) -> Option<Runtime> {
    match Runtime::builder().cores(n).idle(IdlePolicy::Sleep).build() {
        Ok(rt) => Some(rt),
        Err(Error::Resource(why)) => {
            eprintln!("{n} cores refused: {why}");
            None
        }
        Err(e) => panic!("{n} cores: {e}"),
    }
}

/// A call from core 0 to every core, each answering with its index.
fn call_every_core_from_core_0(rt: &Runtime) {
    let n = rt.cores().len();
    let peers = rt.cores().to_vec();
    let sum = rt
        .core(0)
        .call(move || {
            let calls: Vec<_> = peers
                .iter()
                .map(|c| c.call(|| current().unwrap().index()))
                .collect();
            calls.into_iter().map(|c| c.wait().unwrap()).sum::<usize>()
        })
        .wait();
    assert_eq!(sum, Ok((0..n).sum()));
}

#[test]
fn rings_are_made_when_cores_first_talk() {
    // 1024 cores on however few CPUs: building costs no ring, and a call
    // from core 0 to every core makes only the rings that carry it: one
    // per pair that talked (core 0 to each other core, the main thread's
    // lane to core 0), where a ring for every pair would be cores².
    const N: usize = 1024;
    let Some(rt) = build_or_resource(N) else {
        return;
    };
    assert_eq!(rt.debug_rings(), 0, "building made rings");
    call_every_core_from_core_0(&rt);
    let rings = rt.debug_rings();
    assert!(
        (N as u64 - 1..=2 * N as u64).contains(&rings),
        "{rings} rings for {N} cores after one round of calls from core 0"
    );
    // A second round binds nothing new.
    call_every_core_from_core_0(&rt);
    assert_eq!(
        rt.debug_rings(),
        rings,
        "a pair that talked again made a ring"
    );
    rt.shutdown();
}

/// The most cores a runtime takes (`Builder::build` refuses more).
const MAX_CORES: usize = 4096;

#[test]
fn the_most_cores_work_or_are_refused_as_a_resource() {
    // `cores(4096)` either builds, and then a call from core 0 to every
    // core and back succeeds and shutdown ends, or the machine refuses the
    // threads and `build` says `Error::Resource`; it never aborts.
    //
    // Cost: 4096 threads of an 8 MiB stack reserve 32 GiB of address
    // space but touch only the pages they run on; on a 2-CPU, 23 GB
    // machine the whole test (debug build) takes about a second and
    // 110 MB resident, so it runs in CI unbounded. A machine whose thread
    // or memory-map limits are lower gets `Resource`, which passes.
    if let Some(rt) = build_or_resource(MAX_CORES) {
        assert_eq!(rt.cores().len(), MAX_CORES);
        call_every_core_from_core_0(&rt);
        assert!(rt.debug_rings() <= 2 * MAX_CORES as u64);
        rt.shutdown();
    }
}

#[test]
fn more_cores_than_the_most_are_an_invalid_config() {
    for n in [MAX_CORES + 1, usize::MAX] {
        match Runtime::builder().cores(n).build() {
            Err(Error::InvalidConfig(_)) => {}
            Err(e) => panic!("cores({n}): {e}"),
            Ok(_) => panic!("cores({n}) built"),
        }
    }
}
