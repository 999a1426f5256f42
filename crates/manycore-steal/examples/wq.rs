//! Dev probe: one workload of `manycore bench steal`, sequential vs runtime
//! T1/T2 (interleaved repetitions; min and median), with steal counters.
//!
//! `cargo run --release -p manycore-steal --example wq -- <fib N | pfib N | tree N REPS | knary M I | qsort N> [reps] [only]`
//! `only` = seq | t1 | t2 runs just that configuration (for `perf record`).
//! `GAP_MS=n` sets the pause before each run (default 2; the bench's is 5: a
//! longer pause lets idle cores fall asleep); `PIN=1` pins the cores.
use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{with_ctx, Ctx, StealExt};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}
fn fib_mc(s: Ctx<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_mc(s, n - 1), |s| fib_mc(s, n - 2));
    a + b
}

fn fib_plain(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = manycore_steal::join(|| fib_plain(n - 1), || fib_plain(n - 2));
    a + b
}

struct Node {
    val: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}
fn build(n: usize, next: &mut u64) -> Option<Box<Node>> {
    if n == 0 {
        return None;
    }
    *next += 1;
    let mut node = Box::new(Node {
        val: *next,
        left: None,
        right: None,
    });
    let l = (n - 1) / 2;
    node.left = build(l, next);
    node.right = build(n - 1 - l, next);
    Some(node)
}
fn sum_seq(t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => n.val + sum_seq(&n.left) + sum_seq(&n.right),
    }
}
fn sum_mc(s: Ctx<'_>, t: &Option<Box<Node>>) -> u64 {
    match t {
        None => 0,
        Some(n) => {
            let (a, b) = s.join(|s| sum_mc(s, &n.left), |s| sum_mc(s, &n.right));
            n.val + a + b
        }
    }
}

#[inline(never)] // one copy of the loop for every version, as in the bench
fn idle(i: u32, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..i {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}
fn kseq(m: u32, i: u32, d: u32) -> u64 {
    let mut acc = idle(i, d as u64);
    if d + 1 < m {
        for _ in 0..4 {
            acc = acc.wrapping_add(kseq(m, i, d + 1));
        }
    }
    acc
}
fn kmc(s: Ctx<'_>, m: u32, i: u32, d: u32) -> u64 {
    let acc = idle(i, d as u64);
    if d + 1 < m {
        acc.wrapping_add(kch(s, m, i, d + 1, 4))
    } else {
        acc
    }
}
fn kch(s: Ctx<'_>, m: u32, i: u32, d: u32, n: u32) -> u64 {
    if n == 1 {
        return kmc(s, m, i, d);
    }
    let h = n / 2;
    let (a, b) = s.join(|s| kch(s, m, i, d, h), |s| kch(s, m, i, d, n - h));
    a.wrapping_add(b)
}

const SORT_CUTOFF: usize = 32;
fn insertion_sort(v: &mut [u64]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}
fn partition(v: &mut [u64]) -> usize {
    let (a, b, c) = (v[0], v[v.len() / 2], v[v.len() - 1]);
    let pivot = a.max(b).min(a.min(b).max(c));
    let (mut i, mut j) = (0usize, v.len() - 1);
    loop {
        while v[i] < pivot {
            i += 1;
        }
        while v[j] > pivot {
            j -= 1;
        }
        if i >= j {
            return j + 1;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
}
fn qsort_seq(v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    qsort_seq(l);
    qsort_seq(r);
}
fn qsort_mc(s: Ctx<'_>, v: &mut [u64]) {
    if v.len() <= SORT_CUTOFF {
        return insertion_sort(v);
    }
    let m = partition(v);
    let (l, r) = v.split_at_mut(m);
    s.join(|s| qsort_mc(s, l), |s| qsort_mc(s, r));
}

type Job = Arc<dyn Fn(bool) -> u64 + Send + Sync>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: u64| args.get(i).map_or(d, |s| s.parse().unwrap());
    let (name, job, rest): (String, Job, usize) = match args.first().map(String::as_str) {
        Some("tree") => {
            let (n, r) = (num(1, 1023) as usize, num(2, 1000));
            let t = Arc::new(build(n, &mut 0));
            (
                format!("tree({n})x{r}"),
                Arc::new(move |par| {
                    if par {
                        with_ctx(|s| (0..r).map(|_| sum_mc(s, black_box(&t))).sum())
                    } else {
                        (0..r).map(|_| sum_seq(black_box(&t))).sum()
                    }
                }),
                3,
            )
        }
        Some("pfib") => {
            let n = num(1, 30);
            (
                format!("plain fib({n})"),
                Arc::new(move |par| {
                    if par {
                        fib_plain(black_box(n))
                    } else {
                        fib_seq(black_box(n))
                    }
                }),
                2,
            )
        }
        Some("qsort") => {
            let n = num(1, 10_000_000) as usize;
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let input: Arc<Vec<u64>> = Arc::new(
                (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    })
                    .collect(),
            );
            // The copy of the input is inside the timing here (unlike the bench).
            (
                format!("quicksort({n})"),
                Arc::new(move |par| {
                    let mut v = input.to_vec();
                    if par {
                        with_ctx(|s| qsort_mc(s, &mut v));
                    } else {
                        qsort_seq(&mut v);
                    }
                    v[n / 2]
                }),
                2,
            )
        }
        Some("knary") => {
            let (m, i) = (num(1, 10) as u32, num(2, 1000) as u32);
            (
                format!("knary(4,{m},{i})"),
                Arc::new(move |par| {
                    if par {
                        with_ctx(|s| kmc(s, m, i, 0))
                    } else {
                        kseq(m, i, 0)
                    }
                }),
                3,
            )
        }
        _ => {
            let n = num(1, 30);
            (
                format!("fib({n})"),
                Arc::new(move |par| {
                    if par {
                        with_ctx(|s| fib_mc(s, black_box(n)))
                    } else {
                        fib_seq(black_box(n))
                    }
                }),
                2,
            )
        }
    };
    let reps = num(rest, 21) as usize;
    // MAXSEQ=n: a fixed MAX_SEQUENTIAL (every n joins a tick and a heartbeat).
    if let Some(n) = std::env::var("MAXSEQ").ok().and_then(|v| v.parse().ok()) {
        manycore_steal::set_max_sequential(n);
    }
    // BUSY=1: a spinning thread pinned to the second CPU competes with the
    // cores (the bench's Table 2).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if std::env::var("BUSY").is_ok_and(|v| v == "1") {
        let stop = stop.clone();
        std::thread::spawn(move || {
            if let Some(&c) = manycore_sync::cpu::original().get(1) {
                let _ = manycore_sync::cpu::pin_current(c);
            }
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                black_box(idle(10_000, 1));
            }
        });
    }
    let only = args.get(rest + 1).cloned();
    let rts: Vec<Runtime> = [1, 2]
        .iter()
        .map(|&c| {
            let rt = Runtime::builder()
                .cores(c)
                .idle(IdlePolicy::Hybrid {
                    spin: Duration::from_micros(50),
                })
                .pin(std::env::var("PIN").is_ok())
                .build()
                .unwrap();
            manycore_steal::attach(&rt).unwrap();
            rt
        })
        .collect();
    let mut t: [Vec<f64>; 3] = Default::default();
    for _ in 0..reps {
        for (k, tk) in t.iter_mut().enumerate() {
            let want = ["seq", "t1", "t2"][k];
            if only.as_deref().is_some_and(|o| o != want) {
                continue;
            }
            std::thread::sleep(Duration::from_millis(
                std::env::var("GAP_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(2),
            ));
            let d = if k == 0 {
                let s = Instant::now();
                black_box(job(false));
                s.elapsed()
            } else {
                let j = job.clone();
                rts[k - 1].install(move || {
                    let s = Instant::now();
                    black_box(j(true));
                    s.elapsed()
                })
            };
            tk.push(d.as_secs_f64() * 1e3);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stat = |v: &mut Vec<f64>| {
        if v.is_empty() {
            return (f64::NAN, f64::NAN);
        }
        v.sort_by(|a, b| a.total_cmp(b));
        (v[0], v[v.len() / 2])
    };
    let [s, t1, t2] = t.each_mut().map(stat);
    println!(
        "{name}: Ts {:.3}/{:.3}  T1 {:.3}/{:.3} ({:.2}x)  T2 {:.3}/{:.3} ({:.2}x Ts)  (min/med)  {:?}",
        s.0,
        s.1,
        t1.0,
        t1.1,
        t1.1 / s.1,
        t2.0,
        t2.1,
        t2.1 / s.1,
        manycore_steal::steal_stats(&rts[1])
    );
}
