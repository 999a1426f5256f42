//! The kv probes' workload (`owq`, `kvsq`): a map of 65,536 keys sharded
//! over a runtime's cores, one `Remote` a core, and a mixed stream of
//! operations (one put in five), as `manycore bench kv` runs them.

use manycore_rt::{Remote, Runtime};
use std::collections::HashMap;

/// One shard's map.
pub type Map = HashMap<u64, u64>;

/// `n` operations `(put, key)` from a xorshift stream seeded by `seed`.
pub fn ops(n: usize, seed: u64) -> Vec<(bool, u64)> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 5 == 0, (x >> 8) % 65536)
        })
        .collect()
}

/// The map of key `k` on core `k % n`, for the first `n` cores of `rt`.
pub fn shards(rt: &Runtime, n: usize) -> Vec<Remote<Map>> {
    (0..n)
        .map(|i| {
            rt.core(i)
                .place_with(move || {
                    (0..65536u64)
                        .filter(|k| (k % n as u64) as usize == i)
                        .map(|k| (k, k))
                        .collect()
                })
                .unwrap()
        })
        .collect()
}

/// One synchronous client: `part` one operation at a time, each an
/// `invoke(..).wait()` on its key's shard; returns the folded results.
pub fn sync_client(sh: &[Remote<Map>], part: &[(bool, u64)]) -> u64 {
    let n = sh.len() as u64;
    let mut sum = 0u64;
    for &(put, k) in part {
        let r = &sh[(k % n) as usize];
        let v = if put {
            r.invoke(move |m: &mut Map| m.insert(k, k)).wait().unwrap()
        } else {
            r.invoke(move |m: &mut Map| m.get(&k).copied())
                .wait()
                .unwrap()
        };
        sum = sum.wrapping_add(v.unwrap_or(0));
    }
    std::hint::black_box(sum)
}

/// Voluntary and involuntary context switches from a task's status file
/// (`/proc/thread-self/status`, `/proc/self/task/<tid>/status`).
pub fn switches(path: &str) -> (u64, u64) {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let get = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        get("voluntary_ctxt_switches:"),
        get("nonvoluntary_ctxt_switches:"),
    )
}

/// Prints each policy's median ns per operation over its repetitions.
pub fn print_medians<'a>(
    policies: impl Iterator<Item = &'a str>,
    res: &HashMap<&'a str, Vec<f64>>,
) {
    for name in policies {
        if let Some(m) = res.get(name).and_then(|v| crate::median(v)) {
            println!("median {name}: {m:.1} ns/op");
        }
    }
}
