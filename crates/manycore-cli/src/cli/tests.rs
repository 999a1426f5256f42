//! Unit tests of the argument parser.

use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn err(s: &str) -> UsageError {
    match parse(&args(s)) {
        Err(e) => e,
        Ok(c) => panic!("'{s}' parsed as {c:?}"),
    }
}

fn bench(s: &str) -> Options {
    match parse(&args(s)) {
        Ok(Command::Bench { options, .. }) => options,
        other => panic!("'{s}': {other:?}"),
    }
}

fn idle(o: &Options) -> Option<&[String]> {
    o.get("--idle")
}

#[test]
fn help_everywhere() {
    for s in [
        "--help",
        "-h",
        "help",
        "help bench",
        "help bench pingpong",
        "help report",
        "bench --help",
        "bench pingpong --help",
        "bench pingpong --secs 1 -h",
        "report --help",
    ] {
        assert!(matches!(parse(&args(s)), Ok(Command::Help(_))), "{s}");
    }
    assert!(matches!(parse(&args("--version")), Ok(Command::Version)));
    let Ok(Command::Help(h)) = parse(&args("--help")) else {
        unreachable!()
    };
    assert!(h.contains("bench") && h.contains("report") && h.contains("pingpong"));
    let Ok(Command::Help(h)) = parse(&args("bench pingpong --help")) else {
        unreachable!()
    };
    assert!(h.contains("--idle") && h.contains("--reps") && h.contains("--secs"));
}

#[test]
fn bench_flags() {
    // Without flags: the bench's defaults.
    let a = bench("bench pingpong");
    assert_eq!(
        a,
        Options {
            secs: 1.0,
            reps: 5,
            quick: false,
            json: false,
            extra: vec![]
        }
    );
    let a = bench("bench pingpong --idle poll --secs 0.5 --reps 3 --json");
    assert_eq!(a.secs, 0.5);
    assert_eq!(a.reps, 3);
    assert_eq!(idle(&a), Some(&["poll".to_string()][..]));
    assert!(a.json);
    let a = bench("bench pingpong --idle=all --secs=2");
    assert_eq!(idle(&a).unwrap(), ["poll", "sleep", "hybrid"]);
    assert_eq!(a.secs, 2.0);
    // --quick: the quick report's budget, unless --secs or --reps say otherwise.
    let a = bench("bench pingpong --idle sleep,poll,sleep --quick");
    assert_eq!(idle(&a).unwrap(), ["sleep", "poll"]);
    assert!(a.quick);
    assert_eq!((a.secs, a.reps), (0.2, 3));
    let a = bench("bench pingpong --quick --secs 4 --reps 9");
    assert_eq!((a.secs, a.reps), (4.0, 9));
}

#[test]
fn settings_are_flags() {
    // What environment variables used to set.
    let a = bench("bench steal --pin --quick");
    assert!(a.switch("--pin"));
    assert!(!bench("bench steal").switch("--pin"));
    let a = bench("bench sock --only rtt,table1 --buffer 8192");
    assert_eq!(a.get("--only").unwrap(), ["rtt", "table1"]);
    assert_eq!(a.get("--buffer").unwrap(), ["8192"]);
    assert!(err("bench sock --only nosuch")
        .msg
        .contains("invalid value 'nosuch' for '--only'"));
    assert!(err("bench sock --buffer 1")
        .msg
        .contains("invalid value '1' for '--buffer'"));
    assert!(err("bench steal --pin=1").msg.contains("takes no value"));
    // Options are the bench's own.
    assert!(err("bench steal --idle poll")
        .msg
        .contains("unknown option '--idle'"));
    assert!(err("bench sched --reps 3")
        .msg
        .contains("unknown option '--reps'"));
    // Every bench has a help that lists its own options.
    for b in crate::benches::ALL {
        let Ok(Command::Help(h)) = parse(&args(&format!("bench {} --help", b.name))) else {
            panic!("{}", b.name)
        };
        for o in b.options {
            assert!(h.contains(o.flag), "{}: {}", b.name, o.flag);
        }
        assert_eq!(h.contains("--reps"), b.repeats, "{}", b.name);
    }
}

#[test]
fn peer_subcommand() {
    let Ok(Command::Peer { bench, args: a }) = parse(&args("__sock-peer tcp-echo 1 2")) else {
        panic!()
    };
    assert_eq!(bench.name, "sock");
    assert_eq!(a, ["tcp-echo", "1", "2"]);
    assert!(err("__pingpong-peer").msg.contains("unknown command"));
}

#[test]
fn bench_errors() {
    assert!(err("").msg.contains("no command"));
    assert!(err("frobnicate")
        .msg
        .contains("unknown command 'frobnicate'"));
    assert!(err("--frob").msg.contains("unexpected option"));
    assert!(err("bench").msg.contains("needs a benchmark name"));
    assert!(err("bench nosuch")
        .msg
        .contains("unknown benchmark 'nosuch'"));
    let e = err("bench pingpong --idle spin");
    assert!(
        e.msg.contains("invalid value 'spin' for '--idle'"),
        "{}",
        e.msg
    );
    assert_eq!(e.hint, "manycore bench pingpong --help");
    for bad in ["abc", "0", "-1", "nan", "inf", "1e9"] {
        let e = err(&format!("bench pingpong --secs {bad}"));
        assert!(e.msg.contains("'--secs'"), "{bad}: {}", e.msg);
    }
    assert!(err("bench pingpong --secs").msg.contains("needs a value"));
    assert!(err("bench pingpong --secs --json")
        .msg
        .contains("needs a value"));
    assert!(err("bench pingpong --reps 0").msg.contains("'--reps'"));
    assert!(err("bench pingpong --reps 2.5").msg.contains("'--reps'"));
    assert!(err("bench pingpong --json=yes")
        .msg
        .contains("takes no value"));
    assert!(err("bench pingpong --bogus")
        .msg
        .contains("unknown option '--bogus'"));
    assert!(err("bench pingpong extra")
        .msg
        .contains("unexpected argument 'extra'"));
    assert!(err("help nosuch").msg.contains("unknown command"));
    assert!(err("__nosuch-peer").msg.contains("unknown command"));
}

#[test]
fn report_flags() {
    let Ok(Command::Report(r)) = parse(&args("report")) else {
        panic!()
    };
    assert_eq!(
        r,
        ReportArgs {
            out: PathBuf::from("report"),
            size: Size::Default,
            only: None
        }
    );
    let Ok(Command::Report(r)) = parse(&args("report --out /tmp/x --quick --only pingpong")) else {
        panic!()
    };
    assert_eq!(r.out, PathBuf::from("/tmp/x"));
    assert_eq!(r.size, Size::Quick);
    assert_eq!(r.only, Some(vec!["pingpong".to_string()]));
    let Ok(Command::Report(r)) = parse(&args("report --full")) else {
        panic!()
    };
    assert_eq!(r.size, Size::Full);
    assert!(err("report --quick --full")
        .msg
        .contains("cannot be used together"));
    assert!(err("report --out").msg.contains("needs a value"));
    assert!(err("report --only nosuch")
        .msg
        .contains("unknown section 'nosuch'"));
    assert!(err("report --secs 1")
        .msg
        .contains("unknown option '--secs'"));
    assert!(err("report now").msg.contains("unexpected argument"));
}

#[test]
fn error_display_has_hint() {
    let s = err("bench pingpong --idle spin").to_string();
    assert!(s.starts_with("error: "));
    assert!(s.contains("try 'manycore bench pingpong --help'"));
}

#[test]
fn durations_in_help_and_readme_agree() {
    assert_eq!(duration_text(40.0), "about 40 s");
    assert_eq!(duration_text(97.0), "about 1.5 min");
    assert_eq!(duration_text(134.0), "about 2 min");
    let default = duration_text(report_expected_secs(Size::Default));
    let quick = duration_text(report_expected_secs(Size::Quick));
    assert!(report_help().contains(&format!("It takes {default} ({quick} with --quick")));
    assert!(main_help().contains(&format!("write report/ ({default})")));
    let readme = include_str!("../../README.md");
    assert!(
        readme.contains(&format!("# {default}, writes report/"))
            && readme.contains(&format!("# {quick}, a smoke run")),
        "README.md must state the report's durations: {default}, {quick} with --quick"
    );
}

#[test]
fn help_text_is_wrapped() {
    for b in crate::benches::ALL {
        let h = one_bench_help(b);
        for line in h.lines() {
            assert!(line.chars().count() <= 80, "{}: {line}", b.name);
        }
    }
}

/// What the command prints or writes names no work item, no work session,
/// no history and no path outside the repository. (The words are spelled
/// in pieces so that searching the crate for them finds nothing.)
#[test]
fn printed_text_tells_no_history() {
    let forbidden = [
        ["iss", "ue"].concat(),
        ["sess", "ion"].concat(),
        ["shar", "ed/"].concat(),
        "../".to_string(),
        "Acceptance".to_string(),
    ];
    let mut texts = vec![
        main_help(),
        bench_help(),
        report_help(),
        include_str!("../../README.md").to_string(),
    ];
    for b in crate::benches::ALL {
        texts.push(one_bench_help(b));
        texts.push(b.title.to_string());
        texts.push(b.summary(&[]));
    }
    for t in &texts {
        for f in &forbidden {
            assert!(!t.contains(f.as_str()), "'{f}' in: {t}");
        }
    }
}
