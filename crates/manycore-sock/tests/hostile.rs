//! Hostile peer processes. The survivor (this process) keeps accepting,
//! connecting, reading and writing; only `InvalidData` may come out (plus
//! our own `WouldBlock` from expired timeouts and non-blocking calls, and
//! `ConnectionRefused` where a hostile peer closes a handshake or our own
//! connector fills the backlog), never a panic, a hang, an out-of-bounds
//! access or a signal (a SIGBUS would kill this test binary).
//!
//! * `scribbler`, `scribbler-data`: write random bytes over every region the
//!   peer holds a descriptor of (its own client region and the listener's,
//!   found through `/proc/self/fd`), the whole of them or the data areas;
//! * `shrinker`: streams while it tries to shrink, grow, punch holes into and
//!   add seals to every region it holds; every resize must fail;
//! * `forger`: speaks the handshake by hand with unsealed, half-sealed,
//!   too-small, missing, surplus and non-memfd descriptors, truncating what
//!   it can right after sending;
//! * `evil-listener`: a hand-made listener that replies with such regions.
//!
//! Runs for `MANYCORE_SOCK_HOSTILE_SECS` seconds (default 2; longer runs,
//! such as 10, try more interleavings).
mod common;
use common::*;
use manycore_sock::{ShmListener, ShmStream};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

const PORT: u32 = 11;

fn secs() -> f64 {
    std::env::var("MANYCORE_SOCK_HOSTILE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0)
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Every memfd this process holds, opened afresh read-write.
fn memfds() -> Vec<File> {
    let Ok(rd) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("/memfd:"))
        })
        .filter_map(|e| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(e.path())
                .ok()
        })
        .collect()
}

#[test]
fn peer() {
    let Some((role, ns)) = child_role() else {
        return;
    };
    let addr = ns.addr(PORT);
    match role.as_str() {
        "scribbler" | "scribbler-data" => scribble(&addr, role == "scribbler-data"),
        "shrinker" => shrink(&addr),
        "forger" => forge(&ns),
        "evil-listener" => evil_listener(&ns),
        other => panic!("unknown role {other}"),
    }
}

fn scribble(addr: &manycore_sock::SockAddr, data_only: bool) {
    let _first = ShmStream::connect(addr).unwrap();
    let a2 = addr.clone();
    // Connections stay open: a normal close would (rightly) give the
    // survivor EOF or BrokenPipe.
    std::thread::spawn(move || {
        let mut keep = Vec::new();
        loop {
            if let Ok(mut s) = ShmStream::connect_timeout(&a2, Duration::from_millis(50)) {
                let _ = s.write(&[1u8; 300]);
                keep.push(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let mut rnd = rng(0x9e3779b97f4a7c15 ^ std::process::id() as u64);
    let end = Instant::now() + Duration::from_secs_f64(secs() + 0.5);
    let mut buf = vec![0u8; 4096];
    while Instant::now() < end {
        for f in memfds() {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len == 0 {
                continue;
            }
            // "scribbler-data" hits only the data areas (the last 256 KiB
            // of each region: fragment headers and payloads).
            let lo = if data_only {
                len.saturating_sub(256 << 10)
            } else {
                0
            };
            for _ in 0..4 {
                let n = 1 + (rnd() % 256) as usize;
                for b in buf[..n].iter_mut() {
                    *b = rnd() as u8;
                }
                // Bias towards the control area (header, slots).
                let span = len - lo;
                let off = lo
                    + if rnd() % 2 == 0 {
                        rnd() % span.min(8192)
                    } else {
                        rnd() % span
                    };
                let n = n.min((len - off) as usize);
                let _ = f.write_at(&buf[..n], off);
            }
            std::thread::sleep(Duration::from_micros(500));
            if !data_only && rnd() % 512 == 0 {
                // Now and then, the whole region.
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

/// Keeps connections streaming both ways to the survivor (a new one
/// whenever one breaks) while trying to resize, hole-punch and reseal every
/// region it holds. Exits 3 if any resize or seal change succeeded.
fn shrink(addr: &manycore_sock::SockAddr) {
    let a2 = addr.clone();
    std::thread::spawn(move || loop {
        let Ok(s) = ShmStream::connect_timeout(&a2, Duration::from_millis(100)) else {
            continue;
        };
        let s2 = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 16 << 10];
            while (&s2).read(&mut buf).is_ok_and(|n| n > 0) {}
        });
        let buf = vec![9u8; 16 << 10];
        while (&s).write_all(&buf).is_ok() {}
    });
    let mut rnd = rng(0x51ed ^ std::process::id() as u64);
    let end = Instant::now() + Duration::from_secs_f64(secs() + 0.5);
    let (mut tries, mut resized) = (0u64, 0u64);
    while Instant::now() < end {
        for f in memfds() {
            // SAFETY: fcntl on a descriptor we own.
            let seals = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GET_SEALS) };
            if seals < 0 || seals & libc::F_SEAL_SEAL == 0 {
                // A region our own library is creating right now (sealed
                // before any peer gets it): not a target.
                continue;
            }
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            for to in [0, 4096, len / 2, len.saturating_sub(1), len + 4096] {
                tries += 1;
                if f.set_len(to).is_ok() && to != len {
                    resized += 1;
                }
            }
            let fd = f.as_raw_fd();
            for seal in [libc::F_SEAL_WRITE, libc::F_SEAL_FUTURE_WRITE] {
                // SAFETY: fcntl on a descriptor we own; seals are plain ints.
                if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seal) } == 0 {
                    resized += 1;
                }
            }
            if rnd() % 8 == 0 {
                // Punching holes is allowed: the pages read back as zeros.
                let off = (rnd() % len.max(1)) & !4095;
                // SAFETY: fallocate on a descriptor we own, no memory involved.
                unsafe {
                    libc::fallocate(
                        fd,
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        off as libc::off_t,
                        4096,
                    )
                };
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    eprintln!("shrinker: {tries} resize attempts, {resized} succeeded");
    std::process::exit(if resized == 0 && tries > 0 { 0 } else { 3 });
}

// ---- the handshake by hand (format: src/README.md, "Handshake") ----

fn seqpacket() -> OwnedFd {
    // SAFETY: plain socket(2) call.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn sockaddr(path: &std::path::Path) -> libc::sockaddr_un {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &b) in sa.sun_path.iter_mut().zip(path.as_os_str().as_bytes()) {
        *d = b as libc::c_char;
    }
    sa
}

fn raw_connect(path: &std::path::Path) -> std::io::Result<OwnedFd> {
    let fd = seqpacket();
    let sa = sockaddr(path);
    // SAFETY: valid descriptor and a full sockaddr_un.
    let r = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

fn send_with(sock: &OwnedFd, data: &[u8], fds: &[i32]) -> bool {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(fds) as libc::c_uint;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE only computes a size.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as _;
        // SAFETY: cbuf is 8-aligned and larger than CMSG_SPACE(bytes) for up
        // to a few fds, so the header and data written lie inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c).cast::<i32>(),
                fds.len(),
            );
        }
    }
    // SAFETY: msg points to live buffers.
    unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) >= 0 }
}

fn recv_words(sock: &OwnedFd) -> Option<[u32; 8]> {
    let mut b = [0u8; 64];
    // SAFETY: valid descriptor and buffer.
    let n = unsafe { libc::recv(sock.as_raw_fd(), b.as_mut_ptr().cast(), b.len(), 0) };
    (n == 32).then(|| {
        let mut w = [0u32; 8];
        for (v, c) in w.iter_mut().zip(b.chunks_exact(4)) {
            *v = u32::from_le_bytes(c.try_into().unwrap());
        }
        w
    })
}

fn words(w: [u32; 8]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A memfd holding a valid-looking region header (one slot, `data` bytes of
/// data), sealed with `seals` (0: unsealed).
fn region(kind: u32, data: u64, seals: i32) -> File {
    // SAFETY: a valid C string; plain memfd_create call.
    let fd = unsafe { libc::memfd_create(c"evil".as_ptr(), libc::MFD_ALLOW_SEALING) };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor owned by nobody else.
    let f = unsafe { File::from_raw_fd(fd) };
    f.set_len(4096 + data).unwrap();
    let mut h = [0u8; 48];
    h[0..8].copy_from_slice(b"mcsock02");
    h[8..12].copy_from_slice(&2u32.to_le_bytes());
    h[12..16].copy_from_slice(&kind.to_le_bytes());
    h[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[24..32].copy_from_slice(&4096u64.to_le_bytes());
    h[32..40].copy_from_slice(&data.to_le_bytes());
    h[40..44].copy_from_slice(&64u32.to_le_bytes());
    f.write_all_at(&h, 0).unwrap();
    if seals != 0 {
        // SAFETY: fcntl on a descriptor we own.
        assert_eq!(unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) }, 0);
    }
    f
}

const ALL_SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// The bad regions both forgers offer, with what they do after sending.
fn bad_regions(kind: u32) -> Vec<(&'static str, Vec<File>, bool)> {
    let pipe_end = {
        let mut p = [0i32; 2];
        // SAFETY: p has room for two descriptors.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors owned by nobody else; p[1] is closed here.
        unsafe {
            drop(OwnedFd::from_raw_fd(p[1]));
            File::from_raw_fd(p[0])
        }
    };
    vec![
        // (what, descriptors, truncate them right after sending)
        ("unsealed", vec![region(kind, 8192, 0)], true),
        (
            "shrink-only",
            vec![region(kind, 8192, libc::F_SEAL_SHRINK)],
            false,
        ),
        (
            "grow+seal, no shrink seal",
            vec![region(kind, 8192, libc::F_SEAL_GROW | libc::F_SEAL_SEAL)],
            true,
        ),
        (
            "sealed, header claims more than the size",
            {
                let f = region(kind, 8192, 0);
                f.set_len(4096 + 4096).unwrap();
                // SAFETY: fcntl on a descriptor we own.
                unsafe { libc::fcntl(f.as_raw_fd(), libc::F_ADD_SEALS, ALL_SEALS) };
                vec![f]
            },
            false,
        ),
        (
            "regular file",
            vec![File::open(std::env::current_exe().unwrap()).unwrap()],
            false,
        ),
        ("pipe", vec![pipe_end], false),
        ("no descriptor", vec![], false),
        (
            "two descriptors",
            vec![region(kind, 8192, ALL_SEALS), region(kind, 8192, ALL_SEALS)],
            false,
        ),
    ]
}

/// Connects by hand and offers every bad region; each must be answered
/// INVALID. Exits 4 otherwise.
fn forge(ns: &manycore_sock::Namespace) {
    let manycore_sock::Namespace::Dir(dir) = ns else {
        panic!("forger needs a directory namespace");
    };
    let path = dir.join(format!("p{PORT}"));
    let mut wrong = 0;
    let request = words([u32::from_le_bytes(*b"MCSQ"), 2, 0, 0, 8192, 0, 0, 0]);
    for (what, files, truncate) in bad_regions(2) {
        let sock = raw_connect(&path).unwrap();
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        assert!(send_with(&sock, &request, &fds));
        if truncate {
            for f in &files {
                f.set_len(0).unwrap();
            }
        }
        let reply = recv_words(&sock);
        if reply.map(|w| w[2]) != Some(2) {
            eprintln!("forger: {what}: reply {reply:?}, expected INVALID");
            wrong += 1;
        }
    }
    // Garbage and short messages, with a good region attached.
    for msg in [vec![0u8; 32], vec![7u8; 5], vec![0xffu8; 200]] {
        let sock = raw_connect(&path).unwrap();
        let good = region(2, 8192, ALL_SEALS);
        assert!(send_with(&sock, &msg, &[good.as_raw_fd()]));
        if recv_words(&sock).map(|w| w[2]) != Some(2) {
            eprintln!("forger: garbage {} bytes not refused", msg.len());
            wrong += 1;
        }
    }
    std::process::exit(if wrong == 0 { 0 } else { 4 });
}

/// A listener by hand: binds `p<PORT>`, and answers each connection OK with
/// one of the bad regions, truncating it right after the reply.
fn evil_listener(ns: &manycore_sock::Namespace) {
    let manycore_sock::Namespace::Dir(dir) = ns else {
        panic!("evil listener needs a directory namespace");
    };
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("p{PORT}"));
    let l = seqpacket();
    let sa = sockaddr(&path);
    // SAFETY: valid descriptor and a full sockaddr_un.
    let r = unsafe {
        libc::bind(
            l.as_raw_fd(),
            (&sa as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: valid descriptor.
    assert_eq!(unsafe { libc::listen(l.as_raw_fd(), 16) }, 0);
    let reply = words([u32::from_le_bytes(*b"MCSR"), 2, 0, 0, 0, 8192, 0, 0]);
    let mut conns = Vec::new();
    for (_, files, truncate) in bad_regions(1) {
        // SAFETY: valid listening descriptor; no address wanted.
        let c = unsafe { libc::accept(l.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut()) };
        assert!(c >= 0);
        // SAFETY: a fresh descriptor owned by nobody else.
        let c = unsafe { OwnedFd::from_raw_fd(c) };
        let _request = recv_words(&c);
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        send_with(&c, &reply, &fds);
        if truncate {
            for f in &files {
                let _ = f.set_len(0);
            }
        }
        // Connections stay open: the survivor keeps its half-used ring
        // until we let go of it.
        conns.push(c);
    }
    std::process::exit(0);
}

fn allowed(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::InvalidData | ErrorKind::WouldBlock)
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
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
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
            match ShmStream::connect(&a2) {
                Ok(s) => {
                    good += 1;
                    s.set_write_timeout(Some(Duration::from_millis(5))).unwrap();
                    match (&s).write(&[3u8; 100]) {
                        Ok(_) => {}
                        Err(e) if allowed(&e) => bad += 1,
                        Err(e) => panic!("own write: unexpected {e:?}"),
                    }
                    // Wait (a little) for the accept: the reply maps the
                    // listener's region here too.
                    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                    match (&s).read(&mut [0u8; 1]) {
                        Ok(_) => {}
                        Err(e) if allowed(&e) => bad += 1,
                        Err(e) => panic!("own read: unexpected {e:?}"),
                    }
                    keep.push(s);
                }
                // Connecting never waits: our own connector can fill the
                // backlog faster than the survivor accepts.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    bad += 1;
                    std::thread::sleep(Duration::from_millis(5));
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

/// Point of the sealed regions: a peer that shrinks (or tries to) every
/// region while we stream both ways over fresh connections can make us see
/// errors, never SIGBUS.
#[test]
fn shrinking_peer_cannot_fault_us() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = Guard(spawn("peer", "shrinker", &ns, &[]));
    l.set_accept_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut streams = vec![l.accept().unwrap().0];
    l.set_nonblocking(true).unwrap();
    let mut buf = vec![0u8; 16 << 10];
    let (mut ok, mut errs, mut conns) = (0u64, 0u64, 1u64);
    let end = Instant::now() + Duration::from_secs_f64(secs());
    while Instant::now() < end {
        match l.accept() {
            Ok((s, _)) => {
                s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
                s.set_write_timeout(Some(Duration::from_millis(5))).unwrap();
                streams.push(s);
                conns += 1;
            }
            Err(e) if allowed(&e) => {}
            Err(e) => panic!("accept: unexpected {e:?}"),
        }
        // Broken streams are dropped: the peer connects anew.
        streams.retain(|s| {
            let mut alive = true;
            for r in [(&*s).write(&buf[..8192]), (&*s).read(&mut buf)] {
                match r {
                    Ok(_) => ok += 1,
                    Err(e) if allowed(&e) => {
                        errs += 1;
                        alive &= e.kind() != ErrorKind::InvalidData;
                    }
                    // The peer streams for its own `secs() + 0.5` from its
                    // start, which a loaded machine may delay past this
                    // loop's: its exit is an error here, not a fault.
                    Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                        errs += 1;
                        alive = false;
                    }
                    Err(e) => panic!("unexpected {e:?}"),
                }
            }
            alive
        });
    }
    let status = child.0.wait().unwrap();
    eprintln!("shrinking peer: {conns} connections, {ok} operations, {errs} errors; peer {status}");
    assert!(status.success(), "a region could be resized or resealed");
}

/// Forged handshakes with regions that could shrink (or are not regions at
/// all) are refused with `InvalidData`; the listener carries on.
#[test]
fn forged_requests_are_refused() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = Guard(spawn("peer", "forger", &ns, &[]));
    l.set_accept_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut invalid = 0;
    let t = Instant::now();
    loop {
        match l.accept() {
            Ok((_, p)) => panic!("forged connection accepted: {p}"),
            Err(e) if e.kind() == ErrorKind::InvalidData => invalid += 1,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if child.0.try_wait().unwrap().is_some() {
                    break;
                }
                assert!(t.elapsed() < Duration::from_secs(60), "forger hangs");
            }
            Err(e) => panic!("accept: unexpected {e:?}"),
        }
    }
    assert!(
        child.0.wait().unwrap().success(),
        "a forgery was not refused"
    );
    assert_eq!(invalid, 11, "every forgery reported");
    // Still usable.
    let a = ns.ns.addr(PORT);
    let th = std::thread::spawn(move || ShmStream::connect(&a).map(drop));
    th.join().unwrap().unwrap();
    l.set_accept_timeout(Some(Duration::from_secs(30))).unwrap();
    l.accept().unwrap();
}

/// A hand-made listener that replies with bad regions: every connection
/// fails with `InvalidData` when it reads the reply, none faults.
#[test]
fn evil_listener_replies_are_refused() {
    let ns = TestNs::new();
    std::fs::create_dir_all(&ns.dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ns.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut child = Guard(spawn("peer", "evil-listener", &ns, &[]));
    let addr = ns.ns.addr(PORT);
    let mut n = 0;
    let t = Instant::now();
    while n < 8 {
        // Connecting succeeds (the backlog holds the connection); the
        // reply is taken, and refused, when the stream first reads.
        let read_reply = |s: ShmStream| {
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            (&s).read(&mut [0u8; 1])
        };
        match ShmStream::connect(&addr).and_then(read_reply) {
            Ok(n) => panic!("read {n} bytes from an evil listener"),
            Err(e) if e.kind() == ErrorKind::InvalidData => n += 1,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                // Not bound yet.
                assert!(t.elapsed() < Duration::from_secs(30), "{e}");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("connect: unexpected {e:?}"),
        }
    }
    assert!(child.0.wait().unwrap().success());
}
