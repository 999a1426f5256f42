//! Dev probe: knary(4, m, i) sequential vs the context form on the calling
//! thread (no pool), min of runs: the cost of the join code itself.
use manycore_steal::{with_ctx, Ctx};
use std::hint::black_box;
use std::time::Instant;

// One copy of the loop for every version (an inlined copy's placement
// changes its speed by several per cent).
#[inline(never)]
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
    let mut acc = idle(i, u64::from(d));
    if d + 1 < m {
        for _ in 0..4 {
            acc = acc.wrapping_add(kseq(m, i, d + 1));
        }
    }
    acc
}
fn kmc(s: Ctx<'_>, m: u32, i: u32, d: u32) -> u64 {
    let acc = idle(i, u64::from(d));
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
fn kpar(m: u32, i: u32, d: u32) -> u64 {
    let acc = idle(i, u64::from(d));
    if d + 1 < m {
        acc.wrapping_add(kpch(m, i, d + 1, 4))
    } else {
        acc
    }
}
fn kpch(m: u32, i: u32, d: u32, n: u32) -> u64 {
    if n == 1 {
        return kpar(m, i, d);
    }
    let h = n / 2;
    let (a, b) = manycore_steal::join(|| kpch(m, i, d, h), || kpch(m, i, d, n - h));
    a.wrapping_add(b)
}
fn kbin(m: u32, i: u32, d: u32) -> u64 {
    let acc = idle(i, u64::from(d));
    if d + 1 < m {
        acc.wrapping_add(kbch(m, i, d + 1, 4))
    } else {
        acc
    }
}
fn kbch(m: u32, i: u32, d: u32, n: u32) -> u64 {
    if n == 1 {
        return kbin(m, i, d);
    }
    let h = n / 2;
    let (a, b) = (kbch(m, i, d, h), kbch(m, i, d, n - h));
    a.wrapping_add(b)
}

fn main() {
    let m: u32 = std::env::args().nth(1).map_or(9, |s| s.parse().unwrap());
    let i: u32 = std::env::args().nth(2).map_or(1000, |s| s.parse().unwrap());
    let fs: [(&str, &dyn Fn() -> u64); 4] = [
        ("seq", &|| kseq(m, i, 0)),
        ("binary-split seq", &|| kbch(m, i, 0, 1)),
        ("ctx", &|| with_ctx(|s| kmc(s, m, i, 0))),
        ("plain join", &|| kpar(m, i, 0)),
    ];
    let mut best = [f64::MAX; 4];
    for _ in 0..15 {
        for (k, (_, f)) in fs.iter().enumerate() {
            let t = Instant::now();
            black_box(f());
            best[k] = best[k].min(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    for (k, (name, _)) in fs.iter().enumerate() {
        println!("{name:18} {:.2} ms ({:.3}x)", best[k], best[k] / best[0]);
    }
}
