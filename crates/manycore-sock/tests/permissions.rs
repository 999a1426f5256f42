//! Shared-memory files: O_EXCL, mode 0600 in a 0700 directory; names taken by
//! a stranger or a live process are refused; unsafe directories are refused.
mod common;
use common::*;
use manycore_sock::{Listener, Stream};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

#[test]
fn files_are_private() {
    let ns = TestNs::new();
    let l = Listener::bind(&ns.ns.addr(1)).unwrap();
    let a = ns.ns.addr(1);
    let t = std::thread::spawn(move || Stream::connect(&a).unwrap());
    let (_s, _) = l.accept().unwrap();
    let _c = t.join().unwrap();
    let dmode = std::fs::metadata(&ns.dir).unwrap().mode() & 0o777;
    assert_eq!(dmode, 0o700);
    let mut n = 0;
    for e in std::fs::read_dir(&ns.dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        assert_eq!(m.mode() & 0o777, 0o600, "{:?}", e.file_name());
        assert_eq!(m.uid(), unsafe_free_uid());
        n += 1;
    }
    assert_eq!(n, 2, "one listener file and one client endpoint file");
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
    let _l = Listener::bind(&ns.ns.addr(2)).unwrap();
    drop(_l);
    // Something else, not ours to replace, sits on the name.
    std::fs::write(ns.dir.join("p2"), b"not a region").unwrap();
    assert_eq!(
        Listener::bind(&ns.ns.addr(2)).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
    if unsafe_free_uid() == 0 {
        // As root we can also make it belong to another user.
        std::os::unix::fs::chown(ns.dir.join("p2"), Some(12345), None).unwrap();
        assert_eq!(
            Listener::bind(&ns.ns.addr(2)).unwrap_err().kind(),
            ErrorKind::AddrInUse
        );
        let e = Stream::connect(&ns.ns.addr(2)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    }
}

#[test]
fn open_directory_is_refused() {
    let ns = TestNs::new();
    std::fs::create_dir(&ns.dir).unwrap();
    std::fs::set_permissions(&ns.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(
        Listener::bind(&ns.ns.addr(1)).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
}
