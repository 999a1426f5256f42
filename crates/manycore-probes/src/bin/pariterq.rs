//! Probe `pariterq`: the T2 ratio of `manycore bench steal --only pariter`
//! per workload, from many alternated runs of its programs: the medians of
//! the per-round ratios against the first program, their interquartile
//! range and how many rounds were above 1.00 (the bench reports only the
//! ratio of its medians).
//!
//! `cargo run --release -p manycore-probes --bin pariterq -- ROUNDS PROGRAM...
//! [-- ARGS...]`
//!
//! The first program is the reference (say
//! `target/pariter-rayon-core/release/pariter-on-rayon-core`); the others
//! (`target/pariter-manycore/release/pariter-on-manycore`, or a copy of it
//! built from another commit) are compared with it. Each round runs every
//! program once with `--threads 2` and ARGS (say `--only sum,collect`), the
//! order rotated by one each round.

use std::collections::BTreeMap;
use std::process::Command;

use manycore_cli::benches::mpi::parse_any_record;

/// Quartiles (nearest rank) of `v`.
fn quartiles(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

/// One run of `program`: its records' values by case.
fn run(program: &str, args: &[String]) -> BTreeMap<String, f64> {
    let out = Command::new(program)
        .args(["--threads", "2"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(parse_any_record)
        .map(|r| (r.case, r.value))
        .collect()
}

fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let (head, args) = match all.iter().position(|a| a == "--") {
        Some(i) => (&all[..i], all[i + 1..].to_vec()),
        None => (&all[..], Vec::new()),
    };
    let rounds: usize = head.first().and_then(|r| r.parse().ok()).unwrap_or(0);
    let programs = head.get(1..).unwrap_or_default();
    if rounds == 0 || programs.len() < 2 {
        eprintln!("usage: pariterq ROUNDS REFERENCE PROGRAM... [-- ARGS...]");
        std::process::exit(2);
    }
    let n = programs.len();
    // values[p][case], one per round.
    let mut values: Vec<BTreeMap<String, Vec<f64>>> = vec![BTreeMap::new(); n];
    for round in 0..rounds {
        for k in 0..n {
            let p = (round + k) % n;
            for (case, v) in run(&programs[p], &args) {
                values[p].entry(case).or_default().push(v);
            }
        }
        eprint!(".");
    }
    eprintln!();
    println!(
        "{rounds} rounds, T2, ms; ratios per round against {}",
        programs[0]
    );
    for (case, reference) in &values[0] {
        let (_, m, _) = quartiles(reference);
        println!("{case}: reference median {m:.3}");
        for (p, vals) in values.iter().enumerate().skip(1) {
            let Some(v) = vals.get(case) else { continue };
            let r: Vec<f64> = v.iter().zip(reference).map(|(a, b)| a / b).collect();
            let (q1, rm, q3) = quartiles(&r);
            let (_, vm, _) = quartiles(v);
            let over = r.iter().filter(|&&x| x > 1.0).count();
            println!(
                "  {}: median {vm:.3}, ratio median {rm:.3} (IQR {q1:.3}-{q3:.3}), {over}/{} above 1",
                programs[p],
                r.len()
            );
        }
    }
}
