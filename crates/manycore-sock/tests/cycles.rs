//! 10,000 connect/close cycles leak no file descriptors, mappings or files.
mod common;
use common::*;
use manycore_sock::{Namespace, ShmListener, ShmStream};
use std::io::{Read, Write};

/// The two tests count process-wide fds and mappings: never run them at once.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn count_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn count_maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

fn cycles(ns: &Namespace, n: usize) {
    let addr = ns.addr(3);
    let l = ShmListener::bind(&addr).unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..n {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 4];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
        }
    });
    for i in 0..n {
        let mut c = ShmStream::connect(&addr).unwrap();
        c.write_all(&(i as u32).to_le_bytes()).unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), i as u32);
    }
    server.join().unwrap();
}

#[test]
fn ten_thousand_cycles_leak_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = TestNs::new();
    // Warm up (lazy statics, thread stacks), then count.
    cycles(&ns.ns, 10);
    let (fds, maps) = (count_fds(), count_maps());
    cycles(&ns.ns, 10_000);
    let (fds2, maps2) = (count_fds(), count_maps());
    assert!(fds2 <= fds, "fds {fds} -> {fds2}");
    assert!(maps2 <= maps + 2, "mappings {maps} -> {maps2}");
    let left: Vec<_> = std::fs::read_dir(&ns.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

#[test]
fn private_namespace_cycles() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = Namespace::private();
    cycles(&ns, 10);
    let fds = count_fds();
    cycles(&ns, 2_000);
    assert!(count_fds() <= fds);
}
