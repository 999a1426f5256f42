//! Resident memory of a runtime: VmRSS after `build` and after a call from
//! core 0 to every core (which binds the rings core 0 -> i and i -> core 0,
//! and the rings from this thread's lane to core 0).
//!
//! `cargo run --release -p manycore-rt --example rss -- 256 1024 4096`
use manycore_rt::{IdlePolicy, Runtime};

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() { vec![256] } else { sizes };
    println!("before any runtime: VmRSS {} KiB", vm_rss_kib());
    for n in sizes {
        let rt = match Runtime::builder().cores(n).idle(IdlePolicy::Sleep).build() {
            Ok(rt) => rt,
            Err(e) => {
                println!("cores({n}): {e}");
                continue;
            }
        };
        let built = vm_rss_kib();
        let peers = rt.cores().to_vec();
        let answered = rt
            .core(0)
            .call(move || {
                let calls: Vec<_> = peers.iter().map(|c| c.call(|| 1usize)).collect();
                calls
                    .into_iter()
                    .map(|c| c.wait().unwrap_or(0))
                    .sum::<usize>()
            })
            .wait();
        let called = vm_rss_kib();
        println!(
            "cores({n}): VmRSS after build {built} KiB, after a call from core 0 to every core {called} KiB ({answered:?} answers)"
        );
        rt.shutdown();
    }
}
