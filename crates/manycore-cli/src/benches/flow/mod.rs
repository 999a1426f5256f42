//! `manycore bench flow`: CEFOS's dataflow zero-wait threads
//! (`manycore::flow`) against their peers, and the paper's experiments
//! (Kusakabe, Taniguchi, Amamiya, *A Study of a Continuation-based
//! Fine-grain Multithreaded Operating System CEFOS*, Figures 5 to 11).
//!
//! Parts (`--only` chooses among them), and the records each emits
//! (`case` / `impl` / `metric`, unit); these names are stable:
//!
//! * `fire`: a chain of firings on one core (`overhead.rs`).
//!   `local_fire` / `flow`, `flow-spawn`, `core-spawn` / `median` (ns per
//!   firing); `ratio` / `fire flow/core-spawn` / `median` (x).
//! * `cross`: a stream of cross-core continuation signals against a stream
//!   of plain `Core::spawn`s, core 0 to core 1, and the same signals made
//!   on core 1 itself (the owner's share: deliver, fire, free)
//!   (`overhead.rs`). `cross_core` / `flow-signal`, `flow-local`,
//!   `core-spawn` / `median` (ns per operation); `ratio` / `cross
//!   flow-signal/core-spawn`, `cross flow-local/core-spawn` / `median` (x).
//! * `graph`: a binary reduction tree of 2^(d+1) - 1 nodes, d = 19 (about
//!   10^6 nodes; 17 with `--secs` below 5, 14 with `--quick`) in flow,
//!   rayon, dagx and tokio (`graph.rs`). `graph` / `tree` / `count`
//!   (nodes); `graph` / `flow` / `count` (instances fired); `graph` /
//!   `flow`, `rayon-scope`, `dagx`, `tokio` / `total` (ms), `per_node`
//!   (ns); `graph` / `flow` /
//!   `per_instance` (ns); `graph` / `dagx` / `build` (ms); `ratio` /
//!   `graph flow/dagx`, `graph flow/tokio`, `graph flow/rayon-scope` /
//!   `median` (x).
//! * `fig5`: `fig5-rtt-{0,2,4,6}us` / `devices{d}-cores{c}` / `completed`
//!   (calls in the period), `relative` (x, against (1,1) at the same round
//!   trip).
//! * `fig7`: `fig7-calls-{5,10,20,40,80}` / `self-continuation`, `queue` /
//!   `total` (us; divided by the calls, Figure 8), `self_continuations`
//!   (count; divided by the calls, Figure 9), `queued` (count).
//! * `livelock`: `livelock-x{0.25,0.5,1,2,4}` (offered rate as a multiple
//!   of the nominal capacity) / `flow`, `thread-per-event`, `tokio` /
//!   `offered`, `accepted`, `completed` (events/s); `livelock` / the
//!   designs / `peak` (events/s), `at_4x/peak` (x).
//! * `reactor`: `ping_pong` / `flow-epoll`, `flow-io_uring` (where the
//!   kernel allows it), `epoll-loop`, `epoll-2threads` / `median` (us per
//!   round trip, `reactor.rs`); `ratio` / `reactor flow-epoll/epoll-loop`,
//!   `reactor flow-epoll/epoll-2threads` / `median` (x); the same over two
//!   eventfds: `ping_pong` / `flow-epoll-eventfd`, `epoll-loop-eventfd`,
//!   `ratio` / `reactor flow-epoll-eventfd/epoll-loop-eventfd`.
//!
//! Every figure is a median over repetitions, the rows of a part
//! interleaved within each repetition. Every run is bounded in time; a row
//! that fails is reported on stderr with its error and left out.

mod graph;
mod livelock_tokio;
mod overhead;
pub mod reactor;

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use manycore::Runtime;
use manycore_flow::experiments::{self, Design};
use manycore_flow::{Backend, Exclusion};

use crate::bench::{find, ratio, Bench, Cmp, Opt, Options, Target};
use crate::measure::{cpu_count, run_batches, Plan, Samples};
use crate::plot::Plot;
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::median;

/// `manycore bench flow`.
pub const BENCH: Bench = Bench {
    name: "flow",
    about: "dataflow instances vs spawn, rayon, dagx, tokio; CEFOS figures",
    title: "Dataflow zero-wait threads (CEFOS)",
    method: "Overhead per fired instance: a chain of instances on one core (each body \
             creates the next with one input and signals it) against the runtime's own local \
             `Core::spawn` chain; a stream of cross-core signals to instances waiting on core 1 \
             against a stream of plain `Core::spawn`s and the same signals made on core 1 \
             itself, the owner's share (batch driver, --secs shared by these, \
             the cross-core rows and the reactor rows; rows interleaved, --reps repetitions, \
             medians). A binary reduction tree of 2^20 - 1 nodes (2^18 - 1 with --secs below 5, \
             2^15 - 1 with --quick; at most 3 repetitions), every node a task, in flow, rayon::scope, dagx (built and run on tokio) and \
             tokio spawn-and-join, as many workers as CPUs. Figure 5: system calls through \
             the Figure 4 program completed in 100 ms (20 ms with --quick) for (devices, \
             cores) = (1,1), (2,2) and (3,3), each only where the CPUs hold its cores and \
             spinning devices (--oversubscribe runs them anyway). Figures 7-11: 5 to 80 \
             concurrent calls (round trip 4 us, 1 device, 2 cores), self-continuation \
             against the software queue. Livelock (Figure 6): events of 50 us of work \
             offered at 0.25x to 4x the nominal capacity for 200 ms (50 ms with --quick), \
             flow against a thread per event and a tokio task per event. Reactor: a \
             ping-pong of 8 bytes through two pipes between two instances through the \
             reactor, against a hand-written epoll loop (one thread) and two threads \
             each in its own epoll. After \"A Study of a Continuation-based Fine-grain \
             Multithreaded Operating System CEFOS\".",
    secs: 6.0,
    report_secs: [0.6, 3.0, 12.0],
    repeats: true,
    options: &[
        Opt {
            flag: "--only",
            value: Some("PARTS"),
            help: "run only these parts: fire, cross, graph, fig5, fig7,\nlivelock, reactor (comma-separated)",
            parse: parse_parts,
        },
        Opt::switch(
            "--oversubscribe",
            "run Figure 5's (2,2) and (3,3) even where the CPUs are fewer\nthan their cores and devices",
        ),
    ],
    expected_secs,
    run,
    targets,
    notes,
    plots,
    ..Bench::DEFAULT
};

/// The parts of the bench `--only` chooses from.
const PARTS: [&str; 7] = [
    "fire", "cross", "graph", "fig5", "fig7", "livelock", "reactor",
];

fn parse_parts(v: &str) -> Result<Vec<String>, String> {
    v.split(',')
        .map(str::trim)
        .map(|p| match PARTS.contains(&p) {
            true => Ok(p.to_string()),
            false => Err(format!("expected some of {}", PARTS.join(", "))),
        })
        .collect()
}

/// Whether `--only` (or its absence) selects `part`.
fn wanted(o: &Options, part: &str) -> bool {
    o.get("--only").is_none_or(|v| v.iter().any(|p| p == part))
}

/// Problem sizes: full in `bench flow`, small with `--quick`.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Depth of the reduction tree.
    depth: u32,
    /// Figure 5's counting period.
    fig5_period: Duration,
    /// The livelock curve's period per point.
    livelock_period: Duration,
    /// Repetitions of each livelock point.
    livelock_reps: usize,
    /// The longest a graph run may take.
    graph_limit: Duration,
    /// Repetitions of the graph runs.
    graph_reps: usize,
}

fn sizes(o: &Options) -> Sizes {
    // The 10^6-node tree costs dagx about 8 s a run on a 2-CPU VM: only
    // with a budget for it.
    let depth = if o.secs >= 5.0 { 19 } else { 17 };
    if o.quick {
        Sizes {
            depth: 14,
            fig5_period: Duration::from_millis(20),
            livelock_period: Duration::from_millis(50),
            livelock_reps: 1,
            graph_limit: Duration::from_secs(20),
            graph_reps: o.reps.max(1),
        }
    } else {
        Sizes {
            depth,
            fig5_period: Duration::from_millis(100),
            livelock_period: Duration::from_millis(200),
            livelock_reps: o.reps.clamp(1, 3),
            graph_limit: Duration::from_secs(120),
            graph_reps: o.reps.clamp(1, 3),
        }
    }
}

/// Round trips of the simulated devices of Figure 5 (us).
const FIG5_RTT_US: [u64; 4] = [0, 2, 4, 6];
/// Concurrent calls of Figures 7 to 11.
const FIG7_CALLS: [usize; 5] = [5, 10, 20, 40, 80];
/// Offered rates of the livelock curve, as multiples of the capacity.
const LIVELOCK_X: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];
/// Work per event of the livelock curve.
const LIVELOCK_WORK: Duration = Duration::from_micros(50);

/// Figure 5's configurations: (devices, cores). Each needs a CPU per core
/// and per spinning device.
const FIG5_CONFIGS: [(usize, usize); 3] = [(1, 1), (2, 2), (3, 3)];

/// The impl name of Figure 5's configuration (devices, cores).
fn fig5_impl(devices: usize, cores: usize) -> String {
    format!("devices{devices}-cores{cores}")
}

/// Figure 5's configurations that run here.
fn fig5_configs(o: &Options) -> Vec<(usize, usize)> {
    let cpus = cpu_count();
    FIG5_CONFIGS
        .into_iter()
        .filter(|(d, c)| d + c <= cpus || o.switch("--oversubscribe"))
        .collect()
}

/// Seconds a run is expected to take: --secs for the batch-driven rows,
/// and the fixed sizes of the others (graph times from a 2-CPU VM).
fn expected_secs(o: &Options) -> f64 {
    let s = sizes(o);
    let reps = o.reps.max(1) as f64;
    let mut t = 0.0;
    for (part, share) in [("fire", 0.25), ("cross", 0.25), ("reactor", 0.5)] {
        if wanted(o, part) {
            t += o.secs * share + 0.1;
        }
    }
    if wanted(o, "graph") {
        // A warm-up, then per repetition all four systems (dagx most).
        let per_rep = match s.depth {
            19 => 10.0,
            17 => 2.5,
            _ => 0.15,
        };
        t += 0.3 + s.graph_reps as f64 * per_rep;
    }
    if wanted(o, "fig5") {
        let runs = reps * (FIG5_RTT_US.len() * fig5_configs(o).len()) as f64;
        t += runs * (s.fig5_period.as_secs_f64() * 1.1 + 0.02);
    }
    if wanted(o, "fig7") {
        t += reps * (FIG7_CALLS.len() * 2) as f64 * 0.02;
    }
    if wanted(o, "livelock") {
        let runs = (s.livelock_reps * LIVELOCK_X.len() * 3) as f64;
        t += runs * (s.livelock_period.as_secs_f64() + 0.03);
    }
    t
}

/// Runs `f` on a thread of its own and waits at most `limit` for it: a
/// panic or an overrun is an error naming `what` (an overrunning thread is
/// left to finish on its own).
fn bounded<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("flow-bench".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| format!("{what}: cannot start a thread: {e}"))?;
    match rx.recv_timeout(limit) {
        Ok(r) => r.map_err(|e| format!("{what}: {e}")),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(format!("{what}: not done within {limit:?} (left running)"))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(format!("{what}: panicked")),
    }
}

/// A batch-driven row: its impl name and how to run a batch of `n`.
type Row<'a> = (String, Box<dyn FnMut(u64) -> Result<Duration, String> + 'a>);

/// Runs `rows` under `plan`, one repetition of each in turn, `plan.reps`
/// times; the samples of each row that never failed.
fn interleave(
    part: &str,
    plan: Plan,
    rows: &mut [Row<'_>],
    progress: &Progress,
) -> Vec<(String, Samples)> {
    let mut acc: Vec<Option<Samples>> = rows.iter().map(|_| Some(Samples::default())).collect();
    for rep in 0..plan.reps {
        for ((name, batch), acc) in rows.iter_mut().zip(acc.iter_mut()) {
            progress.set_message(&format!("flow {part}: {name} ({}/{})", rep + 1, plan.reps));
            if let Some(a) = acc {
                match run_batches(plan.one_rep(), &mut *batch) {
                    Ok(s) => a.merge(s),
                    Err(e) => {
                        progress.println(&format!("flow: {part} {name}: failed: {e}"));
                        *acc = None;
                    }
                }
            }
        }
    }
    rows.iter()
        .zip(acc)
        .filter_map(|((name, _), s)| Some((name.clone(), s?)))
        .collect()
}

/// Runs every part (or those `--only` names).
fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    let mut out = Vec::new();
    if wanted(o, "fire") {
        fire(o, progress, &mut out);
    }
    if wanted(o, "cross") {
        cross(o, progress, &mut out);
    }
    if wanted(o, "reactor") {
        ping_pong(o, progress, &mut out);
    }
    if wanted(o, "graph") {
        tree(o, progress, &mut out);
    }
    if wanted(o, "fig5") {
        fig5(o, progress, &mut out);
    }
    if wanted(o, "fig7") {
        fig7(o, progress, &mut out);
    }
    if wanted(o, "livelock") {
        livelock(o, progress, &mut out);
    }
    out
}

/// How a row of a runtime part runs a batch of `n` on the part's runtime.
type RtBatch = Box<dyn Fn(&Runtime, u64) -> Result<Duration, String>>;

/// Local firings: flow instances, `Ctx::spawn`, and `Core::spawn`.
fn fire(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    let rows = overhead::Local::ALL
        .into_iter()
        .map(|how| -> (&'static str, RtBatch) {
            (
                how.name(),
                Box::new(move |rt, n| overhead::local_chain(rt, how, n)),
            )
        })
        .collect();
    runtime_part(o, progress, out, ("fire", "local_fire", 1), rows);
}

/// Cross-core signals against plain spawns, core 0 to core 1.
fn cross(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    let rows = overhead::Cross::ALL
        .into_iter()
        .map(|how| -> (&'static str, RtBatch) {
            (
                how.name(),
                Box::new(move |rt, n| overhead::cross_stream(rt, how, n)),
            )
        })
        .collect();
    runtime_part(o, progress, out, ("cross", "cross_core", 2), rows);
    // The owner's share alone, against the same spawns.
    let r = ratio(
        find(out, "cross_core", "flow-local", "median"),
        find(out, "cross_core", "core-spawn", "median"),
    );
    out.extend(r.map(|r| BENCH.record("ratio", "cross flow-local/core-spawn", "median", r, "x")));
}

/// A part whose rows run batches on one runtime of its own: `(part, case,
/// cores)`. Records `case` / each row / `median` (ns per operation) and
/// `ratio` / `{part} {first row}/{last row}` / `median` (x).
fn runtime_part(
    o: &Options,
    progress: &Progress,
    out: &mut Vec<Record>,
    (part, case, cores): (&str, &str, usize),
    rows: Vec<(&'static str, RtBatch)>,
) {
    let rt = match Runtime::builder().cores(cores).build() {
        Ok(rt) => rt,
        Err(e) => return progress.println(&format!("flow: {part}: runtime: {e}")),
    };
    let (Some(&(first, _)), Some(&(last, _))) = (rows.first(), rows.last()) else {
        return;
    };
    let mut batches: Vec<Row<'_>> = rows
        .iter()
        .map(|(name, f)| -> Row<'_> {
            let rt = &rt;
            (name.to_string(), Box::new(move |n| f(rt, n)))
        })
        .collect();
    let plan = Plan::throughput(o.secs * 0.25 / batches.len() as f64, o.reps);
    for (name, s) in interleave(part, plan, &mut batches, progress) {
        out.extend(s.median_ns().map(|v| BENCH.record(case, &name, "median", v, "ns")));
    }
    drop(batches);
    rt.shutdown();
    let r = ratio(find(out, case, first, "median"), find(out, case, last, "median"));
    let imp = format!("{part} {first}/{last}");
    out.extend(r.map(|r| BENCH.record("ratio", &imp, "median", r, "x")));
}

/// The reactor ping-pong against the epoll loops.
fn ping_pong(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    progress.set_message("flow reactor: setting up");
    let mut rows: Vec<Row<'static>> = Vec::new();
    for b in experiments::backends() {
        let name = match b {
            Backend::IoUring => "flow-io_uring",
            _ => "flow-epoll",
        };
        match reactor::FlowPingPong::new(b) {
            Ok(f) => rows.push((name.into(), Box::new(move |n| f.batch(n)))),
            Err(e) => progress.println(&format!("flow: reactor {name}: {e}")),
        }
    }
    match reactor::EpollLoop::new() {
        Ok(l) => rows.push(("epoll-loop".into(), Box::new(move |n| l.batch(n)))),
        Err(e) => progress.println(&format!("flow: reactor epoll-loop: {e}")),
    }
    match reactor::EpollThreads::new() {
        Ok(t) => rows.push(("epoll-2threads".into(), Box::new(move |n| t.batch(n)))),
        Err(e) => progress.println(&format!("flow: reactor epoll-2threads: {e}")),
    }
    // The pipe rows keep their time; the eventfd rows come on top.
    let pipe_rows = rows.len();
    match reactor::FlowPingPong::eventfds(Backend::Epoll) {
        Ok(f) => rows.push(("flow-epoll-eventfd".into(), Box::new(move |n| f.batch(n)))),
        Err(e) => progress.println(&format!("flow: reactor flow-epoll-eventfd: {e}")),
    }
    match reactor::EpollLoop::eventfds() {
        Ok(l) => rows.push(("epoll-loop-eventfd".into(), Box::new(move |n| l.batch(n)))),
        Err(e) => progress.println(&format!("flow: reactor epoll-loop-eventfd: {e}")),
    }
    if rows.is_empty() {
        return;
    }
    let plan = Plan::throughput(o.secs * 0.5 / pipe_rows.max(1) as f64, o.reps);
    for (name, s) in interleave("reactor", plan, &mut rows, progress) {
        out.extend(
            s.median_ns()
                .map(|v| BENCH.record("ping_pong", &name, "median", v / 1e3, "us")),
        );
    }
    drop(rows);
    let flow = find(out, "ping_pong", "flow-epoll", "median");
    for peer in ["epoll-loop", "epoll-2threads"] {
        if let Some(r) = ratio(flow, find(out, "ping_pong", peer, "median")) {
            let imp = format!("reactor flow-epoll/{peer}");
            out.push(BENCH.record("ratio", &imp, "median", r, "x"));
        }
    }
    let (f, l) = ("flow-epoll-eventfd", "epoll-loop-eventfd");
    if let Some(r) = ratio(find(out, "ping_pong", f, "median"), find(out, "ping_pong", l, "median")) {
        out.push(BENCH.record("ratio", &format!("reactor {f}/{l}"), "median", r, "x"));
    }
}

/// The reduction tree in the four systems.
fn tree(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    let s = sizes(o);
    let workers = cpu_count().max(1);
    let depth = s.depth;
    let nodes = graph::nodes(depth) as f64;
    progress.set_message("flow graph: setting up");
    let rt = match Runtime::builder().cores(workers).build() {
        Ok(rt) => rt,
        Err(e) => return progress.println(&format!("flow: graph: runtime: {e}")),
    };
    let pool = match graph::rayon_pool(workers) {
        Ok(p) => Arc::new(p),
        Err(e) => return progress.println(&format!("flow: graph: {e}")),
    };
    let trt = match graph::tokio_runtime(workers) {
        Ok(t) => Arc::new(t),
        Err(e) => return progress.println(&format!("flow: graph: {e}")),
    };
    const IMPLS: [&str; 4] = ["flow", "rayon-scope", "dagx", "tokio"];
    // One run of system `k` on a tree of depth `d`: (ms, dagx's build ms).
    let run_one = |k: usize, d: u32| -> Result<(f64, f64), String> {
        let t = std::time::Instant::now();
        let (sum, build) = match k {
            0 => (graph::run_flow(&rt, d, graph::SPREAD, s.graph_limit)?, 0.0),
            1 => {
                let p = pool.clone();
                let v = bounded("rayon", s.graph_limit, move || Ok(graph::run_rayon(&p, d)))?;
                (v, 0.0)
            }
            2 => {
                let r = trt.clone();
                let (v, b) = bounded("dagx", s.graph_limit, move || graph::run_dagx(&r, d))?;
                (v, b.as_secs_f64() * 1e3)
            }
            _ => {
                let r = trt.clone();
                let v = bounded("tokio", s.graph_limit, move || Ok(graph::run_tokio(&r, d)))?;
                (v, 0.0)
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match sum == graph::expected_sum(d) {
            true => Ok((ms, build)),
            false => Err(format!("sum {sum}, expected {}", graph::expected_sum(d))),
        }
    };
    // Warm-up on a small tree (threads started, allocator primed).
    let mut failed = [false; 4];
    for (k, name) in IMPLS.iter().enumerate() {
        progress.set_message(&format!("flow graph: warm-up {name}"));
        if let Err(e) = run_one(k, depth.min(12)) {
            progress.println(&format!("flow: graph {name}: failed: {e}"));
            failed[k] = true;
        }
    }
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); 4];
    let mut build = Vec::new();
    let reps = s.graph_reps;
    for rep in 0..reps {
        for (k, name) in IMPLS.iter().enumerate() {
            if failed[k] {
                continue;
            }
            progress.set_message(&format!("flow graph: {name} ({}/{reps})", rep + 1));
            match run_one(k, depth) {
                Ok((t, b)) => {
                    ms[k].push(t);
                    if k == 2 {
                        build.push(b);
                    }
                }
                Err(e) => {
                    progress.println(&format!("flow: graph {name}: failed: {e}"));
                    failed[k] = true;
                }
            }
        }
    }
    rt.shutdown();
    out.push(BENCH.record("graph", "tree", "count", nodes, "nodes"));
    let instances = graph::flow_instances(depth) as f64;
    out.push(BENCH.record("graph", "flow", "count", instances, "instances"));
    for (k, name) in IMPLS.iter().enumerate() {
        if failed[k] {
            continue;
        }
        let Some(m) = median(&ms[k]) else { continue };
        out.push(BENCH.record("graph", name, "total", m, "ms"));
        out.push(BENCH.record("graph", name, "per_node", m * 1e6 / nodes, "ns"));
        if k == 0 {
            let per = m * 1e6 / instances;
            out.push(BENCH.record("graph", name, "per_instance", per, "ns"));
        }
        if k == 2 {
            out.extend(median(&build).map(|b| BENCH.record("graph", name, "build", b, "ms")));
        }
    }
    let flow = find(out, "graph", "flow", "total");
    for peer in ["dagx", "tokio", "rayon-scope"] {
        if let Some(r) = ratio(flow, find(out, "graph", peer, "total")) {
            out.push(BENCH.record("ratio", &format!("graph flow/{peer}"), "median", r, "x"));
        }
    }
}

/// Figure 5: calls completed in the period, per round trip and
/// configuration.
fn fig5(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    let s = sizes(o);
    let configs = fig5_configs(o);
    let mut got: BTreeMap<(u64, usize), Vec<f64>> = BTreeMap::new();
    let reps = o.reps.max(1);
    for rep in 0..reps {
        for rtt in FIG5_RTT_US {
            for &(d, c) in &configs {
                progress.set_message(&format!(
                    "flow fig5: rtt {rtt} us, ({d},{c}) ({}/{reps})",
                    rep + 1
                ));
                let period = s.fig5_period;
                let r = bounded("fig5", period * 10 + Duration::from_secs(30), move || {
                    experiments::fig5(d, c, Duration::from_micros(rtt), period)
                        .map_err(|e| e.to_string())
                });
                match r {
                    Ok(p) => got.entry((rtt, d)).or_default().push(p.completed as f64),
                    Err(e) => progress.println(&format!("flow: fig5 rtt {rtt} us ({d},{c}): {e}")),
                }
            }
        }
    }
    for rtt in FIG5_RTT_US {
        let case = format!("fig5-rtt-{rtt}us");
        let base = got.get(&(rtt, 1)).and_then(|v| median(v));
        for &(d, c) in &configs {
            let Some(m) = got.get(&(rtt, d)).and_then(|v| median(v)) else {
                continue;
            };
            let imp = fig5_impl(d, c);
            out.push(BENCH.record(&case, &imp, "completed", m, "calls"));
            if let Some(r) = ratio(Some(m), base) {
                out.push(BENCH.record(&case, &imp, "relative", r, "x"));
            }
        }
    }
}

/// Three figures per repetition of a point, keyed by (point, impl) indices.
type Triples = BTreeMap<(usize, usize), Vec<(f64, f64, f64)>>;

/// The gate's two policies and their impl names.
const POLICIES: [(Exclusion, &str); 2] = [
    (Exclusion::SelfContinuation, "self-continuation"),
    (Exclusion::Queue, "queue"),
];

/// Figures 7 to 11: concurrent calls under each policy.
fn fig7(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    // (total us, self-continuations, queued) per (calls, policy).
    let mut got: Triples = BTreeMap::new();
    let reps = o.reps.max(1);
    for rep in 0..reps {
        for calls in FIG7_CALLS {
            for (k, (policy, name)) in POLICIES.iter().copied().enumerate() {
                progress.set_message(&format!("flow fig7: {calls} calls, {name} ({}/{reps})", rep + 1));
                let r = bounded("fig7", Duration::from_secs(90), move || {
                    experiments::fig7_11(policy, calls, Duration::from_micros(4), 1, 2)
                        .map_err(|e| e.to_string())
                });
                match r {
                    Ok(p) => got.entry((calls, k)).or_default().push((
                        p.total.as_secs_f64() * 1e6,
                        p.self_continuations as f64,
                        p.queued as f64,
                    )),
                    Err(e) => progress.println(&format!("flow: fig7 {calls} calls {name}: {e}")),
                }
            }
        }
    }
    for ((calls, k), v) in got {
        let case = format!("fig7-calls-{calls}");
        let imp = POLICIES[k].1;
        let col = |f: fn(&(f64, f64, f64)) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
        if let Some(t) = col(|x| x.0) {
            out.push(BENCH.record(&case, imp, "total", t, "us"));
        }
        if let Some(sc) = col(|x| x.1) {
            out.push(BENCH.record(&case, imp, "self_continuations", sc, "count"));
        }
        if let Some(q) = col(|x| x.2) {
            out.push(BENCH.record(&case, imp, "queued", q, "count"));
        }
    }
}

/// The livelock designs and their impl names.
const DESIGNS: [&str; 3] = ["flow", "thread-per-event", "tokio"];

/// A multiple of the capacity as it appears in a case name.
fn x_name(m: f64) -> String {
    let s = format!("{m}");
    format!("livelock-x{s}")
}

/// The livelock curve: useful work against the offered rate.
fn livelock(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    let s = sizes(o);
    let cores = cpu_count().max(1);
    let capacity = cores as f64 / LIVELOCK_WORK.as_secs_f64();
    let period = s.livelock_period;
    let secs = period.as_secs_f64();
    // (offered/s, accepted/s, completed/s) per (multiple, design).
    let mut got: Triples = BTreeMap::new();
    for rep in 0..s.livelock_reps {
        for (i, m) in LIVELOCK_X.iter().copied().enumerate() {
            let rate = (capacity * m) as u64;
            for (k, name) in DESIGNS.iter().enumerate() {
                progress.set_message(&format!(
                    "flow livelock: {name} at {m}x ({}/{})",
                    rep + 1,
                    s.livelock_reps
                ));
                let limit = period * 5 + Duration::from_secs(30);
                let r = bounded("livelock", limit, move || match k {
                    0 | 1 => {
                        let d = if k == 0 { Design::Flow } else { Design::ThreadPerEvent };
                        experiments::livelock(d, rate, LIVELOCK_WORK, period, cores)
                            .map(|p| (p.offered, p.accepted, p.completed))
                            .map_err(|e| e.to_string())
                    }
                    _ => livelock_tokio::livelock_tokio(rate, LIVELOCK_WORK, period, cores)
                        .map(|p| (p.offered, p.accepted, p.completed)),
                });
                match r {
                    Ok((of, ac, co)) => got.entry((i, k)).or_default().push((
                        of as f64 / secs,
                        ac as f64 / secs,
                        co as f64 / secs,
                    )),
                    Err(e) => progress.println(&format!("flow: livelock {name} {m}x: {e}")),
                }
            }
        }
    }
    let mut curve: Vec<Vec<(usize, f64)>> = vec![Vec::new(); DESIGNS.len()];
    for ((i, k), v) in got {
        let case = x_name(LIVELOCK_X[i]);
        let imp = DESIGNS[k];
        let col = |f: fn(&(f64, f64, f64)) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
        for (metric, val) in [
            ("offered", col(|x| x.0)),
            ("accepted", col(|x| x.1)),
            ("completed", col(|x| x.2)),
        ] {
            out.extend(val.map(|v| BENCH.record(&case, imp, metric, v, "events/s")));
        }
        if let Some(c) = col(|x| x.2) {
            curve[k].push((i, c));
        }
    }
    let top = LIVELOCK_X.len() - 1;
    for (k, pts) in curve.iter().enumerate() {
        let peak = pts.iter().map(|p| p.1).fold(f64::NAN, f64::max);
        let Some(&(_, at)) = pts.iter().find(|p| p.0 == top) else {
            continue;
        };
        let imp = DESIGNS[k];
        out.push(BENCH.record("livelock", imp, "peak", peak, "events/s"));
        if let Some(r) = ratio(Some(at), Some(peak)) {
            out.push(BENCH.record("livelock", imp, "at_4x/peak", r, "x"));
        }
    }
}

/// `total` or `self_continuations` of `policy` at `calls` calls.
fn fig7_get(recs: &[Record], calls: usize, policy: &str, metric: &str) -> Option<f64> {
    find(recs, &format!("fig7-calls-{calls}"), policy, metric)
}

/// Whether any record's case starts with `prefix` (the part ran).
fn ran(recs: &[Record], prefix: &str) -> bool {
    recs.iter().any(|r| r.case.starts_with(prefix))
}

/// The targets of the parts that ran.
fn targets(recs: &[Record]) -> Vec<Target> {
    let mut v = Vec::new();
    let at_most = |label: &str, value, limit| Target::new(label, value, "x", Cmp::AtMost, limit);
    if ran(recs, "local_fire") {
        v.push(Target::new(
            "local firing (create, signal, fire), flow",
            find(recs, "local_fire", "flow", "median"),
            "ns",
            Cmp::AtMost,
            50.0,
        ));
    }
    if ran(recs, "cross_core") {
        v.push(at_most(
            "cross-core signal / Core::spawn",
            find(recs, "ratio", "cross flow-signal/core-spawn", "median"),
            1.5,
        ));
    }
    if ran(recs, "graph") {
        for peer in ["dagx", "tokio"] {
            v.push(at_most(
                &format!("graph per node, flow / {peer}"),
                find(recs, "ratio", &format!("graph flow/{peer}"), "median"),
                0.5,
            ));
        }
    }
    if ran(recs, "fig7-") {
        let (first, last) = (FIG7_CALLS[0], FIG7_CALLS[FIG7_CALLS.len() - 1]);
        let growth = last as f64 / first as f64;
        let q = |c, m| fig7_get(recs, c, "queue", m);
        v.push(at_most(
            &format!("queue: total({last}) / total({first})"),
            ratio(q(last, "total"), q(first, "total")),
            1.5 * growth,
        ));
        v.push(Target::new(
            format!("queue: self-continuations at {last} calls"),
            q(last, "self_continuations"),
            "count",
            Cmp::AtMost,
            last as f64,
        ));
        let sc = |c| fig7_get(recs, c, "self-continuation", "self_continuations");
        v.push(Target::new(
            format!("self-continuation: sc({last}) / max(sc({first}), 1)"),
            ratio(sc(last), sc(first).map(|x| x.max(1.0))),
            "x",
            Cmp::AtLeast,
            growth,
        ));
    }
    if ran(recs, "livelock") {
        v.push(Target::new(
            "livelock: flow's useful work at 4x capacity / its peak",
            find(recs, "livelock", "flow", "at_4x/peak"),
            "x",
            Cmp::AtLeast,
            0.9,
        ));
    }
    if ran(recs, "ping_pong") {
        v.push(at_most(
            "reactor ping-pong, flow (epoll) / epoll loop",
            find(recs, "ratio", "reactor flow-epoll/epoll-loop", "median"),
            1.2,
        ));
        let r = find(
            recs,
            "ratio",
            "reactor flow-epoll-eventfd/epoll-loop-eventfd",
            "median",
        );
        if r.is_some() {
            v.push(at_most(
                "reactor ping-pong over eventfds, flow (epoll) / epoll loop",
                r,
                1.2,
            ));
        }
    }
    v
}

/// What the table does not say.
fn notes(recs: &[Record]) -> String {
    let mut s = String::new();
    if let (Some(n), Some(i)) = (
        find(recs, "graph", "tree", "count"),
        find(recs, "graph", "flow", "count"),
    ) {
        s.push_str(&format!(
            "- graph: {n:.0} nodes; flow fires {i:.0} instances (a node each, and a join per \
             internal node); `per_node` divides the whole time (dagx: construction included) \
             by the nodes.\n"
        ));
    }
    if ran(recs, "fig5-") {
        let not_run: Vec<String> = FIG5_CONFIGS
            .into_iter()
            .filter(|&(d, c)| !recs.iter().any(|r| r.impl_ == fig5_impl(d, c)))
            .map(|(d, c)| format!("({d},{c}) needs {} CPUs", d + c))
            .collect();
        if !not_run.is_empty() {
            s.push_str(&format!(
                "- fig5: not run: {} (a CPU per core and per spinning device), and the \
                 original CPU set has {}; `--oversubscribe` runs them anyway.\n",
                not_run.join(", "),
                cpu_count()
            ));
        }
    }
    if let Some(r) = find(recs, "ratio", "cross flow-local/core-spawn", "median") {
        s.push_str(&format!(
            "- cross: the same signals made on the owner core (its share: deliver, fire, \
             free) / Core::spawn: {r:.2}x.\n"
        ));
    }
    if let Some(r) = find(recs, "ratio", "reactor flow-epoll/epoll-2threads", "median") {
        s.push_str(&format!(
            "- reactor: flow (epoll) / two threads each in its own epoll: {r:.2}x.\n"
        ));
    }
    for d in ["thread-per-event", "tokio"] {
        if let Some(r) = find(recs, "livelock", d, "at_4x/peak") {
            s.push_str(&format!("- livelock: {d} at 4x / its peak: {r:.2}x.\n"));
        }
    }
    s
}

/// The points of `metric` over the cases starting with `prefix`, one series
/// per impl, x parsed from the case by `x`.
fn series(
    recs: &[Record],
    prefix: &str,
    metric: &str,
    x: impl Fn(&str) -> Option<f64>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in recs.iter().filter(|r| r.metric == metric && r.case.starts_with(prefix)) {
        let Some(xv) = x(&r.case[prefix.len()..]) else {
            continue;
        };
        match out.iter_mut().find(|s| s.0 == r.impl_) {
            Some(s) => s.1.push((xv, r.value)),
            None => out.push((r.impl_.clone(), vec![(xv, r.value)])),
        }
    }
    out
}

/// Bars of the batch-driven parts and the graph, lines of the figures.
fn plots(bench: &Bench, recs: &[Record]) -> Vec<Plot> {
    let name = bench.name;
    let mut v = Vec::new();
    for (case, metric, title, axis) in [
        ("local_fire", "median", "local firing", "ns per firing"),
        ("cross_core", "median", "cross-core signal vs spawn", "ns per operation"),
        ("graph", "per_node", "reduction tree, per node", "ns per node"),
        ("ping_pong", "median", "ping-pong through pipes", "us per round trip"),
    ] {
        let bars = crate::plot::pick(recs, case, metric);
        if !bars.is_empty() {
            v.push(Plot::bars_auto(
                &format!("{name}_{case}"),
                &format!("{}: {title}", bench.title),
                axis,
                bars,
            ));
        }
    }
    let num = |s: &str, suffix: &str| s.strip_suffix(suffix)?.parse::<f64>().ok();
    let fig5 = series(recs, "fig5-rtt-", "completed", |s| num(s, "us"));
    if !fig5.is_empty() {
        v.push(Plot::lines(
            &format!("{name}_fig5"),
            "Figure 5: calls completed in the period",
            "device round trip (us)",
            "calls completed",
            fig5,
            false,
            false,
        ));
    }
    let calls = |s: &str| s.parse::<f64>().ok();
    for (metric, stem, title, axis, log) in [
        (
            "self_continuations",
            "fig10_self_continuations",
            "Figures 9-10: self-continuations",
            "self-continuations",
            false,
        ),
        (
            "total",
            "fig11_total",
            "Figures 7, 11: total time",
            "total (us)",
            false,
        ),
    ] {
        let s = series(recs, "fig7-calls-", metric, calls);
        if !s.is_empty() {
            v.push(Plot::lines(
                &format!("{name}_{stem}"),
                title,
                "concurrent calls",
                axis,
                s,
                false,
                log,
            ));
        }
    }
    // Completed against offered, both in events/s.
    let mut ll: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in recs
        .iter()
        .filter(|r| r.metric == "completed" && r.case.starts_with("livelock-x"))
    {
        let Some(offered) = find(recs, &r.case, &r.impl_, "offered") else {
            continue;
        };
        match ll.iter_mut().find(|s| s.0 == r.impl_) {
            Some(s) => s.1.push((offered, r.value)),
            None => ll.push((r.impl_.clone(), vec![(offered, r.value)])),
        }
    }
    if !ll.is_empty() {
        v.push(Plot::lines(
            &format!("{name}_livelock"),
            "Figure 6: useful work against offered load",
            "offered (events/s)",
            "completed (events/s)",
            ll,
            false,
            false,
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(case: &str, imp: &str, metric: &str, v: f64) -> Record {
        BENCH.record(case, imp, metric, v, "x")
    }

    #[test]
    fn targets_judge_the_figures() {
        let mut recs = vec![
            r("local_fire", "flow", "median", 40.0),
            r("cross_core", "flow-signal", "median", 200.0),
            r("ratio", "cross flow-signal/core-spawn", "median", 2.0),
        ];
        for (c, t, sc) in [(5, 100.0, 0.0), (80, 1000.0, 0.0)] {
            recs.push(r(&format!("fig7-calls-{c}"), "queue", "total", t));
            recs.push(r(&format!("fig7-calls-{c}"), "queue", "self_continuations", sc));
        }
        recs.push(r("fig7-calls-5", "self-continuation", "self_continuations", 0.0));
        recs.push(r("fig7-calls-80", "self-continuation", "self_continuations", 900.0));
        let s = BENCH.summary(&recs);
        assert!(
            s.contains("local firing (create, signal, fire), flow: 40.00 ns (target <= 50) pass"),
            "{s}"
        );
        assert!(s.contains("cross-core signal / Core::spawn: 2.00x (target <= 1.5) FAIL"), "{s}");
        assert!(s.contains("queue: total(80) / total(5): 10.00x (target <= 24) pass"), "{s}");
        assert!(s.contains("queue: self-continuations at 80 calls: 0.00 count (target <= 80) pass"), "{s}");
        assert!(s.contains("sc(80) / max(sc(5), 1): 900.00x (target >= 16) pass"), "{s}");
        // Parts that did not run have no targets.
        assert!(!s.contains("livelock") && !s.contains("graph"), "{s}");
    }

    #[test]
    fn parts_and_names() {
        assert!(parse_parts("fire, graph").is_ok());
        assert!(parse_parts("fig6").is_err());
        assert_eq!(x_name(0.25), "livelock-x0.25");
        assert_eq!(x_name(4.0), "livelock-x4");
        let recs = vec![
            r("fig5-rtt-0us", "devices1-cores1", "completed", 10.0),
            r("fig5-rtt-2us", "devices1-cores1", "completed", 20.0),
        ];
        let s = series(&recs, "fig5-rtt-", "completed", |s| s.strip_suffix("us")?.parse().ok());
        assert_eq!(s, vec![("devices1-cores1".to_string(), vec![(0.0, 10.0), (2.0, 20.0)])]);
    }

    #[test]
    fn a_failed_run_is_an_error_not_a_hang() {
        let slow = bounded("slow", Duration::from_millis(10), || {
            std::thread::sleep(Duration::from_millis(200));
            Ok(())
        });
        assert!(slow.unwrap_err().contains("not done within"));
        let boom = bounded::<()>("boom", Duration::from_secs(5), || panic!("boom"));
        assert!(boom.unwrap_err().contains("panicked"));
    }
}
