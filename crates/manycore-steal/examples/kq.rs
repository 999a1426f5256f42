//! Dev probe: knary(4, m, i) sequential vs runtime T1/T2 (min of runs), with steal counters.
use manycore_rt::{IdlePolicy, Runtime};
use manycore_steal::{with_ctx, Ctx, StealExt};
use std::hint::black_box;
use std::time::{Duration, Instant};

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

fn main() {
    let m: u32 = std::env::args().nth(1).map_or(8, |s| s.parse().unwrap());
    let i: u32 = std::env::args().nth(2).map_or(1000, |s| s.parse().unwrap());
    let spin: u64 = std::env::args().nth(3).map_or(50, |s| s.parse().unwrap());
    let rts: Vec<Runtime> = [1, 2]
        .iter()
        .map(|&c| {
            Runtime::builder()
                .cores(c)
                .idle(IdlePolicy::Hybrid {
                    spin: Duration::from_micros(spin),
                })
                .pin(true)
                .build()
                .unwrap()
        })
        .collect();
    let mut best = [f64::MAX; 3];
    let mut core_seq = f64::MAX;
    let mut main_ctx = f64::MAX;
    for _ in 0..9 {
        let d = rts[0].install(move || {
            let t = Instant::now();
            black_box(kseq(m, i, 0));
            t.elapsed()
        });
        core_seq = core_seq.min(d.as_secs_f64() * 1e3);
        let t = Instant::now();
        black_box(with_ctx(|s| kmc(s, m, i, 0)));
        main_ctx = main_ctx.min(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        black_box(kseq(m, i, 0));
        best[0] = best[0].min(t.elapsed().as_secs_f64() * 1e3);
        for (k, rt) in rts.iter().enumerate() {
            let d = rt.install(move || {
                let t = Instant::now();
                black_box(with_ctx(|s| kmc(s, m, i, 0)));
                t.elapsed()
            });
            best[k + 1] = best[k + 1].min(d.as_secs_f64() * 1e3);
        }
    }
    println!("seq on core0 {core_seq:.2}  ctx on main thread {main_ctx:.2}");
    println!(
        "knary(4,{m},{i}) min: Ts {:.2}  T1 {:.2} ({:.3})  T2 {:.2} (Ts/T2 {:.2})  {:?}",
        best[0],
        best[1],
        best[1] / best[0],
        best[2],
        best[0] / best[2],
        manycore_steal::steal_stats(&rts[1])
    );
}
