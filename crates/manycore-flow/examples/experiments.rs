//! Runs the paper's experiments and the reactor's probes (the functions of
//! `manycore_flow::experiments`) and prints their numbers.
//!
//! `cargo run --release -p manycore-flow --features internals --example experiments -- [reactor|fig5|fig7|livelock|all]`
//!
//! Runs are short (tens of milliseconds a point): the figures are for
//! comparing designs on one machine, not for quoting.

use manycore_flow::experiments::{
    backends, fig5, fig7_11, livelock, reactor_round_trip, reactor_stream, Design,
};
use manycore_flow::Exclusion;
use std::time::Duration;

/// Median and best of `xs`.
fn median_best(mut xs: Vec<f64>, best_is_max: bool) -> (f64, f64) {
    xs.sort_by(|a, b| a.total_cmp(b));
    let best = if best_is_max { xs[xs.len() - 1] } else { xs[0] };
    (xs[xs.len() / 2], best)
}

fn reactor() -> Result<(), Box<dyn std::error::Error>> {
    const TRIALS: usize = 7;
    let bs = backends();
    // Trials interleave the backends, so that load from other processes
    // falls on both alike.
    let mut rt: Vec<Vec<f64>> = vec![Vec::new(); bs.len()];
    let mut st: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); bs.len()]; 2];
    for _ in 0..TRIALS {
        for (i, &b) in bs.iter().enumerate() {
            let r = reactor_round_trip(b, 2000)?;
            rt[i].push(r.total.as_secs_f64() * 1e6 / r.rounds as f64);
            for (j, devices) in [1, 4].into_iter().enumerate() {
                let s = reactor_stream(b, devices, Duration::from_millis(100))?;
                st[j][i].push(s.completions as f64 / s.period.as_secs_f64());
            }
        }
    }
    println!("reactor, {TRIALS} interleaved trials (median / best)");
    for (i, b) in bs.iter().enumerate() {
        let (m, best) = median_best(rt[i].clone(), false);
        println!("  round trip (8 B out, echo thread, 8 B back), {b:?}: {m:.1} / {best:.1} us");
    }
    for (j, devices) in [1, 4].into_iter().enumerate() {
        for (i, b) in bs.iter().enumerate() {
            let (m, best) = median_best(st[j][i].clone(), true);
            println!(
                "  64 B reads from {devices} full pipe(s), {b:?}: {:.0} / {:.0} completions/s",
                m, best
            );
        }
    }
    Ok(())
}

fn figure5() -> Result<(), Box<dyn std::error::Error>> {
    println!("Figure 5: system calls completed in 50 ms (queue at the gate)");
    println!(
        "  {:>8} {:>10} {:>10} {:>9}",
        "rtt", "(1,1)", "(2,2)", "ratio"
    );
    for rtt in [0, 2, 4, 6] {
        let rtt = Duration::from_micros(rtt);
        let p = Duration::from_millis(50);
        let a = fig5(1, 1, rtt, p)?.completed;
        let b = fig5(2, 2, rtt, p)?.completed;
        println!(
            "  {:>8?} {:>10} {:>10} {:>9.2}",
            rtt,
            a,
            b,
            b as f64 / a.max(1) as f64
        );
    }
    Ok(())
}

fn figures7_11() -> Result<(), Box<dyn std::error::Error>> {
    println!("Figures 7-11: concurrent system calls, rtt 4 us, 1 device, 2 cores");
    println!(
        "  {:>6} {:>18} {:>12} {:>18} {:>12}",
        "calls", "self-cont: total", "self-conts", "queue: total", "self-conts"
    );
    for calls in [5, 10, 20, 40, 60, 80] {
        let rtt = Duration::from_micros(4);
        let s = fig7_11(Exclusion::SelfContinuation, calls, rtt, 1, 2)?;
        let q = fig7_11(Exclusion::Queue, calls, rtt, 1, 2)?;
        println!(
            "  {:>6} {:>18?} {:>12} {:>18?} {:>12}",
            calls, s.total, s.self_continuations, q.total, q.self_continuations
        );
    }
    Ok(())
}

fn livelock_curve() -> Result<(), Box<dyn std::error::Error>> {
    let work = Duration::from_micros(50);
    let period = Duration::from_millis(200);
    println!("Livelock: events of {work:?} work each, 2 cores, {period:?} per point");
    println!(
        "  {:>16} {:>10} {:>10} {:>12} {:>10}",
        "design", "offered/s", "accepted", "completed/s", "rejected"
    );
    for rate in [5_000, 10_000, 20_000, 40_000, 80_000, 160_000] {
        for d in [Design::Flow, Design::ThreadPerEvent] {
            let p = livelock(d, rate, work, period, 2)?;
            println!(
                "  {:>16} {:>10} {:>10} {:>12.0} {:>10}",
                format!("{d:?}"),
                rate,
                p.accepted,
                p.completed as f64 / p.period.as_secs_f64(),
                p.rejected
            );
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let all = what == "all";
    if all || what == "reactor" {
        reactor()?;
    }
    if all || what == "fig5" {
        figure5()?;
    }
    if all || what == "fig7" {
        figures7_11()?;
    }
    if all || what == "livelock" {
        livelock_curve()?;
    }
    Ok(())
}
