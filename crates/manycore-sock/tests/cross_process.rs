//! Cross-process tests: the test binary re-executes itself as the peer
//! (`MANYCORE_SOCK_ROLE` selects the peer's part in `peer`).
mod common;
use common::*;
use manycore_sock::{set_client_config, Config, ShmListener, ShmStream};
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

const PORT: u32 = 5;

/// The peer's entry point: does nothing unless started by a parent test.
#[test]
fn peer() {
    let Some((role, ns)) = child_role() else {
        return;
    };
    let addr = ns.addr(PORT);
    match role.as_str() {
        "echo" => {
            let mut s = ShmStream::connect(&addr).unwrap();
            let mut buf = vec![0u8; 65536];
            loop {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n]).unwrap();
            }
        }
        "both-ways" => {
            // Small client buffer so that our own extra connections split it.
            set_client_config(Config {
                buffer_size: 8192,
                ..Config::default()
            });
            let s = ShmStream::connect(&addr).unwrap();
            let total: usize = std::env::var("TOTAL").unwrap().parse().unwrap();
            let data = pattern(2, total);
            let s2 = s.try_clone().unwrap();
            let w = std::thread::spawn(move || {
                let mut extra = Vec::new();
                for (i, c) in data.chunks(20_000).enumerate() {
                    (&s2).write_all(c).unwrap();
                    // Split and merge our own (client) buffer mid-stream.
                    if i % 4 == 1 && extra.len() < 6 {
                        extra.push(ShmStream::connect(&ns.addr(PORT + 1)).unwrap());
                    } else if i % 4 == 3 {
                        extra.clear();
                    }
                }
                s2.shutdown(std::net::Shutdown::Write).unwrap();
            });
            let mut got = Vec::new();
            (&s).read_to_end(&mut got).unwrap();
            w.join().unwrap();
            assert_eq!(got.len(), total);
            assert_eq!(checksum(&got), checksum(&pattern(1, total)));
        }
        "stream-forever" => {
            let mut s = ShmStream::connect(&addr).unwrap();
            let buf = vec![5u8; 4096];
            loop {
                if s.write_all(&buf).is_err() {
                    break;
                }
            }
        }
        "read-forever" => {
            let mut s = ShmStream::connect(&addr).unwrap();
            let mut buf = vec![0u8; 4096];
            while s.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
        }
        "serve-stream" => {
            let l = ShmListener::bind(&addr).unwrap();
            println!("bound");
            let (mut s, _) = l.accept().unwrap();
            let buf = vec![6u8; 4096];
            while s.write_all(&buf).is_ok() {}
        }
        "accept-only" => {
            let l = ShmListener::bind(&addr).unwrap();
            let _ = l.accept();
            std::thread::sleep(Duration::from_secs(60));
        }
        "bind-and-sleep" => {
            let _l = ShmListener::bind(&addr).unwrap();
            std::thread::sleep(Duration::from_secs(60));
        }
        "connect-loop" => loop {
            if let Ok(s) = ShmStream::connect_timeout(&addr, Duration::from_millis(100)) {
                drop(s);
            }
        },
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

fn wait_for_file(ns: &TestNs, name: &str) {
    let t = Instant::now();
    while !ns.dir.join(name).exists() {
        assert!(t.elapsed() < Duration::from_secs(30), "peer never bound");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn echo_across_processes() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = spawn("peer", "echo", &ns, &[]);
    let (mut s, peer) = l.accept().unwrap();
    assert_eq!(peer.pid, child.id());
    for (i, size) in [1usize, 64, 1024, 65536, 1 << 20].into_iter().enumerate() {
        let data = pattern(i as u64 + 10, size);
        let s2 = s.try_clone().unwrap();
        let d2 = data.clone();
        let w = std::thread::spawn(move || (&s2).write_all(&d2).unwrap());
        let mut back = vec![0u8; size];
        s.read_exact(&mut back).unwrap();
        w.join().unwrap();
        assert_eq!(checksum(&back), checksum(&data));
    }
    drop(s);
    assert!(child.wait().unwrap().success());
}

#[test]
fn chunk_changes_both_directions() {
    let ns = TestNs::new();
    let total = 600_000;
    let l = ShmListener::bind_with(
        &ns.ns.addr(PORT),
        Config {
            buffer_size: 8192,
            ..Config::default()
        },
    )
    .unwrap();
    // A second listener the child connects to, to split its own buffer.
    let l2 = ShmListener::bind(&ns.ns.addr(PORT + 1)).unwrap();
    let side = std::thread::spawn(move || {
        let mut v = Vec::new();
        l2.set_accept_timeout(Some(Duration::from_secs(5))).unwrap();
        while let Ok((s, _)) = l2.accept() {
            v.push(s);
            v.retain(|s| {
                s.set_nonblocking(true).unwrap();
                let mut b = [0u8; 1];
                !matches!((&*s).read(&mut b), Ok(0))
            });
        }
    });
    let mut child = spawn("peer", "both-ways", &ns, &[("TOTAL", total.to_string())]);
    let (s, _) = l.accept().unwrap();
    let data = pattern(1, total);
    let s2 = s.try_clone().unwrap();
    let ll = std::sync::Arc::new(l);
    let l3 = ll.clone();
    let w = std::thread::spawn(move || {
        // Split and merge the server's buffer mid-stream: other local clients.
        let mut extra = Vec::new();
        let mut chunks_seen = std::collections::BTreeSet::new();
        let addr = l3.local_addr().unwrap();
        for (i, c) in data.chunks(20_000).enumerate() {
            (&s2).write_all(c).unwrap();
            chunks_seen.insert(s2.send_chunk());
            if i % 4 == 1 && extra.len() < 6 {
                let a = addr.clone();
                let t = std::thread::spawn(move || ShmStream::connect(&a).unwrap());
                let (acc, _) = l3.accept().unwrap();
                extra.push((acc, t.join().unwrap()));
            } else if i % 4 == 3 {
                extra.clear();
            }
        }
        s2.shutdown(std::net::Shutdown::Write).unwrap();
        chunks_seen
    });
    let mut got = vec![0u8; total];
    (&s).read_exact(&mut got).unwrap();
    let seen = w.join().unwrap();
    assert_eq!(checksum(&got), checksum(&pattern(2, total)));
    let mut rest = Vec::new();
    (&s).read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    assert!(seen.len() > 1, "server chunk never changed: {seen:?}");
    assert!(child.wait().unwrap().success());
    drop(s);
    side.join().unwrap();
}

fn kill_and_time(child: &mut std::process::Child) -> Instant {
    let t = Instant::now();
    kill9(child);
    t
}

#[test]
fn sigkill_writer_mid_transfer() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = spawn("peer", "stream-forever", &ns, &[]);
    let (mut s, _) = l.accept().unwrap();
    let mut buf = vec![0u8; 8192];
    let mut n = 0;
    while n < 1 << 20 {
        n += s.read(&mut buf).unwrap();
    }
    let t = kill_and_time(&mut child);
    let err = loop {
        match s.read(&mut buf) {
            Ok(0) => panic!("EOF instead of reset after SIGKILL"),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    eprintln!("reader saw the death after {:?}", t.elapsed());
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    drop(s);
    // Its space merged back: the next connection gets the whole buffer.
    let a = ns.ns.addr(PORT);
    let th = std::thread::spawn(move || ShmStream::connect(&a).unwrap());
    let (s2, _) = l.accept().unwrap();
    let _c = th.join().unwrap();
    assert_eq!(s2.send_chunk(), 256 << 10);
}

#[test]
fn sigkill_reader_mid_transfer() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = spawn("peer", "read-forever", &ns, &[]);
    let (mut s, _) = l.accept().unwrap();
    let buf = vec![1u8; 8192];
    for _ in 0..100 {
        s.write_all(&buf).unwrap();
    }
    let t = kill_and_time(&mut child);
    let err = loop {
        if let Err(e) = s.write_all(&buf) {
            break e;
        }
    };
    eprintln!("writer saw the death after {:?}", t.elapsed());
    assert_eq!(err.kind(), ErrorKind::BrokenPipe);
}

#[test]
fn sigkill_server_mid_transfer() {
    let ns = TestNs::new();
    let mut child = spawn("peer", "serve-stream", &ns, &[]);
    wait_for_file(&ns, &format!("p{PORT}"));
    let mut s = loop {
        match ShmStream::connect(&ns.ns.addr(PORT)) {
            Ok(s) => break s,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => panic!("{e}"),
        }
    };
    let mut buf = vec![0u8; 8192];
    for _ in 0..50 {
        s.read_exact(&mut buf).unwrap();
    }
    kill9(&mut child);
    let err = loop {
        match s.read(&mut buf) {
            Ok(0) => panic!("EOF instead of reset"),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    assert_eq!(s.write(&buf).unwrap_err().kind(), ErrorKind::BrokenPipe);
}

#[test]
fn sigkill_during_accept_and_connect() {
    // The listener dies inside accept: connectors are refused, and its stale
    // file is replaced by the next bind.
    let ns = TestNs::new();
    let mut child = spawn("peer", "accept-only", &ns, &[]);
    wait_for_file(&ns, &format!("p{PORT}"));
    std::thread::sleep(Duration::from_millis(50));
    kill9(&mut child);
    let e = ShmStream::connect_timeout(&ns.ns.addr(PORT), Duration::from_secs(5)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();

    // A connector killed again and again mid-connect: the listener carries on.
    let mut child = spawn("peer", "connect-loop", &ns, &[]);
    let mut accepted = 0;
    l.set_accept_timeout(Some(Duration::from_secs(5))).unwrap();
    let t = Instant::now();
    while accepted < 20 && t.elapsed() < Duration::from_secs(20) {
        match l.accept() {
            Ok(_) => accepted += 1,
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::InvalidData | ErrorKind::WouldBlock),
                "{e}"
            ),
        }
    }
    kill9(&mut child);
    // Drain whatever the dead connector left behind, then connect ourselves.
    l.set_nonblocking(true).unwrap();
    while l.accept().is_ok() {}
    l.set_nonblocking(false).unwrap();
    let a = ns.ns.addr(PORT);
    let th = std::thread::spawn(move || ShmStream::connect(&a));
    let mut ok = false;
    l.set_accept_timeout(Some(Duration::from_secs(5))).unwrap();
    for _ in 0..10 {
        if l.accept().is_ok() {
            ok = true;
            break;
        }
    }
    assert!(ok && th.join().unwrap().is_ok());
    assert!(accepted >= 1);
}

#[test]
fn stale_port_file_and_live_owner() {
    let ns = TestNs::new();
    let mut child = spawn("peer", "bind-and-sleep", &ns, &[]);
    wait_for_file(&ns, &format!("p{PORT}"));
    std::thread::sleep(Duration::from_millis(50));
    // Held by a live process.
    assert_eq!(
        ShmListener::bind(&ns.ns.addr(PORT)).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
    kill9(&mut child);
    // Its file is stale now.
    assert!(ns.dir.join(format!("p{PORT}")).exists());
    let _l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
}
