//! `manycore bench kv`: a sharded key-value store. One `HashMap<u64, u64>`
//! per core, held as a `Remote` on that core; 100,000 mixed gets and puts
//! (keys uniform over the key space, each key on shard `hash(key) % cores`)
//! issued by four kinds of client, on runtimes of 2, 4 and 16 cores under
//! each idle policy, side by side with one map shared by as many std threads
//! behind a `Mutex`, an `RwLock`, and in a `DashMap`. Plus the `cores-1024`
//! group: the build time and resident memory of a 1024-core runtime.
//!
//! Records (bench `kv`; `N` is a core count of `--cores`, `T` a thread count):
//!
//! | case | impl | metric | unit | meaning |
//! |---|---|---|---|---|
//! | `outside-sync/Nc`, `core-blocking/Nc`, `core-async/Nc`, `pipelined/Nc`, `pipelined-batch/Nc` | `manycore-poll`, `manycore-sleep`, `manycore-hybrid` | `median` | ns | time of one client's operation: total time / operations per client, median over repetitions |
//! | the same | the same | `throughput` | Mops/s | operations of all clients per second, median over repetitions |
//! | `peers/Tt` | `std-mutex`, `std-rwlock`, `dashmap` | `median`, `throughput` | ns, Mops/s | the same two, T std threads on one shared map |
//! | any of the above | any | `failed` | | the row stalled beyond `--secs` (1) or went wrong (2: an error, wrong results); it has no figures |
//! | `cores-1024/available`, `cores-1024/estimate` | `manycore-sleep` | `memory` | MiB | MemAvailable at the start; the estimated memory of the group's runtime after its calls (linear in the cores) |
//! | `cores-1024/before` | `manycore-sleep` | `memory` | MiB | VmRSS before building |
//! | `cores-1024/build`, `/calls`, `/shutdown` | `manycore-sleep` | `time`, `memory` | ms, MiB | how long the phase took; VmRSS after it |
//! | `cores-1024/build` | `manycore-sleep` | `skipped` | MiB | the memory the guard asked for and did not find |
//! | `cores-1024/PHASE` | `manycore-sleep` | `failed`, `errno` | | the phase stalled (1) or failed (2); the OS error of a failed build |
//!
//! Clients: `outside-sync` is `--clients` outside threads (default 2: the
//! row's own thread and one more) each calling `invoke(..).wait()`;
//! `core-blocking` is one closure per core doing `invoke(..).wait()` in a
//! loop; `core-async` one `spawn_async` task per core doing
//! `invoke(..).await`; `pipelined` one outside thread keeping `--window`
//! invocations in flight; `pipelined-batch` one outside thread sending each
//! shard's operations `--batch` to an invocation, `--window` invocations in
//! flight. Peers run with T = each core count (and
//! `--clients`) threads.

mod big;
mod clients;
mod peers;
mod workload;

#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::bench::{find, ratio, Bench, Cmp, Opt, Options, Target};
use crate::measure::cpu_count;
use crate::plot::Plot;
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::median;

use clients::{Client, Idle, Params};
use peers::Peer;
use workload::{Spec, Watch, Workload};

/// `manycore bench kv`.
pub const BENCH: Bench = Bench {
    name: "kv",
    about: "sharded key-value store: clients on and off cores vs locks",
    title: "kv: a sharded key-value store on cores, against shared maps",
    method: METHOD,
    secs: 30.0,
    // The default report runs the mid size (10,000 operations, no
    // cores-1024): the full size takes about 10 min.
    report_secs: [2.0, 6.0, 30.0],
    repeats: true,
    options: OPTIONS,
    expected_secs,
    run,
    targets,
    notes,
    plots,
    ..Bench::DEFAULT
};

const METHOD: &str = "\
A sharded map: shard i, a HashMap<u64, u64>, lives on core i as a Remote;
every key 0..--keys is in it from the start (value = key). --ops operations
(default 100,000; 1,000 with --quick), gets and puts in the --mix (default
80/20), keys uniform, go each to shard hash(key) % cores as one
`Remote::invoke`. Each key belongs to one client, which runs its operations
in their global order, so every run must end with the contents and results
of a sequential run: each repetition checks that (a mismatch fails the row).
Clients: outside-sync (--clients outside threads, default 2, each
`invoke(..).wait()`), core-blocking (a closure per core, `invoke(..).wait()`
in a loop), core-async (a `spawn_async` task per core, `.await`), pipelined
(one outside thread, --window invocations in flight, default 64),
pipelined-batch (one outside thread; each shard's operations gather into
batches of --batch, default 256, each batch one invocation that applies them
in order, --window batches in flight). Runtimes
of --cores cores (default 2, 4, 16; 2, 4 with --quick; more cores than CPUs
is a user shape) under each idle policy; poll only where cores <= CPUs (the
runtime refuses it otherwise). Peers: one map shared by T std threads (T =
each core count, and --clients), behind std's Mutex, RwLock (gets under the
read lock) and in a DashMap; the same operations, split the same way.

Each repetition builds a fresh runtime (or map), times the operations from
the first sent to the last result in, then reads the contents back. Figures:
median over --reps repetitions of the time of one client's operation (total
time / operations per client, ns) and of the throughput (all operations /
total time, Mops/s). Every row runs once per repetition, the rows in an
order rotated by 1/reps of the list each repetition. --secs bounds one
repetition of one row: past it the row is reported as failed and not run
again (its clients are told to stop; one that does not within 1 s is left
behind). cores-1024 (not in --quick unless --only names it): cores(1024)
with Sleep, VmRSS (/proc/self/status) before, after the build, after one
call from core 0 to every other core and back, and after shutdown; it runs
only if MemAvailable holds 1.25 x the estimated memory of that runtime
(linear in the cores) + 512 MiB.";

const OPTIONS: &[Opt] = &[
    Opt {
        flag: "--ops",
        value: Some("N"),
        help: "operations per row and repetition\n[default: 100000; 10000 with --secs under 30, as in\nthe report; 1000 with --quick]",
        parse: |v| count(v, 1, 100_000_000),
    },
    Opt {
        flag: "--mix",
        value: Some("G/P"),
        help: "percentages of gets and puts [default: 80/20]",
        parse: parse_mix,
    },
    Opt {
        flag: "--keys",
        value: Some("N"),
        help: "key space: keys are uniform over 0..N [default: 65536]",
        parse: |v| count(v, 1, 1 << 32),
    },
    Opt {
        flag: "--window",
        value: Some("W"),
        help: "invocations in flight of the pipelined clients [default: 64]",
        parse: |v| count(v, 1, 1 << 20),
    },
    Opt {
        flag: "--batch",
        value: Some("B"),
        help: "operations per invocation of pipelined-batch [default: 256]",
        parse: |v| count(v, 1, 1 << 20),
    },
    Opt {
        flag: "--clients",
        value: Some("N"),
        help: "outside threads of outside-sync [default: 2]",
        parse: |v| count(v, 1, 1024),
    },
    Opt {
        flag: "--cores",
        value: Some("LIST"),
        help: "core counts of the runtimes (comma-separated)\n[default: 2,4,16; 2,4 with --quick]",
        parse: parse_cores,
    },
    Opt {
        flag: "--idle",
        value: Some("LIST"),
        help: "idle policies: poll, sleep, hybrid or all (comma-separated)\n[default: all]",
        parse: crate::idle::parse_list,
    },
    Opt {
        flag: "--only",
        value: Some("GROUPS"),
        help: "run only these groups (comma-separated): outside-sync,\ncore-blocking, core-async, pipelined, pipelined-batch,\npeers, cores-1024\n[default: all; cores-1024 only with --secs 30 or more]",
        parse: parse_groups,
    },
];

/// The groups `--only` chooses from.
const GROUPS: [&str; 7] = [
    "outside-sync",
    "core-blocking",
    "core-async",
    "pipelined",
    "pipelined-batch",
    "peers",
    "cores-1024",
];

fn count(v: &str, min: u64, max: u64) -> Result<Vec<String>, String> {
    match v.trim().replace('_', "").parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(vec![n.to_string()]),
        _ => Err(format!("expected a whole number from {min} to {max}")),
    }
}

/// `G/P`: two whole percentages that add up to 100.
fn parse_mix(v: &str) -> Result<Vec<String>, String> {
    let bad = || "expected gets/puts in percent, adding up to 100 (e.g. 90/10)".to_string();
    let (g, p) = v.split_once('/').ok_or_else(bad)?;
    let (g, p): (u32, u32) = (
        g.trim().parse().map_err(|_| bad())?,
        p.trim().parse().map_err(|_| bad())?,
    );
    if g + p != 100 {
        return Err(bad());
    }
    Ok(vec![g.to_string(), p.to_string()])
}

fn parse_cores(v: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for part in v.split(',') {
        let n = count(part, 1, 4096).map_err(|_| "expected core counts from 1 to 4096".to_string())?;
        if !out.contains(&n[0]) {
            out.extend(n);
        }
    }
    Ok(out)
}


fn parse_groups(v: &str) -> Result<Vec<String>, String> {
    v.split(',')
        .map(str::trim)
        .map(|g| match GROUPS.contains(&g) {
            true => Ok(g.to_string()),
            false => Err(format!("expected some of {}", GROUPS.join(", "))),
        })
        .collect()
}

/// Everything a run is told, resolved against the defaults.
#[derive(Debug, Clone, PartialEq)]
struct Config {
    spec: Spec,
    params: Params,
    cores: Vec<usize>,
    idle: Vec<Idle>,
    groups: Vec<&'static str>,
    reps: usize,
    bound: Duration,
}

impl Config {
    fn new(o: &Options) -> Self {
        let num = |flag: &str, default: u64| -> u64 {
            o.get(flag)
                .and_then(|v| v.first()?.parse().ok())
                .unwrap_or(default)
        };
        let size = Size::of(o);
        let get_pct = o
            .get("--mix")
            .and_then(|v| v.first()?.parse().ok())
            .unwrap_or(80);
        let cores = o.get("--cores").map_or_else(
            || if o.quick { vec![2, 4] } else { vec![2, 4, 16] },
            |v| v.iter().filter_map(|c| c.parse().ok()).collect(),
        );
        let idle = crate::idle::chosen(o);
        let groups = match o.get("--only") {
            Some(v) => GROUPS
                .into_iter()
                .filter(|g| v.iter().any(|n| n == g))
                .collect(),
            None => GROUPS
                .into_iter()
                .filter(|g| !(size != Size::Full && *g == "cores-1024"))
                .collect(),
        };
        Self {
            spec: Spec {
                ops: num("--ops", size.ops()) as usize,
                keys: num("--keys", 65_536),
                get_pct,
                seed: workload::SEED,
            },
            params: Params {
                clients: num("--clients", 2) as usize,
                window: num("--window", 64) as usize,
                batch: num("--batch", 256) as usize,
            },
            cores,
            idle,
            groups,
            reps: o.reps.max(1),
            bound: Duration::from_secs_f64(o.secs.max(0.01)),
        }
    }

    fn wants(&self, group: &str) -> bool {
        self.groups.contains(&group)
    }

    /// The policies measured with `n` cores: poll needs a CPU per core.
    fn policies(&self, n: usize) -> Vec<Idle> {
        let cpus = cpu_count();
        self.idle
            .iter()
            .copied()
            .filter(|&i| i != Idle::Poll || n <= cpus)
            .collect()
    }

    /// The thread counts of the peers: each core count, and `--clients`.
    fn peer_threads(&self) -> Vec<usize> {
        let mut t = self.cores.clone();
        t.push(self.params.clients);
        t.sort_unstable();
        t.dedup();
        t
    }
}

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Manycore(Client, usize, Idle),
    Peer(Peer, usize),
}

/// One row: its names, and its figures so far.
#[derive(Debug)]
struct Row {
    case: String,
    imp: &'static str,
    kind: Kind,
    /// (ns per operation of one client, Mops/s), one pair per repetition.
    reps: Vec<(f64, f64)>,
    /// Set once the row failed: 1 stalled, 2 an error.
    failed: Option<u8>,
}

fn rows(c: &Config) -> Vec<Row> {
    let mut v = Vec::new();
    for &n in &c.cores {
        for idle in c.policies(n) {
            for client in Client::ALL.into_iter().filter(|k| c.wants(k.name())) {
                v.push(Row {
                    case: format!("{}/{n}c", client.name()),
                    imp: idle.impl_name(),
                    kind: Kind::Manycore(client, n, idle),
                    reps: Vec::new(),
                    failed: None,
                });
            }
        }
    }
    if c.wants("peers") {
        for t in c.peer_threads() {
            for p in Peer::ALL {
                v.push(Row {
                    case: format!("peers/{t}t"),
                    imp: p.name(),
                    kind: Kind::Peer(p, t),
                    reps: Vec::new(),
                    failed: None,
                });
            }
        }
    }
    v
}

/// Why a bounded run did not give a result.
#[derive(Debug, Clone, PartialEq)]
enum Fail {
    /// Not done within the bound: how many operations its clients had
    /// started by then (to within 64 each), and whether it then wound down
    /// within [`GRACE`] (if not, it is still running, and may disturb the
    /// rows after it).
    Stalled(usize, bool),
    /// It returned an error, or panicked.
    Error(String),
}

/// How long a stopped row gets to wind down before the run goes on without it.
const GRACE: Duration = Duration::from_secs(1);

/// Runs `f` on a thread of its own and waits at most `limit` for it; past
/// that, it stops `watch`, waits up to [`GRACE`] for `f` to wind down (or
/// leaves it behind, with whatever it holds), and the result is
/// [`Fail::Stalled`]: a stalled row never hangs the CLI.
fn bounded<T: Send + 'static>(
    limit: Duration,
    watch: Arc<Watch>,
    f: impl FnOnce(&Arc<Watch>) -> Result<T, String> + Send + 'static,
) -> Result<T, Fail> {
    let (tx, rx) = mpsc::channel();
    let w = watch.clone();
    std::thread::Builder::new()
        .name("kv-row".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| f(&w)))
                .unwrap_or_else(|_| Err("the row panicked".to_string()));
            let _ = tx.send(r);
        })
        .map_err(|e| Fail::Error(format!("cannot start the row's thread: {e}")))?;
    match rx.recv_timeout(limit) {
        Ok(r) => r.map_err(Fail::Error),
        Err(_) => {
            let done = watch.done();
            watch.stop();
            let ended = rx.recv_timeout(GRACE).is_ok();
            Err(Fail::Stalled(done, ended))
        }
    }
}

/// One repetition of a row, checked against the reference.
fn measure(kind: Kind, w: &Arc<Workload>, p: Params, bound: Duration) -> Result<(f64, f64), Fail> {
    let w = w.clone();
    let watch = Arc::new(Watch::new(clients_of(kind, p)));
    bounded(bound, watch, move |watch| {
        let m = match kind {
            Kind::Manycore(client, n, idle) => clients::run(client, n, idle, &w, p, watch)?,
            Kind::Peer(peer, t) => peers::run(peer, t, &w, watch)?,
        };
        w.check(&m)?;
        Ok((m.ns_per_op(w.spec.ops), m.mops(w.spec.ops)))
    })
}

/// A rough time per operation of one client, in seconds, for the progress
/// bar: from a run on 2 shared vCPUs before any idle-policy work (rows that
/// take longer than the bound are cut at the bound).
fn guess_secs_per_op(kind: Kind) -> f64 {
    match kind {
        Kind::Manycore(Client::OutsideSync, _, Idle::Poll) => 1e-2,
        Kind::Manycore(Client::Pipelined, _, Idle::Poll) => 200e-6,
        Kind::Manycore(Client::Pipelined, n, _) => 3e-6 * n as f64,
        Kind::Manycore(Client::PipelinedBatch, _, Idle::Poll) => 1e-6,
        Kind::Manycore(Client::PipelinedBatch, ..) => 0.2e-6,
        Kind::Manycore(Client::CoreBlocking, _, Idle::Poll) => 3e-6,
        Kind::Manycore(_, _, Idle::Poll) => 50e-6,
        Kind::Manycore(_, n, Idle::Sleep) => 40e-6 * (n as f64 / 4.0).max(1.0),
        Kind::Manycore(Client::OutsideSync, ..) => 200e-6,
        Kind::Manycore(_, 2, _) => 2e-6,
        Kind::Manycore(_, n, _) => 50e-6 * n as f64,
        Kind::Peer(_, t) => 0.3e-6 * t as f64,
    }
}

fn clients_of(kind: Kind, p: Params) -> usize {
    match kind {
        Kind::Manycore(client, n, _) => clients::clients(client, n, p),
        Kind::Peer(_, t) => t,
    }
}

/// The rows' guessed times; a row guessed to take longer than the bound
/// fails once and is not run again.
fn expected_secs(o: &Options) -> f64 {
    let c = Config::new(o);
    let bound = c.bound.as_secs_f64();
    let rows: f64 = rows(&c)
        .iter()
        .map(|r| {
            let ops = c.spec.ops as f64 / clients_of(r.kind, c.params) as f64;
            let t = ops * guess_secs_per_op(r.kind) + 0.005;
            if t > bound {
                bound + GRACE.as_secs_f64()
            } else {
                t * c.reps as f64
            }
        })
        .sum();
    // Building, calling and shutting down 1024 cores took about 23 s.
    let big = if c.wants("cores-1024") { 25.0 } else { 0.0 };
    rows + 0.05 + big
}

fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    let c = Config::new(o);
    let mut out = Vec::new();
    let mut rows = rows(&c);
    if !rows.is_empty() {
        progress.set_message("kv: generating the workload");
        let w = Arc::new(Workload::new(c.spec));
        let len = rows.len();
        for rep in 0..c.reps {
            let offset = rep * len / c.reps;
            for k in 0..len {
                let row = &mut rows[(k + offset) % len];
                if row.failed.is_some() {
                    continue;
                }
                progress.set_message(&format!(
                    "kv {} {} ({}/{})",
                    row.case,
                    row.imp,
                    rep + 1,
                    c.reps
                ));
                match measure(row.kind, &w, c.params, c.bound) {
                    Ok(fig) => row.reps.push(fig),
                    Err(f) => {
                        let (code, why) = match f {
                            Fail::Stalled(done, ended) => (
                                1,
                                format!(
                                    "not done after {:?}: about {done} of {} operations started; {}",
                                    c.bound,
                                    c.spec.ops,
                                    if ended {
                                        "stopped"
                                    } else {
                                        "still running (later rows may be disturbed)"
                                    }
                                ),
                            ),
                            Fail::Error(e) => (2, e),
                        };
                        progress.println(&format!("kv: {} {}: failed: {why}", row.case, row.imp));
                        row.failed = Some(code);
                    }
                }
            }
        }
        for r in &rows {
            if let Some(code) = r.failed {
                out.push(BENCH.record(&r.case, r.imp, "failed", f64::from(code), ""));
                continue;
            }
            let ns: Vec<f64> = r.reps.iter().map(|x| x.0).collect();
            let mops: Vec<f64> = r.reps.iter().map(|x| x.1).collect();
            out.extend(median(&ns).map(|v| BENCH.record(&r.case, r.imp, "median", v, "ns")));
            out.extend(median(&mops).map(|v| BENCH.record(&r.case, r.imp, "throughput", v, "Mops/s")));
        }
    }
    if c.wants("cores-1024") {
        progress.set_message("kv cores-1024");
        out.extend(cores_1024(c.bound.max(Duration::from_secs(60)), progress));
    }
    out
}

/// The cores-1024 group as records: the guard, then each phase.
fn cores_1024(bound: Duration, progress: &Progress) -> Vec<Record> {
    let imp = Idle::Sleep.impl_name();
    let rec = |phase: &str, metric: &str, v: f64, unit: &str| {
        BENCH.record(&format!("cores-1024/{phase}"), imp, metric, v, unit)
    };
    let estimate = big::estimate_mib(big::CORES);
    let available = big::mem_available_mib();
    let mut out = vec![rec("estimate", "memory", estimate, "MiB")];
    out.extend(available.map(|a| rec("available", "memory", a, "MiB")));
    let need = big::guard_mib(estimate);
    if available.is_none_or(|a| a < need) {
        progress.println(&format!(
            "kv: cores-1024: skipped: MemAvailable {} MiB, the guard asks for {need:.0} MiB",
            available.map_or("unknown".into(), |a| format!("{a:.0}"))
        ));
        out.push(rec("build", "skipped", need, "MiB"));
        return out;
    }
    let (phases, stalled) = big::run(bound);
    let mut next = "build";
    for p in &phases {
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        match p {
            big::Phase::Before(rss) => out.push(rec("before", "memory", *rss, "MiB")),
            big::Phase::Built(d, rss) => {
                out.push(rec("build", "time", ms(d), "ms"));
                out.push(rec("build", "memory", *rss, "MiB"));
                next = "calls";
            }
            big::Phase::Called(d, rss) => {
                out.push(rec("calls", "time", ms(d), "ms"));
                out.push(rec("calls", "memory", *rss, "MiB"));
                next = "shutdown";
            }
            big::Phase::ShutDown(d, rss) => {
                out.push(rec("shutdown", "time", ms(d), "ms"));
                out.push(rec("shutdown", "memory", *rss, "MiB"));
            }
            big::Phase::BuildFailed(code, e) => {
                progress.println(&format!("kv: cores-1024: build failed: {e}"));
                out.push(rec("build", "failed", 2.0, ""));
                out.extend(code.map(|c| rec("build", "errno", f64::from(c), "")));
            }
            big::Phase::CallsFailed(e) => {
                progress.println(&format!("kv: cores-1024: calls failed: {e}"));
                out.push(rec("calls", "failed", 2.0, ""));
            }
        }
    }
    if stalled {
        progress.println(&format!("kv: cores-1024: {next} stalled beyond {bound:?}"));
        out.push(rec(next, "failed", 1.0, ""));
    }
    out
}

/// The core counts of the manycore cases in `recs`, ascending.
fn shapes(recs: &[Record]) -> Vec<usize> {
    let mut v: Vec<usize> = recs
        .iter()
        .filter(|r| r.impl_.starts_with("manycore-") && !r.case.starts_with("cores-1024"))
        .filter_map(|r| r.case.split_once('/')?.1.strip_suffix('c')?.parse().ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn targets(recs: &[Record]) -> Vec<Target> {
    let mut v = Vec::new();
    let shapes = shapes(recs);
    for &n in &shapes {
        for client in Client::ALL {
            let case = format!("{}/{n}c", client.name());
            let hybrid = find(recs, &case, Idle::Hybrid.impl_name(), "median");
            let best = [Idle::Poll, Idle::Sleep]
                .into_iter()
                .filter_map(|i| Some((find(recs, &case, i.impl_name(), "median")?, i)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if hybrid.is_none() && best.is_none() {
                continue;
            }
            let mut t = Target::new(
                format!("{case}: hybrid / best fixed policy, ns per op"),
                ratio(hybrid, best.map(|b| b.0)),
                "x",
                Cmp::AtMost,
                1.5,
            );
            if let Some((_, i)) = best {
                t.note = format!(" [best fixed: {}]", i.name());
            }
            v.push(t);
        }
    }
    if shapes.is_empty() {
        return v;
    }
    v.push(Target::new(
        "outside-sync/4c, hybrid: ns per op",
        find(recs, "outside-sync/4c", Idle::Hybrid.impl_name(), "median"),
        "ns",
        Cmp::AtMost,
        3000.0,
    ));
    for &n in &shapes {
        let batch = find(recs, &format!("pipelined-batch/{n}c"), Idle::Hybrid.impl_name(), "throughput");
        let dash = find(recs, &format!("peers/{n}t"), Peer::DashMap.name(), "throughput");
        if batch.is_none() && dash.is_none() {
            continue;
        }
        v.push(Target::new(
            format!("pipelined-batch/{n}c hybrid / dashmap with {n} threads, throughput"),
            ratio(batch, dash),
            "x",
            Cmp::AtLeast,
            1.0,
        ));
    }
    v
}

fn notes(recs: &[Record]) -> String {
    let mut s = String::new();
    let cpus = cpu_count();
    for n in shapes(recs) {
        let one = find(recs, &format!("pipelined/{n}c"), Idle::Hybrid.impl_name(), "throughput");
        let dash = find(recs, &format!("peers/{n}t"), Peer::DashMap.name(), "throughput");
        if let (Some(one), Some(dash)) = (one, dash) {
            let _ = writeln!(
                s,
                "- pipelined/{n}c (one invocation per operation), hybrid: {:.2}x dashmap's throughput \
                 with {n} threads; a message per operation costs more than an uncontended lock, \
                 so the target is judged on pipelined-batch.",
                one / dash
            );
        }
    }
    let over: Vec<String> = shapes(recs)
        .into_iter()
        .filter(|&n| n > cpus)
        .map(|n| format!("{n}c"))
        .collect();
    if !over.is_empty() {
        let _ = writeln!(
            s,
            "- manycore-poll is not measured on {}: more cores than the {cpus} CPUs here, \
             and the runtime refuses Poll then (skipped, not failed).",
            over.join(", ")
        );
    }
    for r in recs.iter().filter(|r| r.metric == "failed") {
        let why = if r.value == 1.0 {
            "stalled beyond the bound (--secs) and was stopped"
        } else {
            "failed with an error (message on stderr)"
        };
        let _ = writeln!(s, "- **{} {} {why}**; it has no figures.", r.case, r.impl_);
    }
    let get = |phase: &str, metric: &str| {
        find(recs, &format!("cores-1024/{phase}"), Idle::Sleep.impl_name(), metric)
    };
    if let Some(need) = get("build", "skipped") {
        let avail = get("available", "memory").map_or("unknown".into(), |a| format!("{a:.0} MiB"));
        let _ = writeln!(
            s,
            "- cores-1024 skipped: MemAvailable {avail}, below the {need:.0} MiB the guard asks for \
             (1.25 x the estimated memory of the runtime + 512 MiB)."
        );
    } else if let Some(code) = get("build", "errno") {
        let e = std::io::Error::from_raw_os_error(code as i32);
        let _ = writeln!(s, "- cores-1024: building 1024 cores failed: {e}.");
    } else if get("build", "failed").is_some() {
        let _ = writeln!(s, "- cores-1024: building 1024 cores failed (message on stderr).");
    } else if let (Some(t), Some(rss)) = (get("build", "time"), get("build", "memory")) {
        let before = get("before", "memory").unwrap_or(f64::NAN);
        let est = get("estimate", "memory").unwrap_or(f64::NAN);
        let _ = write!(
            s,
            "- cores-1024 (sleep): built in {t:.0} ms; VmRSS {before:.0} -> {rss:.0} MiB \
             (+{:.0} MiB; rings are bound when a pair first talks; estimated {est:.0} MiB after the calls)",
            rss - before
        );
        match (get("calls", "time"), get("calls", "memory")) {
            (Some(ct), Some(crss)) => {
                let _ = write!(
                    s,
                    "; a call from core 0 to each other core and back, one after another: \
                     {ct:.0} ms in all, VmRSS {crss:.0} MiB after"
                );
            }
            _ => s.push_str("; the calls did not complete"),
        }
        if let Some(st) = get("shutdown", "time") {
            let _ = write!(s, "; shut down in {st:.0} ms");
        }
        s.push_str(".\n");
    }
    s
}

/// One bar chart of throughput per core count: every client and policy on
/// that many cores, and the peers with as many threads.
fn plots(bench: &Bench, recs: &[Record]) -> Vec<Plot> {
    shapes(recs)
        .into_iter()
        .map(|n| {
            let (cs, ts) = (format!("/{n}c"), format!("peers/{n}t"));
            let bars: Vec<(String, f64)> = recs
                .iter()
                .filter(|r| r.metric == "throughput" && (r.case.ends_with(&cs) || r.case == ts))
                .map(|r| {
                    let who = r.case.split('/').next().unwrap_or("");
                    let imp = r.impl_.trim_start_matches("manycore-");
                    (format!("{who} {imp}"), r.value)
                })
                .collect();
            Plot::bars_auto(
                &format!("{}_throughput_{n}c", bench.name),
                &format!("kv throughput, {n} cores (peers: {n} threads)"),
                "throughput (Mops/s)",
                bars,
            )
        })
        .collect()
}

/// The size a run's options ask for: `--quick`, the default report's
/// (a budget under the bench's own), or the bench's own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Size {
    Quick,
    Report,
    Full,
}

impl Size {
    fn of(o: &Options) -> Self {
        if o.quick {
            Size::Quick
        } else if o.secs < BENCH.secs {
            Size::Report
        } else {
            Size::Full
        }
    }

    /// Operations per row and repetition.
    fn ops(self) -> u64 {
        match self {
            Size::Quick => 1_000,
            Size::Report => 10_000,
            Size::Full => 100_000,
        }
    }
}
