//! `manycore bench reduce`: completion time of a collective `reduce` against
//! the group size, over multicast trees and flat, per idle policy: Figure 4
//! of "Interrupt-Driven Cross-Core Invocation Mechanisms on the Intel SCC".

use std::time::{Duration, Instant};

use manycore::{Group, IdlePolicy, Runtime, Topology};

use crate::bench::{find, ratio, Bench, Cmp, Options, Target};
use crate::measure::cpu_count;
use crate::plot::Plot;
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::{median, p99};

/// `manycore bench reduce`.
pub const BENCH: Bench = Bench {
    name: "reduce",
    about: "collective reduce over 1..48 members, tree and flat",
    title: "Collective reduce over multicast trees",
    method: "Completion time of `reduce` started on core 0 over n members, one per core of \
             an n-core runtime (oversubscribed past the CPUs, so poll only up to the CPU \
             count), over a tree of fan-out 4 and flat; --secs is shared among the cases. \
             `hops` is the depth the collective actually reached (carried in its messages); \
             the bound is ceil(log4 n) + 1. After Figure 4 of \"Interrupt-Driven Cross-Core \
             Invocation Mechanisms on the Intel SCC\".",
    secs: 20.0,
    expected_secs,
    run,
    targets,
    plots,
    ..Bench::DEFAULT
};

/// Group sizes.
fn sizes(o: &Options) -> &'static [usize] {
    if o.quick {
        &[1, 2, 4, 8, 16, 48]
    } else {
        &[1, 2, 4, 8, 16, 32, 48]
    }
}

/// The idle policies measured for `n` members: poll needs a CPU per core
/// (oversubscribed cores must sleep).
fn policies(n: usize) -> Vec<(&'static str, IdlePolicy)> {
    let mut v = vec![
        ("sleep", IdlePolicy::Sleep),
        ("hybrid", IdlePolicy::default()),
    ];
    if n <= cpu_count() {
        v.insert(0, ("poll", IdlePolicy::Poll));
    }
    v
}

/// Time budget of one (size, policy, topology) case.
fn per_case(o: &Options) -> Duration {
    Duration::from_secs_f64((o.secs / (sizes(o).len() * 4) as f64).clamp(0.05, 5.0))
}

fn expected_secs(o: &Options) -> f64 {
    let cases: usize = sizes(o).iter().map(|&n| 2 * policies(n).len()).sum();
    cases as f64 * per_case(o).as_secs_f64()
}

/// One member per core of a runtime with as many cores, tree (fan-out 4)
/// and flat, for the idle policies; plus the hops on the critical path.
fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    let mut out = Vec::new();
    let per_case = per_case(o);
    for &n in sizes(o) {
        progress.set_message(&format!("reduce: {n} members"));
        for (pname, policy) in policies(n) {
            let Ok(rt) = Runtime::builder().cores(n).idle(policy).build() else {
                continue;
            };
            let members: Vec<_> = (0..n)
                .filter_map(|i| rt.core(i).place(i as u64).ok())
                .collect();
            if members.len() != n {
                continue;
            }
            for (tname, topo) in [
                ("tree", Topology::Tree { fanout: 4 }),
                ("flat", Topology::Flat),
            ] {
                let g = Group::new(members.clone()).with_topology(topo);
                let g2 = g.clone();
                // Started from core 0 (the root's core), as in the paper.
                let r = rt
                    .core(0)
                    .call(move || {
                        let mut samples = Vec::new();
                        let mut hops = 0;
                        let t_end = Instant::now() + per_case;
                        for _ in 0..20 {
                            let _ = g2.reduce(|x| *x, |a, b| a + b).wait();
                        }
                        while Instant::now() < t_end || samples.len() < 5 {
                            let t0 = Instant::now();
                            let (_, h) = g2
                                .reduce_measured(|x| *x, |a, b| a + b)
                                .wait()
                                .unwrap_or((0, 0));
                            samples.push(t0.elapsed().as_nanos() as f64 / 1000.0);
                            hops = h;
                            if samples.len() >= 20_000 {
                                break;
                            }
                        }
                        (samples, hops)
                    })
                    .wait();
                let Ok((samples, hops)) = r else { continue };
                let case = format!("{n}-members");
                let imp = format!("manycore-{tname}-{pname}");
                for (metric, v) in [("median", median(&samples)), ("p99", p99(&samples))] {
                    out.extend(v.map(|v| BENCH.record(&case, &imp, metric, v, "us")));
                }
                out.push(BENCH.record(&case, &imp, "hops", hops as f64, "hops"));
                if tname == "tree" {
                    let bound = (n as f64).log(4.0).ceil() + 1.0;
                    out.push(BENCH.record(&case, &imp, "depth-bound", bound, "hops"));
                }
                drop(g);
            }
        }
    }
    out
}

/// The depth a 48-member tree reached, against its bound; and the
/// default idle policy (hybrid) against sleep on 48 members, tree and
/// flat (48 cores share the CPUs: spinning must not cost the cores that
/// have work their CPU).
fn targets(recs: &[Record]) -> Vec<Target> {
    let mut t = Vec::new();
    let (case, imp) = ("48-members", "manycore-tree-sleep");
    if let Some(bound) = find(recs, case, imp, "depth-bound") {
        t.push(Target::new(
            "48 members, tree, sleep: hops on the critical path",
            find(recs, case, imp, "hops"),
            "hops",
            Cmp::AtMost,
            bound,
        ));
    }
    for shape in ["tree", "flat"] {
        let hybrid = find(recs, case, &format!("manycore-{shape}-hybrid"), "median");
        let sleep = find(recs, case, &format!("manycore-{shape}-sleep"), "median");
        if hybrid.is_some() || sleep.is_some() {
            t.push(Target::new(
                format!("48 members, {shape}: hybrid (the default) / sleep, median"),
                ratio(hybrid, sleep),
                "x",
                Cmp::AtMost,
                1.2,
            ));
        }
    }
    t
}

/// Completion time against members, one line per implementation.
fn plots(bench: &Bench, recs: &[Record]) -> Vec<Plot> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in recs.iter().filter(|r| r.metric == "median") {
        let n: f64 = r.case.trim_end_matches("-members").parse().unwrap_or(0.0);
        match series.iter_mut().find(|s| s.0 == r.impl_) {
            Some(s) => s.1.push((n, r.value)),
            None => series.push((r.impl_.clone(), vec![(n, r.value)])),
        }
    }
    vec![Plot::lines(
        &format!("{}_completion_time", bench.name),
        "reduce completion time",
        "members (one per core)",
        "median (us)",
        series,
        true,
        true,
    )]
}
