//! Probe `owq`: outside threads that call into cores and wait. Two shapes
//! of `manycore bench kv`, alone, with the cores' sleeps counted:
//! `pb` (one outside client, batches of 256 operations per invocation,
//! 64 in flight, 2 cores) and `os` (outside threads making synchronous
//! calls, 4 cores). Policies alternate within the run; prints one line per
//! repetition and policy: time, ns per operation, core sleeps.
//!
//! `cargo run --release -p manycore-probes --bin owq -- pb|os [reps] [clients] [hsp] [t]`
//! (the fourth argument picks the policies by their first letters; `t`
//! runs each repetition's client on a fresh thread, as the bench does).
//! Each line also gives the client thread's context switches.

use manycore_probes::kv::{ops, shards, switches, sync_client, Map};
use manycore_rt::{IdlePolicy, Invocation, Remote, Runtime};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

fn pb(rt: &Runtime, sh: &[Remote<Map>], ops: &[(bool, u64)]) -> Duration {
    let _ = rt;
    let (size, window) = (256, 64);
    let n = sh.len();
    let mut pending: Vec<Vec<(bool, u64)>> = (0..n).map(|_| Vec::with_capacity(size)).collect();
    let mut q: VecDeque<Invocation<u64>> = VecDeque::new();
    let mut sum = 0u64;
    let t0 = Instant::now();
    let mut ship = |s: usize, b: Vec<(bool, u64)>, sum: &mut u64| {
        if q.len() == window {
            *sum = sum.wrapping_add(q.pop_front().unwrap().wait().unwrap());
        }
        q.push_back(sh[s].invoke(move |m: &mut Map| {
            b.iter().fold(0u64, |a, &(put, k)| {
                a.wrapping_add(if put {
                    m.insert(k, a).unwrap_or(0)
                } else {
                    m.get(&k).copied().unwrap_or(0)
                })
            })
        }));
    };
    for &op in ops {
        let s = (op.1 % n as u64) as usize;
        pending[s].push(op);
        if pending[s].len() == size {
            let b = std::mem::replace(&mut pending[s], Vec::with_capacity(size));
            ship(s, b, &mut sum);
        }
    }
    for (s, b) in pending.into_iter().enumerate() {
        if !b.is_empty() {
            ship(s, b, &mut sum);
        }
    }
    for inv in q {
        sum = sum.wrapping_add(inv.wait().unwrap());
    }
    std::hint::black_box(sum);
    t0.elapsed()
}

fn os(sh: &[Remote<Map>], ops: &[(bool, u64)], clients: usize) -> Duration {
    let per = ops.len() / clients;
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for c in 0..clients {
            let part = &ops[c * per..(c + 1) * per];
            s.spawn(move || sync_client(sh, part));
        }
    });
    t0.elapsed()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mode = a.get(1).map_or("pb", |s| s.as_str()).to_string();
    let reps: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let clients: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let (cores, nops) = if mode == "pb" {
        (2, 100_000)
    } else {
        (4, 20_000)
    };
    let w = ops(nops, 0x9e3779b97f4a7c15);
    let mut pols = vec![
        ("hybrid", IdlePolicy::default()),
        ("sleep", IdlePolicy::Sleep),
    ];
    if cores <= 2 {
        pols.push(("poll", IdlePolicy::Poll));
    }
    // Policies: "h" hybrid only, or any of the letters h, s, p.
    if let Some(sel) = a.get(4) {
        if sel == "h" {
            pols.truncate(1);
        } else {
            pols.retain(|(n, _)| sel.contains(&n[..1]));
        }
    }
    // "t": each repetition on a fresh thread, as the bench runs its rows.
    let fresh = a.get(5).is_some_and(|s| s == "t");
    let mut res: HashMap<&str, Vec<f64>> = HashMap::new();
    for _ in 0..reps {
        for &(name, p) in &pols {
            let rt = Runtime::builder().cores(cores).idle(p).build().unwrap();
            let sh = shards(&rt, cores);
            let s0: u64 = rt.stats().iter().map(|s| s.sleeps).sum();
            let run = || {
                // getppid marks the timed region for `perf record -e
                // syscalls:sys_enter_getppid` (with the futex calls, say).
                let _ = std::os::unix::process::parent_id();
                let c0 = switches("/proc/thread-self/status");
                let d = if mode == "pb" {
                    pb(&rt, &sh, &w)
                } else {
                    os(&sh, &w, clients)
                };
                let c1 = switches("/proc/thread-self/status");
                let _ = std::os::unix::process::parent_id();
                (d, (c1.0 - c0.0, c1.1 - c0.1))
            };
            let (d, cs) = if fresh {
                std::thread::scope(|s| s.spawn(run).join().unwrap())
            } else {
                run()
            };
            let s1: u64 = rt.stats().iter().map(|s| s.sleeps).sum();
            let per = if mode == "pb" { nops } else { nops / clients };
            let ns = d.as_nanos() as f64 / per as f64;
            println!(
                "{mode} {name:7} {:8.2} ms {:9.1} ns/op  sleeps {}  client ctxt vol {} invol {}",
                d.as_secs_f64() * 1e3,
                ns,
                s1 - s0,
                cs.0,
                cs.1
            );
            res.entry(name).or_default().push(ns);
            drop(sh);
            rt.shutdown();
        }
    }
    manycore_probes::kv::print_medians(pols.iter().map(|p| p.0), &res);
}
