//! std's own tests of Unix stream sockets (`library/std/src/os/unix/net/
//! tests.rs` in the Rust repository, MIT OR Apache-2.0), ported to
//! `ShmListener`/`ShmStream` under their original names. A path becomes a
//! port in a directory namespace (`tmpdir` becomes a fresh directory), an
//! abstract address a private namespace; the assertions are std's.
//!
//! Not ported, because they test what a shared-memory stream does not have:
//!
//! * `sock_addr_from_pathname`, `sock_addr_without_trailing_nul`,
//!   `sock_addr_pathname_fills_sun_path`: parsing of `sockaddr_un` into
//!   std's `SocketAddr` (our addresses are a namespace and a port);
//! * `test_unix_datagram`, `test_unnamed_unix_datagram`,
//!   `test_unix_datagram_connect_to_recv_addr`, `test_connect_unix_datagram`,
//!   `test_unix_datagram_recv`, `datagram_pair`,
//!   `test_unix_datagram_timeout_zero_duration`, `test_unix_datagram_peek`,
//!   `test_unix_datagram_peek_from`, `test_unix_datagram_max_path`:
//!   datagram sockets;
//! * `abstract_socket_addr_debug`, `test_abstract_name_too_long`,
//!   `test_abstract_no_pathname_and_not_unnamed`: the formatting and
//!   limits of abstract socket names (a private namespace names nothing);
//! * `test_abstract_datagram_bind_send_to_addr`,
//!   `test_abstract_datagram_connect_addr`: datagrams again;
//! * `test_send_vectored_fds_unix_stream`,
//!   `test_send_vectored_with_ancillary_to_unix_datagram`,
//!   `test_send_vectored_with_ancillary_unix_datagram`: ancillary data
//!   (descriptor and credential passing).
//!
//! The read-timeout tests wait 100 ms instead of std's 1000 ms; like std's,
//! they assert only the error kind.
use manycore_sock::{Namespace, ShmListener, ShmStream, SockAddr};
use std::io::{self, ErrorKind, IoSlice, IoSliceMut, Read, Write};
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

macro_rules! or_panic {
    ($e:expr) => {
        match $e {
            Ok(e) => e,
            Err(e) => panic!("{e}"),
        }
    };
}

/// std's `tmpdir()`: a fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
    /// The directory as a namespace, and the address std's tests call
    /// `dir.path().join("sock")`.
    fn sock(&self) -> SockAddr {
        Namespace::dir(&self.0).addr(1)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmpdir() -> TempDir {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let p = PathBuf::from(format!(
        "/dev/shm/manycore-sock-std-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&p);
    TempDir(p)
}

#[test]
fn basic() {
    let dir = tmpdir();
    let socket_path = dir.sock();
    let msg1 = b"hello";
    let msg2 = b"world!";

    let listener = or_panic!(ShmListener::bind(&socket_path));
    assert_eq!(socket_path, listener.local_addr().unwrap());
    let thread = thread::spawn(move || {
        let mut stream = or_panic!(listener.accept()).0;
        let mut buf = [0; 5];
        or_panic!(stream.read(&mut buf));
        assert_eq!(&msg1[..], &buf[..]);
        or_panic!(stream.write_all(msg2));
    });

    let mut stream = or_panic!(ShmStream::connect(&socket_path));
    assert_eq!(
        Some(socket_path),
        stream.peer_addr().unwrap().as_sock_addr()
    );
    or_panic!(stream.write_all(msg1));
    let mut buf = vec![];
    or_panic!(stream.read_to_end(&mut buf));
    assert_eq!(&msg2[..], &buf[..]);
    drop(stream);

    thread.join().unwrap();
}

#[test]
fn vectored() {
    let (mut s1, mut s2) = or_panic!(ShmStream::pair());

    let len = or_panic!(s1.write_vectored(&[
        IoSlice::new(b"hello"),
        IoSlice::new(b" "),
        IoSlice::new(b"world!")
    ],));
    assert_eq!(len, 12);

    let mut buf1 = [0; 6];
    let mut buf2 = [0; 7];
    let len =
        or_panic!(s2.read_vectored(&mut [IoSliceMut::new(&mut buf1), IoSliceMut::new(&mut buf2)],));
    assert_eq!(len, 12);
    assert_eq!(&buf1, b"hello ");
    assert_eq!(&buf2, b"world!\0");
}

#[test]
fn pair() {
    let msg1 = b"hello";
    let msg2 = b"world!";

    let (mut s1, mut s2) = or_panic!(ShmStream::pair());
    assert!(s1.local_addr().unwrap().is_unnamed());
    assert!(s2.peer_addr().unwrap().is_unnamed());
    let thread = thread::spawn(move || {
        // s1 must be moved in or the test will hang!
        let mut buf = [0; 5];
        or_panic!(s1.read(&mut buf));
        assert_eq!(&msg1[..], &buf[..]);
        or_panic!(s1.write_all(msg2));
    });

    or_panic!(s2.write_all(msg1));
    let mut buf = vec![];
    or_panic!(s2.read_to_end(&mut buf));
    assert_eq!(&msg2[..], &buf[..]);
    drop(s2);

    thread.join().unwrap();
}

#[test]
fn try_clone() {
    let dir = tmpdir();
    let socket_path = dir.sock();
    let msg1 = b"hello";
    let msg2 = b"world";

    let listener = or_panic!(ShmListener::bind(&socket_path));
    let thread = thread::spawn(move || {
        let mut stream = or_panic!(listener.accept()).0;
        or_panic!(stream.write_all(msg1));
        or_panic!(stream.write_all(msg2));
    });

    let mut stream = or_panic!(ShmStream::connect(&socket_path));
    let mut stream2 = or_panic!(stream.try_clone());

    let mut buf = [0; 5];
    or_panic!(stream.read(&mut buf));
    assert_eq!(&msg1[..], &buf[..]);
    or_panic!(stream2.read(&mut buf));
    assert_eq!(&msg2[..], &buf[..]);

    thread.join().unwrap();
}

#[test]
fn iter() {
    let dir = tmpdir();
    let socket_path = dir.sock();

    let listener = or_panic!(ShmListener::bind(&socket_path));
    let thread = thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let mut stream = or_panic!(stream);
            let mut buf = [0];
            or_panic!(stream.read(&mut buf));
        }
    });

    for _ in 0..2 {
        let mut stream = or_panic!(ShmStream::connect(&socket_path));
        or_panic!(stream.write_all(&[0]));
    }

    thread.join().unwrap();
}

#[test]
fn long_path() {
    // sun_path holds 108 bytes with the terminating NUL: a directory name
    // that leaves no room for "/p1" makes the socket name too long.
    let dir = tmpdir();
    let long = dir.path().join("a".repeat(108));
    let socket_path = Namespace::dir(&long).addr(1);

    match ShmStream::connect(&socket_path) {
        Err(ref e) if e.kind() == io::ErrorKind::InvalidInput => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("unexpected success"),
    }

    match ShmListener::bind(&socket_path) {
        Err(ref e) if e.kind() == io::ErrorKind::InvalidInput => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("unexpected success"),
    }
}

#[test]
fn timeouts() {
    let dir = tmpdir();
    let socket_path = dir.sock();

    let _listener = or_panic!(ShmListener::bind(&socket_path));

    let stream = or_panic!(ShmStream::connect(&socket_path));
    let dur = Duration::new(15410, 0);

    assert_eq!(None, or_panic!(stream.read_timeout()));

    or_panic!(stream.set_read_timeout(Some(dur)));
    assert_eq!(Some(dur), or_panic!(stream.read_timeout()));

    assert_eq!(None, or_panic!(stream.write_timeout()));

    or_panic!(stream.set_write_timeout(Some(dur)));
    assert_eq!(Some(dur), or_panic!(stream.write_timeout()));

    or_panic!(stream.set_read_timeout(None));
    assert_eq!(None, or_panic!(stream.read_timeout()));

    or_panic!(stream.set_write_timeout(None));
    assert_eq!(None, or_panic!(stream.write_timeout()));
}

#[test]
fn test_read_timeout() {
    let dir = tmpdir();
    let socket_path = dir.sock();

    let _listener = or_panic!(ShmListener::bind(&socket_path));

    let mut stream = or_panic!(ShmStream::connect(&socket_path));
    or_panic!(stream.set_read_timeout(Some(Duration::from_millis(100))));

    let mut buf = [0; 10];
    let kind = stream
        .read_exact(&mut buf)
        .expect_err("expected error")
        .kind();
    assert!(
        kind == ErrorKind::WouldBlock || kind == ErrorKind::TimedOut,
        "unexpected_error: {:?}",
        kind
    );
}

#[test]
fn test_read_with_timeout() {
    let dir = tmpdir();
    let socket_path = dir.sock();

    let listener = or_panic!(ShmListener::bind(&socket_path));

    let mut stream = or_panic!(ShmStream::connect(&socket_path));
    or_panic!(stream.set_read_timeout(Some(Duration::from_millis(100))));

    let mut other_end = or_panic!(listener.accept()).0;
    or_panic!(other_end.write_all(b"hello world"));

    let mut buf = [0; 11];
    or_panic!(stream.read(&mut buf));
    assert_eq!(b"hello world", &buf[..]);

    let kind = stream
        .read_exact(&mut buf)
        .expect_err("expected error")
        .kind();
    assert!(
        kind == ErrorKind::WouldBlock || kind == ErrorKind::TimedOut,
        "unexpected_error: {:?}",
        kind
    );
}

// Ensure the `set_read_timeout` and `set_write_timeout` calls return errors
// when passed zero Durations
#[test]
fn test_unix_stream_timeout_zero_duration() {
    let dir = tmpdir();
    let socket_path = dir.sock();

    let listener = or_panic!(ShmListener::bind(&socket_path));
    let stream = or_panic!(ShmStream::connect(&socket_path));

    let result = stream.set_write_timeout(Some(Duration::new(0, 0)));
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);

    let result = stream.set_read_timeout(Some(Duration::new(0, 0)));
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);

    drop(listener);
}

#[test]
fn abstract_namespace_not_allowed_connect() {
    // std refuses a path with a leading NUL (an abstract name in disguise);
    // a directory namespace refuses a path with a NUL the same way.
    assert!(ShmStream::connect(&Namespace::dir("\0asdf").addr(1)).is_err());
}

#[test]
fn test_abstract_stream_connect() {
    let msg1 = b"hello";
    let msg2 = b"world";

    let socket_addr = Namespace::private().addr(1);
    let listener = or_panic!(ShmListener::bind(&socket_addr));

    let thread = thread::spawn(move || {
        let mut stream = or_panic!(listener.accept()).0;
        let mut buf = [0; 5];
        or_panic!(stream.read(&mut buf));
        assert_eq!(&msg1[..], &buf[..]);
        or_panic!(stream.write_all(msg2));
    });

    let mut stream = or_panic!(ShmStream::connect(&socket_addr));

    let peer = or_panic!(stream.peer_addr());
    assert_eq!(peer.as_sock_addr().unwrap(), socket_addr);

    or_panic!(stream.write_all(msg1));
    let mut buf = vec![];
    or_panic!(stream.read_to_end(&mut buf));
    assert_eq!(&msg2[..], &buf[..]);
    drop(stream);

    thread.join().unwrap();
}

#[test]
fn test_abstract_stream_iter() {
    let addr = Namespace::private().addr(1);
    let listener = or_panic!(ShmListener::bind(&addr));

    let thread = thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let mut stream = or_panic!(stream);
            let mut buf = [0];
            or_panic!(stream.read(&mut buf));
        }
    });

    for _ in 0..2 {
        let mut stream = or_panic!(ShmStream::connect(&addr));
        or_panic!(stream.write_all(&[0]));
    }

    thread.join().unwrap();
}

#[test]
fn test_unix_stream_peek() {
    let (txdone, rxdone) = std::sync::mpsc::channel();

    let dir = tmpdir();
    let path = dir.sock();

    let listener = or_panic!(ShmListener::bind(&path));
    let thread = thread::spawn(move || {
        let mut stream = or_panic!(listener.accept()).0;
        or_panic!(stream.write_all(&[1, 3, 3, 7]));
        or_panic!(rxdone.recv());
    });

    let mut stream = or_panic!(ShmStream::connect(&path));
    let mut buf = [0; 10];
    for _ in 0..2 {
        assert_eq!(or_panic!(stream.peek(&mut buf)), 4);
    }
    assert_eq!(or_panic!(stream.read(&mut buf)), 4);

    or_panic!(stream.set_nonblocking(true));
    match stream.peek(&mut buf) {
        Ok(_) => panic!("expected error"),
        Err(ref e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => panic!("unexpected error: {e}"),
    }

    or_panic!(txdone.send(()));
    thread.join().unwrap();
}
