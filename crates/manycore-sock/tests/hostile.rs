//! A hostile peer process writes random bytes over every shared-memory file
//! of the namespace (its own region and the listener's) in a loop, while also
//! connecting; the survivor keeps accepting, reading and writing. Only
//! `InvalidData` may come out (plus our own `TimedOut`/`WouldBlock`), never a
//! panic, a hang or an out-of-bounds access.
//!
//! Runs for `MANYCORE_SOCK_HOSTILE_SECS` seconds (default 2; the issue's
//! acceptance run uses 10).
mod common;
use common::*;
use manycore_sock::{Listener, Stream};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

const PORT: u32 = 11;

fn secs() -> f64 {
    std::env::var("MANYCORE_SOCK_HOSTILE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0)
}

#[test]
fn peer() {
    let Some((role, ns)) = child_role() else {
        return;
    };
    assert!(role.starts_with("scribbler"));
    // "scribbler-data" hits only the data areas (the last 256 KiB of each
    // file: fragment headers and payloads), "scribbler" everything.
    let data_only = role == "scribbler-data";
    let dir = std::env::var(DIR).unwrap();
    let addr = ns.addr(PORT);
    let _first = Stream::connect(&addr).unwrap();
    let a2 = addr.clone();
    // Connections stay open: a normal close would (rightly) give the
    // survivor EOF or BrokenPipe.
    std::thread::spawn(move || {
        let mut keep = Vec::new();
        loop {
            if let Ok(mut s) = Stream::connect_timeout(&a2, Duration::from_millis(50)) {
                let _ = s.write(&[1u8; 300]);
                keep.push(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let mut x: u64 = 0x9e3779b97f4a7c15 ^ std::process::id() as u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let end = Instant::now() + Duration::from_secs_f64(secs() + 0.5);
    let mut buf = vec![0u8; 4096];
    while Instant::now() < end {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            break;
        };
        for e in rd.flatten() {
            let Ok(f) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(e.path())
            else {
                continue;
            };
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len == 0 {
                continue;
            }
            for _ in 0..4 {
                let n = 1 + (rnd() % 256) as usize;
                for b in buf[..n].iter_mut() {
                    *b = rnd() as u8;
                }
                // Bias towards the control area (headers, slots, backlog).
                let off = if rnd() % 2 == 0 {
                    rnd() % len.min(8192)
                } else {
                    rnd() % len
                };
                let n = n.min((len - off) as usize);
                let _ = f.write_at(&buf[..n], off);
            }
            std::thread::sleep(Duration::from_micros(500));
            if !data_only && rnd() % 512 == 0 {
                // Now and then, the whole file.
                let mut off = 0;
                while off < len {
                    for b in buf.iter_mut() {
                        *b = rnd() as u8;
                    }
                    let n = (len - off).min(buf.len() as u64) as usize;
                    let _ = f.write_at(&buf[..n], off);
                    off += n as u64;
                }
            }
        }
    }
    std::process::exit(0);
}

fn allowed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::InvalidData | ErrorKind::TimedOut | ErrorKind::WouldBlock
    )
}

#[test]
fn random_bytes_over_shared_memory() {
    survive("scribbler");
}

#[test]
fn random_bytes_over_ring_data() {
    survive("scribbler-data");
}

fn survive(role: &str) {
    let ns = TestNs::new();
    let l = Listener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = spawn("peer", role, &ns, &[]);
    l.set_accept_timeout(Some(Duration::from_secs(30))).unwrap();
    let (first, _) = l.accept().unwrap();
    let mut streams = vec![first];
    // Poisoned streams stay open: closing them would (rightly) give their
    // peers EOF or BrokenPipe.
    let mut poisoned = Vec::new();
    l.set_nonblocking(true).unwrap();
    let end = Instant::now() + Duration::from_secs_f64(secs());
    let (mut invalid, mut ok_ops) = (0u64, 0u64);
    let mut buf = vec![0u8; 2048];
    // Our own connector too, through our client region (also scribbled on).
    let a2 = ns.ns.addr(PORT);
    let connector = std::thread::spawn(move || {
        let (mut bad, mut good) = (0u64, 0u64);
        let mut keep = Vec::new();
        while Instant::now() < end {
            match Stream::connect_timeout(&a2, Duration::from_millis(20)) {
                Ok(s) => {
                    good += 1;
                    s.set_write_timeout(Some(Duration::from_millis(5))).unwrap();
                    match (&s).write(&[3u8; 100]) {
                        Ok(_) => {}
                        Err(e) if allowed(&e) => bad += 1,
                        Err(e) => panic!("own write: unexpected {e:?}"),
                    }
                    keep.push(s);
                }
                Err(e) if allowed(&e) => bad += 1,
                Err(e) => panic!("connect: unexpected {e:?}"),
            }
        }
        (bad, good, keep)
    });
    while Instant::now() < end {
        match l.accept() {
            Ok((s, _)) => streams.push(s),
            Err(e) if allowed(&e) => invalid += (e.kind() == ErrorKind::InvalidData) as u64,
            Err(e) => panic!("accept: unexpected {e:?}"),
        }
        let mut keep = Vec::new();
        for s in streams.drain(..) {
            s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
            s.set_write_timeout(Some(Duration::from_millis(5))).unwrap();
            let mut alive = true;
            match (&s).write(&buf[..700]) {
                Ok(_) => ok_ops += 1,
                Err(e) if allowed(&e) => alive &= e.kind() != ErrorKind::InvalidData,
                Err(e) => panic!("write: unexpected {e:?}"),
            }
            match (&s).read(&mut buf) {
                Ok(0) => alive = false, // only if a scribble wrote exactly the close flag
                Ok(_) => ok_ops += 1,
                Err(e) if allowed(&e) => alive &= e.kind() != ErrorKind::InvalidData,
                Err(e) => panic!("read: unexpected {e:?}"),
            }
            if alive {
                keep.push(s);
            } else {
                invalid += 1;
                poisoned.push(s);
            }
        }
        streams = keep;
        if streams.len() > 32 {
            poisoned.extend(streams.drain(32..));
        }
    }
    let (cbad, cgood, keep) = connector.join().unwrap();
    drop(keep);
    eprintln!(
        "hostile {role}: {invalid} InvalidData, {ok_ops} successful operations; connector {cgood} ok, {cbad} errors"
    );
    kill9(&mut child);
    drop(streams);
    drop(poisoned);
}
