//! A connector SIGKILLed between connecting and sending its request (held
//! there by the `MANYCORE_SOCK_TEST_HOOK=pause=<file>` hook) costs the
//! listener no backlog room: afterwards `backlog` new connectors can all
//! wait at once (`posted=<dir>` tells us when each has sent its request),
//! and every one of them is accepted. The test binary re-executes itself as
//! the connectors.
//!
//! The hooks exist only with the `internals` feature, which the crate's
//! dev-dependency on itself turns on for every `cargo test -p manycore-sock`.
mod common;
use common::*;
use manycore_sock::{Config, ShmListener, ShmStream};
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::time::{Duration, Instant};

const PORT: u32 = 21;
const BACKLOG: u32 = 3;
const HOOK: &str = "MANYCORE_SOCK_TEST_HOOK";

/// The connector: exits 0 once accepted (connect returns when the backlog
/// holds the connection; the listener drops what it accepts, so we read
/// EOF), 2 if refused, 1 on other errors.
#[test]
fn peer() {
    let Some((role, ns)) = child_role() else {
        return;
    };
    assert_eq!(role, "connect");
    let accepted = |s: ShmStream| {
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        (&s).read(&mut [0u8; 1])
    };
    let code = match ShmStream::connect(&ns.addr(PORT)).and_then(accepted) {
        Ok(0) => 0,
        Ok(_) => 1,
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => 2,
        Err(e) => {
            eprintln!("connector: {e}");
            1
        }
    };
    std::process::exit(code);
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn listener(ns: &TestNs) -> ShmListener {
    ShmListener::bind_with(
        &ns.ns.addr(PORT),
        Config {
            backlog: BACKLOG,
            ..Config::default()
        },
    )
    .unwrap()
}

/// Starts a connector and SIGKILLs it in the window between connecting
/// (its queue slot is taken) and sending its request.
fn kill_in_window(ns: &TestNs, before_kill: impl FnOnce()) {
    let marker = ns.dir.join("paused");
    let mut c = Guard(spawn(
        "peer",
        "connect",
        ns,
        &[(HOOK, format!("pause={}", marker.display()))],
    ));
    wait_until("connector paused", || marker.exists());
    before_kill();
    kill9(&mut c.0);
}

/// `BACKLOG` connectors that all send their requests before we accept any;
/// then each is accepted. None may be refused.
fn full_backlog_accepted(ns: &TestNs, l: &ShmListener) {
    let posted = ns.dir.join("posted");
    std::fs::create_dir(&posted).unwrap();
    let hook = format!("posted={}", posted.display());
    let mut kids: Vec<Guard> = (0..BACKLOG)
        .map(|_| Guard(spawn("peer", "connect", ns, &[(HOOK, hook.clone())])))
        .collect();
    let count = |p: &Path| std::fs::read_dir(p).unwrap().count() as u32;
    wait_until("all connectors posted", || {
        for k in kids.iter_mut() {
            if let Some(st) = k.0.try_wait().unwrap() {
                panic!("a connector gave up before any accept ({st}; 2: refused, the backlog lost room)");
            }
        }
        count(&posted) == BACKLOG
    });
    l.set_nonblocking(false).unwrap();
    l.set_accept_timeout(Some(Duration::from_secs(30))).unwrap();
    for _ in 0..BACKLOG {
        l.accept().unwrap();
    }
    for k in kids.iter_mut() {
        let st = k.0.wait().unwrap();
        assert_eq!(st.code(), Some(0), "a connector failed (2: refused)");
    }
    l.set_nonblocking(true).unwrap();
    assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
}

#[test]
fn connector_killed_in_the_queue() {
    let ns = TestNs::new();
    let l = listener(&ns);
    kill_in_window(&ns, || {});
    // The dead connection still sits in the kernel's queue: the next accept
    // takes it, reads EOF, and skips it.
    l.set_nonblocking(true).unwrap();
    assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    full_backlog_accepted(&ns, &l);
}

#[test]
fn connector_killed_while_pending() {
    let ns = TestNs::new();
    let l = listener(&ns);
    l.set_nonblocking(true).unwrap();
    // Accept takes the live connection into its pending set (no request
    // yet) and does not wait for it; then the connector dies there.
    kill_in_window(&ns, || {
        assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    });
    full_backlog_accepted(&ns, &l);
}
