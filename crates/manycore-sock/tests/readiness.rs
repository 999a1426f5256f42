//! The readiness descriptors (`AsFd`) with plain poll(2), as an event loop
//! other than tokio would use them: readable when a direction that
//! returned `WouldBlock` can make progress, silent otherwise, and no
//! doorbell for a stream nobody polls.
use manycore_sock::{Namespace, ShmListener, ShmStream};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd};

/// Bound on every wait for readiness (none is expected to come near it).
const BOUND_MS: i32 = 30_000;

fn readable(fd: &impl AsFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    r > 0
}

#[test]
fn stream_readable_for_data_and_writable_again() {
    let (a, b) = ShmStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    // Registered first (an event loop takes the descriptor before it
    // calls): only then does a WouldBlock arm.
    let _fd = a.as_fd();
    let mut buf = [0u8; 64 << 10];
    // Nothing to read (the first read takes the listener's reply, which
    // made the connector's descriptor readable): WouldBlock arms the read
    // direction; nothing rang.
    assert_eq!(
        (&a).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert!(!readable(&a, 0));
    (&b).write_all(b"hello").unwrap();
    assert!(readable(&a, BOUND_MS), "no doorbell for data");
    assert_eq!((&a).read(&mut buf).unwrap(), 5);
    // Drained: the next WouldBlock leaves the descriptor silent again.
    assert_eq!(
        (&a).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert!(!readable(&a, 0));
    // Fill a's ring until a write would block: that arms the write side.
    let chunk = vec![7u8; 16 << 10];
    let mut sent = 0usize;
    loop {
        match (&a).write(&chunk) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(!readable(&a, 0));
    // The peer drains everything: a is rung for space.
    let mut got = 0usize;
    while got < sent {
        got += (&b).read(&mut buf).unwrap();
    }
    assert!(readable(&a, BOUND_MS), "no doorbell for space");
    assert!((&a).write(&chunk).unwrap() > 0);
}

#[test]
fn stream_readable_on_eof() {
    let (a, b) = ShmStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    let _fd = a.as_fd();
    let mut buf = [0u8; 8];
    assert_eq!(
        (&a).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert!(!readable(&a, 0));
    drop(b);
    assert!(readable(&a, BOUND_MS), "no wake-up for the close");
    assert_eq!((&a).read(&mut buf).unwrap(), 0);
}

#[test]
fn no_doorbell_for_a_stream_nobody_polls() {
    let (a, b) = ShmStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 8];
    // Not polled (the descriptor was never taken): WouldBlock arms nothing,
    // so the peer's write rings nothing.
    assert_eq!(
        (&a).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    (&b).write_all(b"x").unwrap();
    assert!(!readable(&a, 0), "a doorbell for a stream nobody polls");
    assert_eq!((&a).read(&mut buf).unwrap(), 1);
}

#[test]
fn connector_readable_when_accepted() {
    let l = ShmListener::bind(&Namespace::private().addr(0)).unwrap();
    let c = ShmStream::connect(&l.local_addr().unwrap()).unwrap();
    c.set_nonblocking(true).unwrap();
    let _fd = c.as_fd();
    let mut buf = [0u8; 8];
    assert_eq!(
        (&c).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert!(!readable(&c, 0));
    let (s, _) = l.accept().unwrap();
    // The reply makes the connector's descriptor readable.
    assert!(readable(&c, BOUND_MS));
    assert_eq!(
        (&c).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    (&s).write_all(b"hi").unwrap();
    assert!(readable(&c, BOUND_MS));
    assert_eq!((&c).read(&mut buf).unwrap(), 2);
}

#[test]
fn listener_readable_when_a_connection_waits() {
    let l = ShmListener::bind(&Namespace::private().addr(0)).unwrap();
    l.set_nonblocking(true).unwrap();
    assert!(!readable(&l, 0));
    let _c = ShmStream::connect(&l.local_addr().unwrap()).unwrap();
    assert!(readable(&l, BOUND_MS));
    l.accept().unwrap();
    assert!(!readable(&l, 0));
    assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
}
