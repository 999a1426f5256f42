//! Correctness of the kv workload and of every client kind; the parsing
//! of the options and the text of targets and notes. No timing is judged.

use super::*;
use workload::{client_of, shard_of, Op};

fn tiny() -> Workload {
    Workload::new(Spec {
        ops: 600,
        keys: 40,
        get_pct: 50,
        seed: workload::SEED,
    })
}

/// Every client kind, on two runtimes, and every peer end with the
/// contents and results of the sequential run (so all with the same).
#[test]
fn every_client_kind_computes_the_same_contents() {
    let w = tiny();
    let prefilled = workload::sorted(workload::prefill(40, 0, 1).into_iter().collect());
    assert_ne!(w.contents, prefilled, "the puts changed something");
    let p = Params {
        clients: 3,
        window: 8,
        batch: 5,
    };
    let mut seen = Vec::new();
    for (cores, idle) in [(2, Idle::Hybrid), (3, Idle::Sleep)] {
        for client in Client::ALL {
            let m = clients::run(client, cores, idle, &w, p, &Arc::new(Watch::new(3)))
                .unwrap_or_else(|e| panic!("{} on {cores} cores: {e}", client.name()));
            assert_eq!(m.contents, w.contents, "{} on {cores} cores", client.name());
            assert_eq!(m.checksum, w.checksum, "{} on {cores} cores", client.name());
            w.check(&m).unwrap();
            seen.push(m.contents);
        }
    }
    for peer in Peer::ALL {
        for threads in [1, 3] {
            let m = peers::run(peer, threads, &w, &Watch::new(threads)).unwrap();
            assert_eq!(m.clients, threads);
            assert_eq!(m.contents, w.contents, "{} with {threads} threads", peer.name());
            w.check(&m).unwrap();
            seen.push(m.contents);
        }
    }
    assert!(seen.windows(2).all(|p| p[0] == p[1]));
}

#[test]
fn a_wrong_result_is_caught() {
    let w = tiny();
    let mut m = peers::run(Peer::Mutex, 2, &w, &Watch::new(2)).unwrap();
    m.contents[0].1 ^= 1;
    assert!(w.check(&m).unwrap_err().contains("1 differ"));
    m.contents[0].1 ^= 1;
    m.checksum ^= 1;
    assert!(w.check(&m).unwrap_err().contains("checksum"));
}

#[test]
fn partition_keeps_each_key_with_one_client_in_order() {
    let w = tiny();
    let parts = w.partition(3);
    assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), w.ops.len());
    for (c, part) in parts.iter().enumerate() {
        assert!(part.iter().all(|op| client_of(op.key(), 3) == c));
        // The subsequence of the global order.
        let mut it = w.ops.iter();
        assert!(part.iter().all(|op| it.any(|g| g == op)));
    }
    // Keys spread over shards and clients independently.
    let both = (0..4000u64).filter(|&k| shard_of(k, 4) == client_of(k, 4)).count();
    assert!((700..1300).contains(&both), "{both}");
    let gets = w.ops.iter().filter(|o| matches!(o, Op::Get(_))).count();
    assert!((200..400).contains(&gets), "{gets}");
}

#[test]
fn options_parse() {
    assert_eq!(parse_mix("90/10").unwrap(), ["90", "10"]);
    assert!(parse_mix("90/20").is_err() && parse_mix("90").is_err());
    assert_eq!(parse_cores("2,16,2").unwrap(), ["2", "16"]);
    assert!(parse_cores("0").is_err());
    assert!(parse_groups("peers,cores-1024").is_ok() && parse_groups("x").is_err());
    let mut o = Options::defaults(&BENCH, true);
    assert!(!Config::new(&o).wants("cores-1024"), "not in --quick");
    assert_eq!(Config::new(&o).spec.ops, 1_000);
    assert_eq!(Config::new(&o).cores, [2, 4]);
    o.extra.push(("--only", vec!["cores-1024".into()]));
    let c = Config::new(&o);
    assert!(c.wants("cores-1024") && rows(&c).is_empty());
    let o = Options::defaults(&BENCH, false);
    let c = Config::new(&o);
    assert!(c.wants("cores-1024"));
    assert_eq!(
        (c.spec.ops, c.spec.get_pct, c.params.window, c.params.batch),
        (100_000, 80, 64, 256)
    );
    assert_eq!(c.peer_threads(), [2, 4, 16]);
}

#[test]
fn a_stalled_row_is_reported_not_waited_for() {
    let watch = || Arc::new(Watch::new(1));
    // A row that never ends is left behind.
    let r = bounded(Duration::from_millis(20), watch(), |_| {
        std::thread::sleep(Duration::from_secs(30));
        Ok(())
    });
    assert_eq!(r, Err(Fail::Stalled(0, false)));
    // A row that is only slow is stopped, and winds down.
    let (tx, rx) = mpsc::channel();
    let r = bounded(Duration::from_millis(50), watch(), move |w| {
        let mut i = 0;
        while w.tick(0, i).is_ok() {
            i += 1;
            std::thread::sleep(Duration::from_micros(10));
        }
        tx.send(()).unwrap();
        Ok(())
    });
    assert!(matches!(r, Err(Fail::Stalled(n, true)) if n > 0), "{r:?}");
    assert!(rx.try_recv().is_ok(), "wound down within the grace period");
    // So does a manycore row.
    let w = tiny();
    let stopped = Arc::new(Watch::new(3));
    stopped.stop();
    let p = Params {
        clients: 2,
        window: 4,
        batch: 3,
    };
    for client in Client::ALL {
        let e = clients::run(client, 2, Idle::Sleep, &w, p, &stopped).unwrap_err();
        assert!(e.contains("stopped"), "{e}");
    }
    assert_eq!(bounded(Duration::from_secs(5), watch(), |_| Ok(7)), Ok(7));
    let r: Result<(), _> = bounded(Duration::from_secs(5), watch(), |_| panic!("boom"));
    assert_eq!(r, Err(Fail::Error("the row panicked".into())));
}

#[test]
fn targets_and_notes_from_records() {
    let rec = |case: &str, imp: &str, metric: &str, v: f64| BENCH.record(case, imp, metric, v, "");
    let recs = vec![
        rec("outside-sync/4c", "manycore-sleep", "median", 2000.0),
        rec("outside-sync/4c", "manycore-hybrid", "median", 2500.0),
        rec("pipelined/4c", "manycore-hybrid", "throughput", 0.5),
        rec("pipelined-batch/4c", "manycore-hybrid", "throughput", 3.0),
        rec("peers/4t", "dashmap", "throughput", 2.0),
        rec("core-async/4c", "manycore-hybrid", "failed", 1.0),
        rec("cores-1024/available", "manycore-sleep", "memory", 100.0),
        rec("cores-1024/build", "manycore-sleep", "skipped", 5000.0),
    ];
    let t = targets(&recs);
    let line = |label: &str| t.iter().find(|t| t.label.starts_with(label)).unwrap().line();
    assert_eq!(
        line("outside-sync/4c: hybrid"),
        "- outside-sync/4c: hybrid / best fixed policy, ns per op: 1.25x (target <= 1.5) pass [best fixed: sleep]"
    );
    assert!(line("outside-sync/4c, hybrid").ends_with("2500.00 ns (target <= 3000) pass"));
    assert!(line("pipelined-batch/4c").contains("1.50x (target >= 1) pass"));
    let n = notes(&recs);
    assert!(n.contains("pipelined/4c (one invocation per operation), hybrid: 0.25x"), "{n}");
    assert!(n.contains("core-async/4c manycore-hybrid stalled"), "{n}");
    assert!(n.contains("cores-1024 skipped: MemAvailable 100 MiB"), "{n}");
    assert_eq!(shapes(&recs), [4]);
}
