//! End-to-end runs of the binary at tiny sizes. Only the shape of the
//! output is checked, never a timing: every stdout line of `--json` is a
//! record, and `report --quick` writes its files.

use std::process::{Command, Output};

fn manycore() -> Command {
    Command::new(env!("CARGO_BIN_EXE_manycore"))
}

/// Runs `cmd` and checks that it exited with status 0.
fn run_ok(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn pingpong_json_is_records_only() {
    let o = run_ok(manycore().args([
        "bench", "pingpong", "--secs", "0.05", "--reps", "1", "--idle", "sleep", "--json",
    ]));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut impls = Vec::new();
    for line in out.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let m = v.as_object().expect("object");
        assert_eq!(m.len(), 6, "{line}");
        assert_eq!(m["bench"], "pingpong");
        for k in ["case", "impl", "metric", "unit"] {
            assert!(m[k].is_string(), "{line}");
        }
        assert!(m["value"].is_number() || m["value"].is_null(), "{line}");
        impls.push(m["impl"].as_str().unwrap().to_string());
    }
    // Rows can fail on an overloaded machine (bounded waits); most must be there.
    assert!(impls.len() >= 4, "{out}");
    assert!(
        !impls.iter().any(|i| i == "manycore-poll"),
        "--idle sleep only"
    );
}

#[test]
fn report_quick_writes_files() {
    let dir = std::env::temp_dir().join(format!("manycore-smoke-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = run_ok(manycore().args(["report", "--quick", "--out"]).arg(&dir));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("== pingpong"), "{stdout}");
    for f in ["report.md", "results.json"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("| case | impl |"), "{md}");
    assert!(md.contains("Targets"), "{md}");
    assert!(!md.contains("Acceptance"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A setting that was an environment variable is a flag: `--only` runs
/// just the parts it names.
#[test]
fn sock_only_runs_the_parts_named() {
    let o = run_ok(manycore().args(["bench", "sock", "--quick", "--only", "table1", "--json"]));
    let out = String::from_utf8(o.stdout).unwrap();
    let cases: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["case"].to_string())
        .collect();
    assert!(!cases.is_empty(), "{out}");
    assert!(
        cases.iter().all(|c| c.starts_with("\"table1-")),
        "{cases:?}"
    );
}
