//! `manycore bench mpi`: manycore across the ranks of an MPI job
//! (`crates/manycore-mpi`) against raw MPI in the same job: a call's round
//! trip against a ping-pong of the same bytes, the message rate of one-sided
//! spawns against a stream of `MPI_Isend`s, reduce, all-reduce and broadcast
//! over 4 ranks x 2 cores against `MPI_Reduce`, `MPI_Allreduce` and
//! `MPI_Bcast`, and the MuSE paper's knary experiments (Figure 4 on 1, 2 and
//! 4 ranks, Table 2 with a busy process beside one rank), after "The MuSE
//! System: A Flexible Combination of On-Stack Execution and Work-Stealing".
//!
//! This command never links MPI (the workspace builds where no MPI library
//! is installed). The measurements live in an MPI program,
//! `crates/manycore-mpi/examples/bench.rs`, which this bench builds with
//! `cargo build --release -p manycore-mpi --features mpi --example bench`
//! (or takes from `--program`), launches under `mpirun
//! --allow-run-as-root --oversubscribe --bind-to none -n N` once per part,
//! each run bounded in time, and whose JSON records (the same shape as
//! ours) it parses and emits. Without `mpirun` (on `PATH`, or `--mpirun`)
//! it measures nothing and says "skipped: mpirun not found" in its section;
//! `manycore bench mpi` then exits with status 1 (nothing measured), and a
//! report goes on with the other sections.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::bench::{find, ratio, Bench, Cmp, Opt, Options, Target};
use crate::plot::Plot;
use crate::progress::Progress;
use crate::record::Record;

/// `manycore bench mpi`.
pub const BENCH: Bench = Bench {
    name: "mpi",
    about: "across MPI ranks: round trip, spawn rate, collectives, knary",
    title: "Across MPI ranks: active messages, collectives, MuSE's knary",
    method: "An MPI program (crates/manycore-mpi/examples/bench.rs, built with `cargo build \
             --release -p manycore-mpi --features mpi --example bench` unless --program names \
             it) runs under `mpirun --oversubscribe --bind-to none`, once per part, and prints \
             the records; within a job the rows are interleaved in every repetition and each \
             figure is the median over --reps repetitions. p2p (2 ranks): round trip of \
             place.call of a u64 against a raw MPI_Send/MPI_Recv ping-pong of the same bytes on \
             the engine threads, to the engine place and to a core, with waiting threads \
             progressing MPI themselves or the engine alone; rate of one-sided spawns until a \
             call behind them returns, against raw MPI_Isends received one by one. coll (4 \
             ranks x 2 cores): reduce, allreduce, broadcast and the hierarchical \
             all_reduce_cores of one u64, against MPI_Reduce, MPI_Allreduce and MPI_Bcast \
             (slowest rank's time per operation, closed by an all-reduce). knary (1, 2, 4 ranks): \
             knary(4,10,i) for i = 0, 100, 1000, 5000 (m = 8 with --quick) as a distributed \
             join, against the sequential tree on rank 0 in the same job (Figure 4 of \"The \
             MuSE System\"); efficiency = speedup / S_cap, S_cap the speedup two busy threads \
             get over one on this machine (as `bench steal` measures it), in the same job; on 2 \
             ranks also the speedup by how many joins a worker runs between polls of MPI \
             (Figure 5, MAX_SEQUENTIAL). table2 (2 ranks): knary(4,10,1000) \
             with a busy process pinned beside rank 1 (Table 2), against the ideal S_max, the \
             sum of both ranks' throughputs under that load over one unloaded rank's. --secs is \
             not used: sizes are fixed.",
    secs: 1.0,
    report_secs: [1.0, 1.0, 1.0],
    repeats: true,
    options: &[
        Opt {
            flag: "--mpirun",
            value: Some("PATH"),
            help: "the mpirun to launch with [default: mpirun on PATH]",
            parse: |v| Ok(vec![v.to_string()]),
        },
        Opt {
            flag: "--program",
            value: Some("PATH"),
            help: "the MPI program, already built [default: build\ncrates/manycore-mpi's example `bench` with cargo]",
            parse: |v| Ok(vec![v.to_string()]),
        },
        Opt {
            flag: "--only",
            value: Some("PARTS"),
            help: "run only these parts: p2p, coll, knary, table2\n(comma-separated)",
            parse: parse_parts,
        },
    ],
    expected_secs,
    run,
    targets,
    notes,
    plots,
    ..Bench::DEFAULT
};

/// The parts `--only` chooses from.
const PARTS: [&str; 4] = ["p2p", "coll", "knary", "table2"];

fn parse_parts(v: &str) -> Result<Vec<String>, String> {
    v.split(',')
        .map(str::trim)
        .map(|p| match PARTS.contains(&p) {
            true => Ok(p.to_string()),
            false => Err("expected p2p, coll, knary or table2".to_string()),
        })
        .collect()
}

/// Whether `--only` (or its absence) selects `part`.
fn wanted(o: &Options, part: &str) -> bool {
    o.get("--only").is_none_or(|v| v.iter().any(|p| p == part))
}

/// The jobs of a run: (part, ranks), in order.
fn jobs(o: &Options) -> Vec<(&'static str, usize)> {
    [
        ("p2p", 2),
        ("coll", 4),
        ("knary", 1),
        ("knary", 2),
        ("knary", 4),
        ("table2", 2),
    ]
    .into_iter()
    .filter(|(p, _)| wanted(o, p))
    .collect()
}

/// Seconds a job takes on the 2-vCPU VM, as (start, per repetition with
/// the warm-up counted as one): mpirun's start and the fixed parts, then
/// each repetition of its rows.
fn job_secs(part: &str, ranks: usize, quick: bool) -> (f64, f64) {
    match (part, ranks, quick) {
        ("p2p", _, true) => (1.0, 0.85),
        ("p2p", _, false) => (1.0, 2.2),
        // Four rounds of every row per repetition (a balanced order).
        ("coll", _, true) => (0.4, 0.4),
        ("coll", _, false) => (0.6, 1.8),
        ("knary", 1, true) => (0.6, 0.15),
        ("knary", 1, false) => (1.0, 2.9),
        ("knary", 2, true) => (0.6, 0.18),
        ("knary", 2, false) => (1.0, 5.0),
        ("knary", _, true) => (0.5, 0.15),
        ("knary", _, false) => (1.0, 2.8),
        (_, _, true) => (0.4, 0.1),
        (_, _, false) => (0.6, 0.7),
    }
}

/// The build check (cargo, when the program is built) and every job.
fn expected_secs(o: &Options) -> f64 {
    let build = if o.get("--program").is_some() { 0.0 } else { 2.0 };
    build
        + jobs(o)
            .iter()
            .map(|(p, n)| {
                let (start, per_rep) = job_secs(p, *n, o.quick);
                start + per_rep * (o.reps + 1) as f64
            })
            .sum::<f64>()
}

/// What the last run had to say beyond its records (skipped, failed
/// jobs), for [`notes`]: the framework hands `notes` the records only.
static RUN_NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note(progress: &Progress, line: String) {
    progress.println(&format!("mpi: {line}"));
    RUN_NOTES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(line);
}

/// The mpirun to use: `explicit` if it is a file, else the first
/// executable `mpirun` in the directories of `path`.
pub fn find_mpirun(explicit: Option<&str>, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        let p = PathBuf::from(p);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|d| d.join("mpirun"))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The workspace this binary was built from (where the MPI program's
/// sources are).
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child's output, or why there is none. The child is killed (TERM, then
/// KILL after 10 s) when `limit` passes.
pub(crate) struct Ran {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Ran {
    /// What went wrong with the run of `what` bounded by `limit`, as a note
    /// for the reader: stopped at the limit, or failed (with the last lines
    /// of its stderr); `None` if it ended well.
    pub(crate) fn problem(&self, what: &str, limit: Duration) -> Option<String> {
        if self.timed_out {
            Some(format!("{what}: stopped after {limit:?}"))
        } else if self.status != Some(0) {
            Some(format!(
                "{what}: failed (status {:?}):\n{}",
                self.status,
                tail(&self.stderr, 10)
            ))
        } else {
            None
        }
    }
}

pub(crate) fn run_bounded(cmd: &mut Command, limit: Duration) -> std::io::Result<Ran> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Drain both pipes on threads so that a chatty child never blocks.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let mut b = Vec::new();
                let _ = r.read_to_end(&mut b);
                s = String::from_utf8_lossy(&b).into_owned();
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let start = Instant::now();
    let mut timed_out = false;
    let mut termed: Option<Instant> = None;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > limit {
            timed_out = true;
            match termed {
                None => {
                    // mpirun forwards TERM to its ranks and cleans up.
                    let _ = Command::new("kill")
                        .args(["-TERM", &child.id().to_string()])
                        .stderr(Stdio::null())
                        .status();
                    termed = Some(Instant::now());
                }
                Some(t) if t.elapsed() > Duration::from_secs(10) => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Ran {
        status: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
    })
}

/// The last `n` lines of `s`, indented (for a message).
pub(crate) fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("    {l}\n"))
        .collect()
}

/// Builds the MPI program with cargo and returns its path.
fn build(progress: &Progress) -> Result<PathBuf, String> {
    progress.set_message("mpi: building the MPI program");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ws = workspace();
    if !ws.join("crates/manycore-mpi/examples/bench.rs").is_file() {
        return Err(format!(
            "the MPI program's sources are not at {} (pass --program)",
            ws.display()
        ));
    }
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&ws).args([
        "build",
        "--release",
        "-p",
        "manycore-mpi",
        "--features",
        "mpi",
        "--example",
        "bench",
        "--message-format=json-render-diagnostics",
    ]);
    let ran = run_bounded(&mut cmd, Duration::from_secs(1200))
        .map_err(|e| format!("cargo could not start: {e}"))?;
    if ran.status != Some(0) {
        return Err(format!(
            "the MPI program did not build (needs libopenmpi-dev and libclang-dev; \
             `bash crates/manycore-mpi/run-tests.sh` installs them){}:\n{}",
            if ran.timed_out { ", timed out" } else { "" },
            tail(&ran.stderr, 15)
        ));
    }
    ran.stdout
        .lines()
        .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("\"kind\":[\"example\"]"))
        .filter(|l| l.contains("\"name\":\"bench\""))
        .find_map(|l| json_string_field(l, "executable"))
        .map(PathBuf::from)
        .ok_or_else(|| "cargo built the MPI program but did not say where".to_string())
}

/// The string value of `"key":"..."` in one line of JSON (no escapes
/// inside but `\"` and `\\`).
pub(crate) fn json_string_field(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let start = line.find(&pat)? + pat.len();
    let mut p = Parser {
        s: line.as_bytes(),
        i: start - 1,
    };
    p.string()
}

/// Runs the parts under mpirun and collects their records.
fn run(o: &Options, progress: &Progress) -> Vec<Record> {
    RUN_NOTES.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let explicit = o.get("--mpirun").and_then(|v| v.first()).map(String::as_str);
    let Some(mpirun) = find_mpirun(explicit, std::env::var_os("PATH").as_deref()) else {
        let where_ = match explicit {
            Some(p) => format!(" (--mpirun {p}: not an executable file)"),
            None => " (not on PATH; install openmpi-bin, or pass --mpirun)".into(),
        };
        note(progress, format!("skipped: mpirun not found{where_}"));
        return Vec::new();
    };
    let program = match o.get("--program").and_then(|v| v.first()) {
        Some(p) => PathBuf::from(p),
        None => match build(progress) {
            Ok(p) => p,
            Err(e) => {
                note(progress, format!("skipped: {e}"));
                return Vec::new();
            }
        },
    };
    if !is_executable(&program) {
        note(
            progress,
            format!("skipped: the MPI program {} is not executable", program.display()),
        );
        return Vec::new();
    }
    let mut recs = Vec::new();
    for (part, ranks) in jobs(o) {
        progress.set_message(&format!("mpi: {part} on {ranks} ranks"));
        let (start, per_rep) = job_secs(part, ranks, o.quick);
        // Generous: a loaded machine runs several times slower.
        let limit = Duration::from_secs_f64(60.0 + 5.0 * (start + per_rep * (o.reps + 1) as f64));
        let mut cmd = Command::new(&mpirun);
        cmd.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-n",
            &ranks.to_string(),
        ])
        .arg(&program)
        .arg(part)
        .args(["--reps", &o.reps.to_string()]);
        if o.quick {
            cmd.arg("--quick");
        }
        let what = format!("{part} on {ranks} ranks");
        match run_bounded(&mut cmd, limit) {
            Err(e) => note(progress, format!("{what}: mpirun could not start: {e}")),
            Ok(ran) => {
                if let Some(problem) = ran.problem(&what, limit) {
                    note(progress, problem);
                }
                recs.extend(ran.stdout.lines().filter_map(parse_record));
            }
        }
    }
    recs.extend(derived(&recs));
    recs
}

/// Records computed from the parts' records: knary's efficiency against
/// the machine's capacity measured in the same job.
fn derived(recs: &[Record]) -> Vec<Record> {
    recs.iter()
        .filter(|r| r.case.starts_with("knary(") && r.metric == "speedup" && r.impl_ != "ranks-1")
        .filter_map(|r| {
            let s_cap = find(recs, "capacity", &r.impl_, "S_cap")?;
            Some(BENCH.record(&r.case, &r.impl_, "efficiency", r.value / s_cap, "ratio"))
        })
        .collect()
}

/// A record line of the MPI program, `None` for anything else.
pub fn parse_record(line: &str) -> Option<Record> {
    parse_any_record(line).filter(|r| r.bench == BENCH.name)
}

/// A record line of any bench (`{"bench":..,"case":..,"impl":..,"metric":..,
/// "value":..,"unit":..}`, as [`Record::to_json`] writes it), `None` for
/// anything else.
pub fn parse_any_record(line: &str) -> Option<Record> {
    let mut p = Parser {
        s: line.trim().as_bytes(),
        i: 0,
    };
    p.expect(b'{')?;
    let mut f: [Option<String>; 5] = Default::default();
    let mut value = None;
    loop {
        let key = p.string()?;
        p.expect(b':')?;
        if key == "value" {
            value = Some(p.number_or_null()?);
        } else {
            let i = ["bench", "case", "impl", "metric", "unit"]
                .iter()
                .position(|k| *k == key)?;
            f[i] = Some(p.string()?);
        }
        match p.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    if p.i != p.s.len() {
        return None;
    }
    let [Some(bench), Some(case), Some(imp), Some(metric), Some(unit)] = f else {
        return None;
    };
    let value = value?;
    Some(Record::new(&bench, &case, &imp, &metric, value, &unit))
}

/// Just enough JSON for the records' flat objects.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn next(&mut self) -> Option<u8> {
        self.skip_ws();
        let c = *self.s.get(self.i)?;
        self.i += 1;
        Some(c)
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.i)?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.s.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'u' => {
                            let h = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
                            self.i += 4;
                            let ch = char::from_u32(u32::from_str_radix(h, 16).ok()?)?;
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        _ => return None,
                    }
                }
                c => out.push(c),
            }
        }
    }
    /// A number, or `null` (as NaN: not measured).
    fn number_or_null(&mut self) -> Option<f64> {
        self.skip_ws();
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || b"+-.".contains(c))
        {
            self.i += 1;
        }
        let t = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        if t == "null" {
            return Some(f64::NAN);
        }
        t.parse().ok()
    }
}

/// The first record with this case (by prefix), impl and metric.
fn get(recs: &[Record], case_prefix: &str, imp: &str, metric: &str) -> Option<f64> {
    recs.iter()
        .find(|r| r.case.starts_with(case_prefix) && r.impl_ == imp && r.metric == metric)
        .map(|r| r.value)
        .filter(|v| v.is_finite())
}

/// The knary cases of the records, in order (`knary(4,m,i)`).
fn knary_cases(recs: &[Record]) -> Vec<String> {
    crate::bench::cases(recs)
        .into_iter()
        .filter(|c| c.starts_with("knary("))
        .map(str::to_string)
        .collect()
}

fn targets(recs: &[Record]) -> Vec<Target> {
    let mut v = Vec::new();
    let raw_rt = get(recs, "round_trip", "raw-mpi", "median");
    let call = get(recs, "round_trip", "call-engine", "median");
    v.push(Target::new(
        "call to the engine place / raw MPI ping-pong, round trip",
        ratio(call, raw_rt),
        "x",
        Cmp::AtMost,
        1.3,
    ));
    let raw_rate = get(recs, "message_rate", "raw-mpi", "median");
    for (imp, what) in [("spawn-engine", "engine place"), ("spawn-core", "a core")] {
        let rate = get(recs, "message_rate", imp, "median");
        v.push(Target::new(
            format!("spawns to {what} / raw MPI_Isend stream, message rate"),
            ratio(rate, raw_rate),
            "x",
            Cmp::AtLeast,
            0.7,
        ));
    }
    let mc = get(recs, "reduce ", "manycore", "median");
    let raw = get(recs, "reduce ", "raw-mpi", "median");
    v.push(Target::new(
        "reduce / MPI_Reduce, 4 ranks x 2 cores",
        ratio(mc, raw),
        "x",
        Cmp::AtMost,
        1.5,
    ));
    for case in knary_cases(recs).iter().filter(|c| c.ends_with(",1000)")) {
        let e = find(recs, case, "ranks-2", "efficiency");
        v.push(Target::new(
            format!("{case} on 2 ranks, efficiency (speedup / S_cap)"),
            e,
            "x",
            Cmp::AtLeast,
            0.8,
        ));
    }
    v
}

fn notes(recs: &[Record]) -> String {
    let mut s = String::new();
    for n in RUN_NOTES.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        s.push_str(&format!("- {n}\n"));
    }
    if recs.is_empty() {
        return s;
    }
    let line = |s: &mut String, what: &str, v: Option<f64>| {
        if let Some(v) = v {
            s.push_str(&format!("- {what}: {v:.2}x\n"));
        }
    };
    // Every other way of a round trip against the raw ping-pong.
    let raw_rt = get(recs, "round_trip", "raw-mpi", "median");
    for r in recs.iter().filter(|r| {
        r.case.starts_with("round_trip")
            && r.metric == "median"
            && r.impl_ != "raw-mpi"
            && r.impl_ != "call-engine"
    }) {
        let what = format!("round trip {} / raw-mpi", r.impl_);
        line(&mut s, &what, ratio(Some(r.value), raw_rt));
    }
    let raw_rate = get(recs, "message_rate", "raw-mpi", "median");
    for r in recs.iter().filter(|r| {
        r.case.starts_with("message_rate")
            && r.impl_.starts_with("spawn-")
            && r.impl_.contains('/')
    }) {
        let what = format!("message rate {} / raw-mpi", r.impl_);
        line(&mut s, &what, ratio(Some(r.value), raw_rate));
    }
    for op in ["reduce ", "allreduce ", "broadcast ", "allreduce_cores "] {
        let raw =
            get(recs, op, "raw-mpi", "median").or(get(recs, op, "raw-mpi-allreduce", "median"));
        for imp in ["manycore", "manycore/engine-only"] {
            if op == "reduce " && imp == "manycore" {
                continue; // a target
            }
            let mc = get(recs, op, imp, "median");
            let what = format!("{} {imp} / its MPI counterpart", op.trim());
            line(&mut s, &what, ratio(mc, raw));
        }
    }
    // knary: the same result on every number of ranks.
    for case in knary_cases(recs) {
        let nodes: Vec<f64> = recs
            .iter()
            .filter(|r| r.case == case && r.metric == "nodes")
            .map(|r| r.value)
            .collect();
        if nodes.len() > 1 && nodes.windows(2).any(|w| w[0] != w[1]) {
            s.push_str(&format!("- {case}: node counts differ between rank counts: {nodes:?}\n"));
        }
    }
    if !knary_cases(recs).is_empty() {
        s.push_str(
            "- knary returns the same node count on every rank count (the MPI program checks \
             each run against (k^m - 1)/(k - 1) and fails otherwise).\n",
        );
    }
    // Figure 5: one line per number of ranks.
    let mut fig5: Vec<(String, String, Vec<String>)> = Vec::new();
    for r in recs
        .iter()
        .filter(|r| r.case.starts_with("fig5") && r.metric == "speedup")
    {
        let (ranks, every) = r.impl_.split_once("/poll-every-").unwrap_or((&r.impl_, "?"));
        let item = format!("{every}: {:.2}", r.value);
        match fig5.iter_mut().find(|f| f.0 == r.case && f.1 == ranks) {
            Some(f) => f.2.push(item),
            None => fig5.push((r.case.clone(), ranks.to_string(), vec![item])),
        }
    }
    for (case, ranks, items) in fig5 {
        s.push_str(&format!(
            "- Figure 5, speedup of {} on {ranks} by the joins a worker runs between two \
             polls of MPI (MuSE's MAX_SEQUENTIAL; 0: never, the engine alone receives): {}\n",
            case.trim_start_matches("fig5 "),
            items.join(", ")
        ));
    }
    if let Some(u) = recs
        .iter()
        .find(|r| r.case.starts_with("table2") && r.metric == "utilized")
    {
        s.push_str(&format!(
            "- {}: {:.0}% of the ideal speedup S_max (the paper: 91.3% on 2 nodes)\n",
            u.case,
            u.value * 100.0
        ));
    }
    s
}

/// The medians of each case, and knary's speedup over the number of ranks
/// (one line per i, as the paper's Figure 4).
fn plots(bench: &Bench, recs: &[Record]) -> Vec<Plot> {
    let mut v = crate::plot::medians_per_case(bench, recs);
    let series: Vec<(String, Vec<(f64, f64)>)> = knary_cases(recs)
        .into_iter()
        .map(|case| {
            let pts = recs
                .iter()
                .filter(|r| r.case == case && r.metric == "speedup")
                .filter_map(|r| Some((r.impl_.strip_prefix("ranks-")?.parse().ok()?, r.value)))
                .collect();
            (case, pts)
        })
        .collect();
    if !series.is_empty() {
        v.push(Plot::lines(
            "mpi_knary_speedup",
            "knary speedup over ranks (MuSE Figure 4)",
            "ranks",
            "speedup (Ts / Tn)",
            series,
            false,
            false,
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(extra: Vec<(&'static str, Vec<String>)>) -> Options {
        Options {
            extra,
            ..Options::defaults(&BENCH, true)
        }
    }

    /// Without mpirun the bench measures nothing, quickly, and says why.
    #[test]
    fn skipped_without_mpirun() {
        let o = opts(vec![("--mpirun", vec!["/nonexistent/mpirun".into()])]);
        let t = Instant::now();
        let recs = run(&o, &Progress::hidden());
        assert!(recs.is_empty());
        assert!(t.elapsed() < Duration::from_secs(5));
        let s = BENCH.summary(&recs);
        assert!(s.contains("skipped: mpirun not found"), "{s}");
        assert!(s.contains("not measured"), "{s}");
    }

    /// mpirun is looked up on the PATH given, and only there.
    #[test]
    fn mpirun_on_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("manycore-mpi-path-{}", std::process::id()));
        let (empty, with) = (dir.join("empty"), dir.join("with"));
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::create_dir_all(&with).unwrap();
        let fake = with.join("mpirun");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = |d: &Path| Some(d.as_os_str().to_owned());
        assert_eq!(find_mpirun(None, path(&empty).as_deref()), None);
        assert_eq!(find_mpirun(None, path(&with).as_deref()), Some(fake.clone()));
        assert_eq!(find_mpirun(None, None), None);
        let f = fake.to_str().unwrap();
        assert_eq!(find_mpirun(Some(f), None), Some(fake.clone()));
        assert_eq!(find_mpirun(Some("/nonexistent/mpirun"), path(&with).as_deref()), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn records_parse_and_others_do_not() {
        let r = parse_record(
            r#"{"bench":"mpi","case":"round_trip 41B","impl":"raw-mpi","metric":"median","value":1.25,"unit":"us"}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            BENCH.record("round_trip 41B", "raw-mpi", "median", 1.25, "us")
        );
        let r = parse_record(
            r#" {"bench":"mpi","case":"a\"b\u0041","impl":"x","metric":"m","value":null,"unit":"u"} "#,
        )
        .unwrap();
        assert_eq!(r.case, "a\"bA");
        assert!(r.value.is_nan());
        for bad in [
            "",
            "hello",
            r#"{"bench":"steal","case":"c","impl":"i","metric":"m","value":1,"unit":"u"}"#,
            r#"{"bench":"mpi","case":"c","impl":"i","metric":"m","value":1}"#,
            r#"{"bench":"mpi","case":"c","impl":"i","metric":"m","value":1,"unit":"u"} x"#,
            r#"{"bench":"mpi","case":"c","impl":"i","metric":"m","value":"1","unit":"u"}"#,
        ] {
            assert_eq!(parse_record(bad), None, "{bad}");
        }
        let line = r#"{"reason":"compiler-artifact","executable":"/t/release/examples/bench","x":1}"#;
        assert_eq!(
            json_string_field(line, "executable").as_deref(),
            Some("/t/release/examples/bench")
        );
    }

    #[test]
    fn targets_and_efficiency_from_records() {
        let r = |case: &str, imp: &str, metric: &str, v: f64| BENCH.record(case, imp, metric, v, "u");
        let mut recs = vec![
            r("round_trip 41B", "raw-mpi", "median", 2.0),
            r("round_trip 41B", "call-engine", "median", 2.4),
            r("message_rate 33B", "raw-mpi", "median", 2.0),
            r("message_rate 33B", "spawn-engine", "median", 3.0),
            r("reduce 4x2", "raw-mpi", "median", 10.0),
            r("reduce 4x2", "manycore", "median", 20.0),
            r("capacity", "ranks-2", "S_cap", 1.6),
            r("knary(4,10,1000)", "ranks-1", "speedup", 0.95),
            r("knary(4,10,1000)", "ranks-2", "speedup", 1.44),
        ];
        recs.extend(derived(&recs));
        let e = find(&recs, "knary(4,10,1000)", "ranks-2", "efficiency").unwrap();
        assert!((e - 0.9).abs() < 1e-9);
        assert_eq!(find(&recs, "knary(4,10,1000)", "ranks-1", "efficiency"), None);
        let s = BENCH.summary(&recs);
        assert!(s.contains("round trip: 1.20x (target <= 1.3) pass"), "{s}");
        assert!(s.contains("engine place / raw MPI_Isend stream, message rate: 1.50x (target >= 0.7) pass"), "{s}");
        assert!(s.contains("a core / raw MPI_Isend stream, message rate: not measured"), "{s}");
        assert!(s.contains("MPI_Reduce, 4 ranks x 2 cores: 2.00x (target <= 1.5) FAIL"), "{s}");
        assert!(s.contains("efficiency (speedup / S_cap): 0.90x (target >= 0.8) pass"), "{s}");
        assert!(!plots(&BENCH, &recs).is_empty());
    }
}
