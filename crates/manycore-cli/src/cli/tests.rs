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
