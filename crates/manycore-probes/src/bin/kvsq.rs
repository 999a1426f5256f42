//! Probe `kvsq`: where the time of a synchronous outside call goes.
//! The `outside-sync` shape of `manycore bench kv` alone (outside threads
//! each calling `Remote::invoke(..).wait()` one operation at a time into a
//! map sharded over the cores), with the context switches of every thread
//! of the process (clients and cores apart) and the cores' doorbell sleeps
//! counted per operation over the timed region only.
//!
//! `cargo run --release -p manycore-probes --bin kvsq -- [cores] [clients] [ops] [reps] [hsp]`
//! (defaults 4 2 100000 5 h). One line per repetition and policy:
//! the CPU each client and each core last ran on (the scheduler keeps
//! threads that run every few microseconds where they started), ns per
//! operation (one client's: total time / operations per client), then
//! per operation: the cores' voluntary and involuntary switches, the
//! clients' ones, and the cores' sleeps. For the syscalls (yields, futex
//! waits and wakes) run it under `perf stat -e
//! 'syscalls:sys_enter_sched_yield,syscalls:sys_enter_futex'`: the timed
//! region dominates with the default size.

use manycore_probes::kv::{ops, shards, switches, sync_client, Map};
use manycore_rt::{IdlePolicy, Remote, Runtime};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Every task of the process whose name starts with `prefix`: summed
/// switches.
fn tasks(prefix: &str) -> (u64, u64) {
    let mut t = (0, 0);
    for e in std::fs::read_dir("/proc/self/task").into_iter().flatten() {
        let Ok(e) = e else { continue };
        let dir = e.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            let s = switches(&dir.join("status").to_string_lossy());
            t.0 += s.0;
            t.1 += s.1;
        }
    }
    t
}

/// The CPU each task whose name starts with `prefix` last ran on, as a
/// string of CPU numbers (which CPUs the scheduler placed them on).
fn placement(prefix: &str) -> String {
    let mut v = vec![];
    for e in std::fs::read_dir("/proc/self/task").into_iter().flatten() {
        let Ok(e) = e else { continue };
        let dir = e.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            let st = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            // Field 39 (processor), counted after the command's parenthesis.
            let after = st.rsplit_once(')').map_or("", |x| x.1);
            if let Some(cpu) = after.split_whitespace().nth(36) {
                v.push(cpu.to_string());
            }
        }
    }
    v.join("")
}

/// The timed run: its time, the clients' summed switches, and the CPU
/// each client last ran on.
fn run(sh: &[Remote<Map>], ops: &[(bool, u64)], clients: usize) -> (Duration, (u64, u64), String) {
    let per = ops.len() / clients;
    let t0 = Instant::now();
    let cs = std::thread::scope(|s| {
        let hs: Vec<_> = (0..clients)
            .map(|c| {
                let part = &ops[c * per..(c + 1) * per];
                s.spawn(move || {
                    let c0 = switches("/proc/thread-self/status");
                    sync_client(sh, part);
                    let c1 = switches("/proc/thread-self/status");
                    let st = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
                    let after = st.rsplit_once(')').map_or("", |x| x.1).to_string();
                    let cpu = after.split_whitespace().nth(36).unwrap_or("?").to_string();
                    (c1.0 - c0.0, c1.1 - c0.1, cpu)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0, String::new()), |a, b| {
                (a.0 + b.0, a.1 + b.1, a.2 + &b.2)
            })
    });
    (t0.elapsed(), (cs.0, cs.1), cs.2)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (cores, clients, nops, reps) = (arg(1, 4), arg(2, 2), arg(3, 100_000), arg(4, 5));
    let sel = a.get(5).cloned().unwrap_or_else(|| "h".into());
    let mut pols = vec![];
    if sel.contains('h') {
        pols.push(("hybrid", IdlePolicy::default()));
    }
    if sel.contains('s') {
        pols.push(("sleep", IdlePolicy::Sleep));
    }
    if sel.contains('p') {
        pols.push(("poll", IdlePolicy::Poll));
    }
    let w = ops(nops, 0x9e3779b97f4a7c15);
    let per = (nops / clients) as f64;
    let mut res: HashMap<&str, Vec<f64>> = HashMap::new();
    for _ in 0..reps {
        for &(name, p) in &pols {
            let rt = Runtime::builder()
                .name("kvsqcore")
                .cores(cores)
                .idle(p)
                .build()
                .unwrap();
            let sh = shards(&rt, cores);
            let s0: u64 = rt.stats().iter().map(|s| s.sleeps).sum();
            let k0 = tasks("kvsqcore-");
            let (d, cs, on) = run(&sh, &w, clients);
            let k1 = tasks("kvsqcore-");
            let cores_on = placement("kvsqcore-");
            let s1: u64 = rt.stats().iter().map(|s| s.sleeps).sum();
            let ns = d.as_nanos() as f64 / per;
            let all = nops as f64;
            println!(
                "{name:7} CPUs: clients {on} cores {cores_on}  {ns:9.1} ns/op  per op: cores vol {:.2} invol {:.2}  clients vol {:.2} invol {:.2}  sleeps {:.3}",
                (k1.0 - k0.0) as f64 / all,
                (k1.1 - k0.1) as f64 / all,
                cs.0 as f64 / all,
                cs.1 as f64 / all,
                (s1 - s0) as f64 / all,
            );
            res.entry(name).or_default().push(ns);
            drop(sh);
            rt.shutdown();
        }
    }
    manycore_probes::kv::print_medians(pols.iter().map(|p| p.0), &res);
}
