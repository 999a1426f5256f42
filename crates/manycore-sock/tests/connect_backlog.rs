//! `connect` completes when the listener's backlog takes the connection,
//! as with a kernel socket: a single thread can connect and then accept,
//! data written before `accept` waits in the connection's buffer, and a
//! full backlog refuses.
use manycore_sock::{set_client_config, Config, Namespace, ShmListener, ShmStream};
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

/// Bounds every wait of these tests (none is expected to be reached).
const BOUND: Duration = Duration::from_secs(30);

#[test]
fn single_thread_connect_then_accept() {
    let addr = Namespace::private().addr(1);
    let l = ShmListener::bind(&addr).unwrap();
    l.set_accept_timeout(Some(BOUND)).unwrap();
    let mut c = ShmStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(BOUND)).unwrap();
    // Written before the listener accepts: it waits in our ring.
    c.write_all(b"early").unwrap();
    let (mut s, peer) = l.accept().unwrap();
    assert_eq!(peer.pid, std::process::id());
    s.set_read_timeout(Some(BOUND)).unwrap();
    let mut b = [0u8; 5];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"early");
    s.write_all(b"reply").unwrap();
    c.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"reply");
}

#[test]
fn full_backlog_refuses_and_accept_makes_room() {
    let addr = Namespace::private().addr(2);
    let cfg = Config {
        backlog: 4,
        ..Config::default()
    };
    let l = ShmListener::bind_with(&addr, cfg).unwrap();
    l.set_accept_timeout(Some(BOUND)).unwrap();
    let queued: Vec<ShmStream> = (0..4).map(|_| ShmStream::connect(&addr).unwrap()).collect();
    let e = ShmStream::connect(&addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    let _first = l.accept().unwrap();
    let _more = ShmStream::connect(&addr).unwrap();
    drop(queued);
}

#[test]
fn a_thousand_connections_queued_before_the_first_accept() {
    const N: usize = 1000;
    // All outgoing rings of this process share its client region: give it
    // room for N connections (it is created with the first one).
    set_client_config(Config {
        max_connections: 2 * N as u32,
        ..Config::default()
    });
    let addr = Namespace::private().addr(3);
    let cfg = Config {
        backlog: N as u32,
        max_connections: 2 * N as u32,
        ..Config::default()
    };
    let l = ShmListener::bind_with(&addr, cfg).unwrap();
    l.set_accept_timeout(Some(BOUND)).unwrap();
    // Each connects and writes before any accept: what it writes waits in
    // its ring (each new ring splits an earlier one's block, which shrinks
    // in place under its unread data).
    let mut conns = Vec::with_capacity(N);
    for i in 0..N {
        let mut c = ShmStream::connect(&addr).unwrap();
        c.set_write_timeout(Some(BOUND)).unwrap();
        c.write_all(&(i as u32).to_le_bytes()).unwrap();
        conns.push(c);
    }
    // Accepted in the order they connected, each with what it wrote.
    let mut accepted = Vec::with_capacity(N);
    for i in 0..N {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(BOUND)).unwrap();
        s.set_write_timeout(Some(BOUND)).unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), i as u32, "accepted out of order");
        s.write_all(&b).unwrap();
        accepted.push(s);
    }
    drop(accepted);
    for (i, mut c) in conns.into_iter().enumerate() {
        c.set_read_timeout(Some(BOUND)).unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), i as u32);
        assert_eq!(c.read(&mut b).unwrap(), 0, "EOF after the acceptor closed");
    }
    l.set_nonblocking(true).unwrap();
    assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
}

#[test]
fn closed_before_accept_still_delivers() {
    let addr = Namespace::private().addr(4);
    let l = ShmListener::bind(&addr).unwrap();
    l.set_accept_timeout(Some(BOUND)).unwrap();
    let mut c = ShmStream::connect(&addr).unwrap();
    c.write_all(b"bye").unwrap();
    drop(c);
    let (mut s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(BOUND)).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"bye");
    assert_eq!(s.write(b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
}

#[test]
fn listener_dropped_before_accept_resets() {
    let addr = Namespace::private().addr(6);
    let l = ShmListener::bind(&addr).unwrap();
    let c = ShmStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(BOUND)).unwrap();
    drop(l);
    let e = (&c).read(&mut [0u8; 1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionReset);
}
