//! The binary's exit statuses and messages for help and bad arguments: a bad
//! command line exits with 2 and a clear message on stderr, never a panic,
//! and prints nothing on stdout.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_manycore"))
        .args(args)
        .output()
        .expect("run manycore")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_exits_zero() {
    for args in [
        &["--help"][..],
        &["help"],
        &["bench", "--help"],
        &["bench", "pingpong", "--help"],
        &["report", "-h"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(
            text(&o.stdout).contains("Usage: manycore"),
            "{args:?}: {}",
            text(&o.stdout)
        );
        assert!(o.stderr.is_empty(), "{args:?}");
    }
    let o = run(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).starts_with("manycore "));
}

#[test]
fn bad_arguments_exit_two() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "no command given"),
        (&["frobnicate"], "unknown command 'frobnicate'"),
        (&["bench"], "needs a benchmark name"),
        (&["bench", "nosuch"], "unknown benchmark 'nosuch'"),
        (
            &["bench", "pingpong", "--idle", "spin"],
            "invalid value 'spin' for '--idle'",
        ),
        (
            &["bench", "pingpong", "--secs", "soon"],
            "invalid value 'soon' for '--secs'",
        ),
        (
            &["bench", "pingpong", "--secs", "-3"],
            "invalid value '-3' for '--secs'",
        ),
        (&["bench", "pingpong", "--secs"], "needs a value"),
        (
            &["bench", "pingpong", "--reps", "0"],
            "invalid value '0' for '--reps'",
        ),
        (&["bench", "pingpong", "--what"], "unknown option '--what'"),
        (&["report", "--quick", "--full"], "cannot be used together"),
        (&["report", "--only", "nosuch"], "unknown section 'nosuch'"),
    ];
    for (args, msg) in cases {
        let o = run(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: want '{msg}' in: {err}");
        assert!(err.contains("--help"), "{args:?}: a hint: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: stdout must stay clean");
    }
}
