//! The `pariter` part of `manycore bench steal`: workloads of rayon's own
//! demos run through the `rayon` crate, once on the real rayon-core and once
//! on manycore's (`crates/manycore-rayon-core`), in one run, on 1 and 2
//! threads.
//!
//! Two rayon-cores cannot link into one binary (one crate name, one
//! `links`), so the program, `crates/manycore-rayon-core/pariter-bench/`
//! (one source, two manifests outside the workspace), is built twice with
//! cargo: `on-rayon-core/` as it comes, `on-manycore/` with `[patch.crates-io]
//! rayon-core` pointing at manycore's, each into its own directory under the
//! target directory (`pariter-rayon-core`, `pariter-manycore`). The runs
//! alternate (on rayon-core T1, on manycore T1, on rayon-core T2, on
//! manycore T2, --reps times); each run times every workload once after a
//! warm-up pass, checks its results (exit status 1 on a mismatch) and
//! prints one record per workload, which this module parses; the figures
//! are the medians over the runs. A program that does not build, or a run
//! that fails, leaves its records out and says why in the notes
//! ("skipped: ...").

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::bench::{cases, find, ratio, Cmp, Options, Target};
use crate::benches::mpi::{json_string_field, parse_any_record, run_bounded, tail, workspace};
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::median;

use super::BENCH;

/// The two builds: (directory of the manifest under `pariter-bench/`, the
/// binary's name, the impl its records carry).
pub const BUILDS: [(&str, &str, &str); 2] = [
    ("on-rayon-core", "pariter-on-rayon-core", RAYON),
    ("on-manycore", "pariter-on-manycore", MANYCORE),
];

/// The impl of the records on the real rayon-core.
pub const RAYON: &str = "rayon-on-rayon-core";
/// The impl of the records on manycore's rayon-core.
pub const MANYCORE: &str = "rayon-on-manycore";

/// Whether `r` is a record of this part.
pub fn is_pariter(r: &Record) -> bool {
    r.impl_ == RAYON || r.impl_ == MANYCORE
}

/// Seconds one run of a program takes on the 2-vCPU VM (T1, T2), quick and
/// full sizes: process start, the warm-up pass, every workload once.
fn run_secs(threads: usize, quick: bool) -> f64 {
    match (threads, quick) {
        (_, true) => 0.05,
        (1, false) => 1.9,
        (_, false) => 1.1,
    }
}

/// The expected time of the part: two no-op cargo builds, then the runs.
pub fn expected_secs(o: &Options) -> f64 {
    let per_round: f64 = [1, 1, 2, 2].iter().map(|&t| run_secs(t, o.quick)).sum();
    2.0 + per_round * o.reps as f64
}

/// What the last run had to say beyond its records, for the notes.
static RUN_NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note(progress: &Progress, line: String) {
    progress.println(&format!("steal pariter: {line}"));
    RUN_NOTES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(line);
}

/// The notes of the last run (Markdown list items).
pub fn notes() -> String {
    RUN_NOTES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|n| format!("- {}\n", n.trim_end()))
        .collect()
}

/// Where cargo puts the builds: `CARGO_TARGET_DIR` if set, else the
/// workspace's `target/`.
fn target_dir(ws: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => ws.join(d),
        _ => ws.join("target"),
    }
}

/// Builds one program with cargo and returns its path.
fn build(dir: &str, bin: &str, progress: &Progress) -> Result<PathBuf, String> {
    progress.set_message(&format!("steal: building {bin}"));
    let ws = workspace();
    let manifest = ws
        .join("crates/manycore-rayon-core/pariter-bench")
        .join(dir)
        .join("Cargo.toml");
    if !manifest.is_file() {
        return Err(format!("{bin}: no manifest at {}", manifest.display()));
    }
    let target = target_dir(&ws).join(format!("pariter-{}", dir.trim_start_matches("on-")));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // From the manifest's directory, so that cargo reads
    // pariter-bench/.cargo/config.toml (the same code-layout flags for both
    // builds).
    let dir = manifest.parent().unwrap_or(&ws);
    cmd.current_dir(dir)
        .arg("build")
        .arg("--release")
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .arg("--message-format=json-render-diagnostics");
    let ran = run_bounded(&mut cmd, Duration::from_secs(1200))
        .map_err(|e| format!("{bin}: cargo could not start: {e}"))?;
    if ran.status != Some(0) {
        let why = match (ran.timed_out, ran.stderr.trim().is_empty()) {
            (true, _) => " (timed out)".to_string(),
            (false, true) => match ran.status {
                Some(c) => format!(" (cargo exited with status {c}, saying nothing)"),
                None => " (cargo was killed by a signal)".to_string(),
            },
            (false, false) => String::new(),
        };
        let out = tail(&ran.stderr, 15);
        let sep = if out.is_empty() { "" } else { ":\n" };
        return Err(format!("{bin} did not build{why}{sep}{out}"));
    }
    ran.stdout
        .lines()
        .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("\"kind\":[\"bin\"]"))
        .filter(|l| l.contains(&format!("\"name\":\"{bin}\"")))
        .find_map(|l| json_string_field(l, "executable"))
        .map(PathBuf::from)
        .ok_or_else(|| format!("cargo built {bin} but did not say where"))
}

/// Builds both programs, runs them alternately and adds the medians of
/// their records to `out`.
pub fn run(o: &Options, progress: &Progress, out: &mut Vec<Record>) {
    RUN_NOTES.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let mut programs: Vec<(PathBuf, &str)> = Vec::new();
    for (dir, bin, imp) in BUILDS {
        match build(dir, bin, progress) {
            Ok(p) => programs.push((p, imp)),
            Err(e) => note(progress, format!("skipped: {e}")),
        }
    }
    if programs.len() < BUILDS.len() {
        // One alone compares with nothing.
        if !programs.is_empty() {
            note(progress, "skipped: the other program did not build".into());
        }
        return;
    }
    let mut got: Vec<Record> = Vec::new();
    for rep in 0..o.reps {
        for threads in [1, 2] {
            for (program, imp) in &programs {
                progress.set_message(&format!(
                    "steal: pariter {imp} T{threads} ({}/{})",
                    rep + 1,
                    o.reps
                ));
                let mut cmd = Command::new(program);
                cmd.args(["--threads", &threads.to_string()]);
                if o.quick {
                    cmd.arg("--quick");
                }
                let limit = Duration::from_secs_f64(60.0 + 20.0 * run_secs(threads, o.quick));
                let what = format!("{imp} T{threads}");
                match run_bounded(&mut cmd, limit) {
                    Err(e) => note(progress, format!("{what}: could not start: {e}")),
                    Ok(ran) => {
                        if let Some(problem) = ran.problem(&what, limit) {
                            note(progress, problem);
                        }
                        got.extend(
                            ran.stdout
                                .lines()
                                .filter_map(parse_any_record)
                                .filter(|r| r.bench == BENCH.name && r.impl_ == *imp),
                        );
                    }
                }
            }
        }
    }
    out.extend(medians(&got));
}

/// One record per case, impl and metric: the median of its values, in the
/// order they first came.
pub fn medians(got: &[Record]) -> Vec<Record> {
    let mut keys: Vec<(&str, &str, &str, &str)> = Vec::new();
    for r in got {
        let k = (r.case.as_str(), r.impl_.as_str(), r.metric.as_str(), r.unit.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(case, imp, metric, unit)| {
            let v: Vec<f64> = got
                .iter()
                .filter(|r| r.case == case && r.impl_ == imp && r.metric == metric)
                .map(|r| r.value)
                .collect();
            BENCH.record(case, imp, metric, median(&v).unwrap_or(f64::NAN), unit)
        })
        .collect()
}

/// One target per workload: manycore's T2 at most rayon-core's.
pub fn targets(recs: &[Record]) -> Vec<Target> {
    cases(recs)
        .into_iter()
        .filter(|c| recs.iter().any(|r| r.case == *c && is_pariter(r)))
        .map(|case| {
            let mc = find(recs, case, MANYCORE, "T2");
            let rc = find(recs, case, RAYON, "T2");
            Target::new(
                format!("{case} rayon crate on manycore-rayon-core T2 / on rayon-core T2"),
                ratio(mc, rc),
                "x",
                Cmp::AtMost,
                1.0,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_targets_from_program_records() {
        let lines = [
            r#"{"bench":"steal","case":"par_sort(100)","impl":"rayon-on-rayon-core","metric":"T2","value":2.0,"unit":"ms"}"#,
            r#"{"bench":"steal","case":"par_sort(100)","impl":"rayon-on-manycore","metric":"T2","value":1.0,"unit":"ms"}"#,
            r#"{"bench":"steal","case":"par_sort(100)","impl":"rayon-on-manycore","metric":"T2","value":3.0,"unit":"ms"}"#,
            r#"{"bench":"steal","case":"par_sort(100)","impl":"rayon-on-manycore","metric":"T2","value":1.6,"unit":"ms"}"#,
            r#"{"bench":"steal","case":"demo quicksort(100)","impl":"rayon-on-manycore","metric":"T1","value":5.0,"unit":"ms"}"#,
            "not a record",
        ];
        let got: Vec<Record> = lines.iter().filter_map(|l| parse_any_record(l)).collect();
        assert_eq!(got.len(), 5);
        let m = medians(&got);
        assert_eq!(m.len(), 3);
        assert_eq!(find(&m, "par_sort(100)", MANYCORE, "T2"), Some(1.6));
        let t = targets(&m);
        assert_eq!(t.len(), 2);
        assert!(!BENCH.summary(&m).contains("idle runtime"));
        assert_eq!(
            t[0].line(),
            "- par_sort(100) rayon crate on manycore-rayon-core T2 / on rayon-core T2: \
             0.80x (target <= 1) pass"
        );
        assert!(t[1].line().contains("not measured"), "{}", t[1].line());
    }

    /// Both manifests build the one source, and the workspace leaves them out.
    #[test]
    fn manifests_share_the_source_and_stay_out_of_the_workspace() {
        let ws = workspace();
        for (dir, bin, _) in BUILDS {
            let m = std::fs::read_to_string(
                ws.join("crates/manycore-rayon-core/pariter-bench")
                    .join(dir)
                    .join("Cargo.toml"),
            )
            .unwrap();
            assert!(m.contains(&format!("name = \"{bin}\"")), "{dir}");
            assert!(m.contains("path = \"../src/main.rs\""), "{dir}");
            assert!(m.contains("\n[workspace]"), "{dir}");
            assert_eq!(m.contains("[patch.crates-io]"), dir == "on-manycore", "{dir}");
        }
        let root = std::fs::read_to_string(ws.join("Cargo.toml")).unwrap();
        assert!(root.contains("\"crates/manycore-rayon-core/pariter-bench\""));
    }
}
