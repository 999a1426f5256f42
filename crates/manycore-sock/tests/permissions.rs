//! Namespace files: the only file is a listener's rendezvous socket `p<port>`
//! (mode 0600, in a 0700 directory; region memory is sealed memfds and has
//! no name). A name taken by a stranger, a live listener or a non-socket is
//! refused; a dead listener's socket is replaced; unsafe directories are
//! refused.
mod common;
use common::*;
use manycore_sock::{ShmListener, ShmStream};
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

#[test]
fn files_are_private() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(1)).unwrap();
    let a = ns.ns.addr(1);
    let t = std::thread::spawn(move || ShmStream::connect(&a).unwrap());
    let (_s, _) = l.accept().unwrap();
    let _c = t.join().unwrap();
    let dmode = std::fs::metadata(&ns.dir).unwrap().mode() & 0o777;
    assert_eq!(dmode, 0o700);
    let names: Vec<_> = std::fs::read_dir(&ns.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["p1"], "only the rendezvous socket has a name");
    let m = std::fs::symlink_metadata(ns.dir.join("p1")).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(m.mode() & 0o777, 0o600);
    assert_eq!(m.uid(), unsafe_free_uid());
    drop(l);
    assert!(
        !ns.dir.join("p1").exists(),
        "the port file goes with the listener"
    );
}

fn unsafe_free_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

#[test]
fn name_taken_by_a_stranger_is_refused() {
    let ns = TestNs::new();
    let _l = ShmListener::bind(&ns.ns.addr(2)).unwrap();
    drop(_l);
    // Something else, not ours to replace, sits on the name.
    std::fs::write(ns.dir.join("p2"), b"not a region").unwrap();
    assert_eq!(
        ShmListener::bind(&ns.ns.addr(2)).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
    if unsafe_free_uid() == 0 {
        // As root we can also make it belong to another user.
        std::os::unix::fs::chown(ns.dir.join("p2"), Some(12345), None).unwrap();
        assert_eq!(
            ShmListener::bind(&ns.ns.addr(2)).unwrap_err().kind(),
            ErrorKind::AddrInUse
        );
        let e = ShmStream::connect(&ns.ns.addr(2)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    }
}

#[test]
fn open_directory_is_refused() {
    let ns = TestNs::new();
    std::fs::create_dir(&ns.dir).unwrap();
    std::fs::set_permissions(&ns.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(
        ShmListener::bind(&ns.ns.addr(1)).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
}

#[test]
fn live_names_are_exclusive_and_dead_ones_replaced() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(4)).unwrap();
    assert_eq!(
        ShmListener::bind(&ns.ns.addr(4)).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
    drop(l);
    // A socket file nobody listens on any more (std does not unlink it).
    drop(std::os::unix::net::UnixListener::bind(ns.dir.join("p5")).unwrap());
    assert_eq!(
        ShmStream::connect(&ns.ns.addr(5)).unwrap_err().kind(),
        ErrorKind::ConnectionRefused
    );
    let l5 = ShmListener::bind(&ns.ns.addr(5)).unwrap();
    let m = std::fs::symlink_metadata(ns.dir.join("p5")).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600, "the replacement is ours, 0600");
    let a = ns.ns.addr(5);
    let t = std::thread::spawn(move || ShmStream::connect(&a).map(drop));
    l5.accept().unwrap();
    t.join().unwrap().unwrap();
    // A symlink is never followed nor replaced.
    std::os::unix::fs::symlink("/dev/null", ns.dir.join("p6")).unwrap();
    assert_eq!(
        ShmListener::bind(&ns.ns.addr(6)).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
    assert_eq!(
        ShmStream::connect(&ns.ns.addr(6)).unwrap_err().kind(),
        ErrorKind::ConnectionRefused
    );
    let left: Vec<_> = std::fs::read_dir(&ns.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporary names left: {left:?}");
}
