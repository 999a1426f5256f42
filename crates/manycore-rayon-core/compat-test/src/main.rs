//! `rayon`'s parallel iterators on manycore's rayon-core: a few programs
//! whose results are checked, plus proof that the patch is in effect.

use rayon::prelude::*;
use std::collections::HashSet;
use std::sync::Mutex;

fn main() {
    // Only manycore's rayon-core reads MANYCORE_NUM_THREADS: the global pool
    // has 3 workers only if the patch is in effect.
    std::env::set_var("MANYCORE_NUM_THREADS", "3");
    assert_eq!(rayon::current_num_threads(), 3, "the patch is not in effect");

    // par_iter: a sum, a map/filter/collect, a reduce.
    let v: Vec<u64> = (0..1_000_000).collect();
    assert_eq!(v.par_iter().sum::<u64>(), 999_999 * 1_000_000 / 2);
    let evens: Vec<u64> = v.par_iter().filter(|&&x| x % 2 == 0).map(|&x| x * 3).collect();
    assert_eq!(evens.len(), 500_000);
    assert_eq!(evens[1], 6);
    let max = v.par_iter().map(|&x| (x * 7919) % 1_000_003).reduce(|| 0, u64::max);
    assert_eq!(max, v.iter().map(|&x| (x * 7919) % 1_000_003).max().unwrap());

    // par_sort and par_sort_unstable of pseudo-random data.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut data: Vec<u64> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 100_000
        })
        .collect();
    let mut want = data.clone();
    want.sort();
    let mut unstable = data.clone();
    data.par_sort();
    unstable.par_sort_unstable();
    assert_eq!(data, want);
    assert_eq!(unstable, want);

    // The work runs on the pool's workers.
    let seen = Mutex::new(HashSet::new());
    (0..10_000).into_par_iter().for_each(|_| {
        let i = rayon::current_thread_index().expect("on a worker");
        seen.lock().unwrap().insert(i);
    });
    assert!(!seen.lock().unwrap().is_empty());

    // A custom pool, join and scope.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let words = ["a", "bb", "ccc"];
    let total: usize = pool.install(|| words.par_iter().map(|w| w.len()).sum());
    assert_eq!(total, 6);
    let (a, b) = rayon::join(|| fib(20), || fib(21));
    assert_eq!((a, b), (6765, 10946));
    let mut out = vec![0; 4];
    rayon::scope(|s| {
        for (i, slot) in out.iter_mut().enumerate() {
            s.spawn(move |_| *slot = i * i);
        }
    });
    assert_eq!(out, [0, 1, 4, 9]);

    println!("rayon on manycore: 6 passed, 0 failed");
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib(n - 1), || fib(n - 2));
    a + b
}
