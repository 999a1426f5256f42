//! The report writer on synthetic records: the files exist, report.md has
//! the machine line, each section's table and its text, results.json is a
//! JSON array of every record, and every plot is an SVG document.

use std::path::PathBuf;

use manycore_cli::bench::{Bench, Cmp, Target};
use manycore_cli::plot::Plot;
use manycore_cli::record::Record;
use manycore_cli::report::{markdown, write_report, Machine, Section};

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let d = std::env::temp_dir().join(format!(
        "manycore-report-{tag}-{}-{nanos}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn machine() -> Machine {
    Machine {
        cpus: vec![0, 1],
        model: Some("Test CPU".into()),
        platform: "linux/x86_64".into(),
        date: "2026-01-02 03:04 UTC".into(),
        load: Some(0.5),
    }
}

fn sections() -> Vec<Section> {
    let pp = vec![
        Record::new(
            "pingpong",
            "round_trip",
            "raw-atomic",
            "median",
            1400.0,
            "ns",
        ),
        Record::new("pingpong", "round_trip", "raw-atomic", "p99", 5000.0, "ns"),
        Record::new(
            "pingpong",
            "round_trip",
            "manycore-poll",
            "median",
            1800.0,
            "ns",
        ),
        Record::new("pingpong", "throughput", "rtrb", "median", 25.0, "Mmsg/s"),
        Record::new(
            "pingpong",
            "ratio",
            "manycore-poll/raw-atomic",
            "round_trip",
            1.2857,
            "x",
        ),
    ];
    const PP: Bench = Bench {
        name: "pingpong",
        title: "Ping-pong",
        method: "Intro line.",
        targets: |recs| {
            vec![Target::new(
                "manycore-poll / raw-atomic round trip",
                recs.iter().find(|r| r.case == "ratio").map(|r| r.value),
                "x",
                Cmp::AtMost,
                1.5,
            )]
        },
        ..Bench::DEFAULT
    };
    const SOCK: Bench = Bench {
        name: "sock",
        title: "Sockets",
        ..Bench::DEFAULT
    };
    let a = Section::new(&PP, pp);
    let mut b = Section::new(
        &SOCK,
        vec![
            Record::new("sock", "64B", "manycore-sock", "median", 3.0, "us"),
            Record::new("sock", "64B", "unix-socket", "median", 40.0, "us"),
        ],
    );
    b.plots.push(Plot::lines(
        "sock_sweep",
        "Sweep",
        "bytes",
        "MB/s",
        vec![("manycore-sock".into(), vec![(64.0, 10.0), (4096.0, 500.0)])],
        true,
        true,
    ));
    vec![
        a,
        b,
        Section {
            name: "empty".into(),
            title: "Empty".into(),
            ..Default::default()
        },
    ]
}

#[test]
fn writes_all_files() {
    let dir = temp_dir("all");
    let files = write_report(&dir, &machine(), "test run", &sections()).expect("write");
    for f in [
        "report.md",
        "results.json",
        "pingpong_round_trip.svg",
        "pingpong_throughput.svg",
        "pingpong_targets_lower.svg",
        "sock_64B.svg",
        "sock_sweep.svg",
    ] {
        let p = dir.join(f);
        assert!(p.is_file(), "{f} missing; wrote {files:?}");
        assert!(files.contains(&p), "{f} not listed");
    }

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.starts_with("# manycore report\n"));
    assert!(md.contains("Machine: 2 CPUs in the original CPU set (0,1), Test CPU, linux/x86_64, 2026-01-02 03:04 UTC, load average 0.50 at start."));
    assert!(md.contains("Run: test run."));
    assert!(md.contains("## Ping-pong\n"));
    assert!(md.contains("| case | impl | median | p99 |"), "{md}");
    assert!(
        md.contains("| round_trip | raw-atomic | 1400 ns | 5000 ns |"),
        "{md}"
    );
    assert!(
        md.contains("| throughput | rtrb | 25.00 Mmsg/s |  |"),
        "{md}"
    );
    assert!(!md.contains("| ratio |"), "ratios stay out of the table");
    assert!(md.contains("Intro line."));
    assert!(md.contains("1.29x (target <= 1.5) pass"));
    assert!(md.contains("![Ping-pong: round_trip](pingpong_round_trip.svg)"));
    assert!(md.contains("Targets (figures of this run):\n"), "{md}");
    // Every file written has an extension.
    for f in &files {
        assert!(f.extension().is_some(), "{f:?}");
    }
    assert!(md.contains("## Sockets\n"));
    assert!(md.contains("## Empty\n\n(no results)"));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let arr = json.as_array().expect("an array");
    assert_eq!(arr.len(), 7, "every record, ratios included");
    assert_eq!(arr[4]["impl"], "manycore-poll/raw-atomic");
    assert_eq!(arr[6]["bench"], "sock");

    for f in ["pingpong_round_trip.svg", "sock_sweep.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        let t = svg.trim();
        assert!(t.starts_with("<svg") || t.starts_with("<?xml"), "{f}");
        assert!(t.ends_with("</svg>"), "{f}");
        assert_eq!(
            svg.matches('<').count(),
            svg.matches('>').count(),
            "{f}: balanced brackets"
        );
        assert_eq!(
            svg.matches("<text").count(),
            svg.matches("</text>").count(),
            "{f}"
        );
    }
    let svg = std::fs::read_to_string(dir.join("pingpong_round_trip.svg")).unwrap();
    assert!(
        svg.contains("raw-atomic") && svg.contains("manycore-poll"),
        "labels drawn"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn markdown_without_sections() {
    let md = markdown(&machine(), "r", &[]);
    assert!(md.contains("Machine: 2 CPUs"));
    assert!(md.contains("results.json"));
}

#[test]
fn unwritable_directory_is_an_error() {
    let dir = temp_dir("file");
    std::fs::write(&dir, b"not a directory").unwrap();
    assert!(write_report(&dir, &machine(), "r", &sections()).is_err());
    let _ = std::fs::remove_file(&dir);
}
