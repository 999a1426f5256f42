//! The connect/accept handshake of rckSock (Clauss, Figure 4 and section
//! 3.2): the connector allocates chunk X in its own region and sends
//! (slot, offset, size); the acceptor allocates chunk Y in its region and
//! replies with its (slot, offset, size). A two-way handshake. Here the two
//! messages travel over the connection's Unix socket and carry the regions'
//! sealed memfds with them (SCM_RIGHTS); the socket stays open for the
//! connection's life as its liveness signal and readiness descriptor. The
//! connector does not wait for the reply: its connection is established
//! once the listener's backlog holds it, as with a kernel socket. Wire
//! format in `README.md`.

use crate::config::WaitMode;
use crate::endpoint::{client_endpoint, Endpoint, Liveness};
use crate::layout::{KIND_CLIENT, KIND_LISTENER};
use crate::namespace::{Namespace, SockAddr};
use crate::raw;
use crate::region::Shm;
use crate::stream::{Conn, PeerAddr, RxRing, RxSide, ShmStream};
use manycore_sync::atomic::Ordering;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// "MCSQ" (request) and "MCSR" (reply) as little-endian u32.
const REQ_MAGIC: u32 = u32::from_le_bytes(*b"MCSQ");
const REP_MAGIC: u32 = u32::from_le_bytes(*b"MCSR");
/// Wire version (the region layout version).
const WIRE_VERSION: u32 = crate::layout::VERSION;
/// Both messages are eight little-endian u32 words.
const MSG_LEN: usize = 32;
/// Reply status words.
const ST_OK: u32 = 0;
const ST_REFUSED: u32 = 1;
const ST_INVALID: u32 = 2;

fn encode(w: [u32; 8]) -> [u8; MSG_LEN] {
    let mut b = [0u8; MSG_LEN];
    for (c, v) in b.chunks_exact_mut(4).zip(w) {
        c.copy_from_slice(&v.to_le_bytes());
    }
    b
}

fn decode(b: &[u8]) -> [u32; 8] {
    let mut w = [0u32; 8];
    for (v, c) in w.iter_mut().zip(b.chunks_exact(4)) {
        *v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    w
}

pub(crate) fn refused(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionRefused,
        format!("manycore-sock: {why}"),
    )
}

pub(crate) fn bad(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("manycore-sock: invalid handshake ({why})"),
    )
}

/// One well-formed message with exactly one descriptor, or None.
fn message(m: &raw::Received, buf: &[u8], magic: u32) -> Option<[u32; 8]> {
    let w = decode(buf);
    (m.len == MSG_LEN && !m.truncated && w[0] == magic && w[1] == WIRE_VERSION).then_some(w)
}

/// Hooks for `tests/backlog.rs`, compiled only with the `internals`
/// feature and read once from `MANYCORE_SOCK_TEST_HOOK`: `pause=<file>`
/// makes a connector create `<file>` and stop for 60 s between connecting
/// and sending its request (so that the test can kill it there);
/// `posted=<dir>` makes it create a file in `<dir>` once its request is
/// sent.
#[cfg(feature = "internals")]
mod test_hook {
    use std::path::PathBuf;
    use std::sync::OnceLock;
    use std::time::Duration;

    enum Hook {
        Pause(PathBuf),
        Posted(PathBuf),
    }

    fn hook() -> Option<&'static Hook> {
        static H: OnceLock<Option<Hook>> = OnceLock::new();
        H.get_or_init(|| {
            let v = std::env::var("MANYCORE_SOCK_TEST_HOOK").ok()?;
            let (k, p) = v.split_once('=')?;
            match k {
                "pause" => Some(Hook::Pause(p.into())),
                "posted" => Some(Hook::Posted(p.into())),
                _ => None,
            }
        })
        .as_ref()
    }

    /// Between connecting and sending the request.
    pub(super) fn connected() {
        if let Some(Hook::Pause(f)) = hook() {
            let _ = std::fs::write(f, b"paused");
            std::thread::sleep(Duration::from_secs(60));
        }
    }

    /// Once the request is sent.
    pub(super) fn posted() {
        if let Some(Hook::Posted(d)) = hook() {
            use manycore_sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let _ = std::fs::write(d.join(format!("{}.{n}", super::raw::getpid())), b"posted");
        }
    }
}

/// The connector's half of the handshake: connect to the rendezvous (the
/// kernel queues the connection in the listener's backlog, or refuses it if
/// the backlog is full), allocate X and post the request. The connection is
/// established from here on: what we write waits in X until the listener
/// accepts; the reply (Y) is taken when we first need it (`take_reply`).
pub(crate) fn connect(addr: &SockAddr) -> io::Result<ShmStream> {
    let ns: &Namespace = addr.namespace();
    let (sock, lpid) = ns.connect(addr.port())?;
    let (ep, seq) = client_endpoint(ns)?;
    let tx = ep.alloc()?;
    #[cfg(feature = "internals")]
    test_hook::connected();
    let req = encode([
        REQ_MAGIC,
        WIRE_VERSION,
        tx.idx,
        tx.base,
        tx.alloc.load(Ordering::Relaxed),
        seq,
        0,
        0,
    ]);
    // The socket is fresh: its send buffer has room for one message, so
    // this never waits.
    if let Err(e) = raw::send_msg(&sock, &req, ep.shm.fd()) {
        ep.free_now(&tx);
        return Err(match e.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                refused("listener is gone")
            }
            _ => e,
        });
    }
    #[cfg(feature = "internals")]
    test_hook::posted();
    let paddr = PeerAddr {
        namespace: ns.clone(),
        pid: lpid,
        endpoint: format!("p{}", addr.port()),
    };
    Ok(Conn::stream(
        ep,
        tx,
        None,
        Liveness::Socket(sock),
        paddr,
        WaitMode::default(),
    ))
}

fn reset(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        format!("manycore-sock: {why}"),
    )
}

/// The listener's reply on a connector's socket, if it has come (without
/// waiting): the ring Y to read, validated against the listener's region
/// (`lname` names it). A listener that refused the connection, or closed it
/// before accepting it, gives `ConnectionReset` (as a Unix socket whose
/// listener goes away with the connection in its queue); an invalid reply
/// gives `InvalidData`.
pub(crate) fn take_reply(sock: &OwnedFd, lname: &str) -> io::Result<Option<RxSide>> {
    let mut buf = [0u8; MSG_LEN + 8];
    let reply = match raw::recv_msg(sock, &mut buf) {
        Ok(Some(m)) => m,
        Ok(None) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
            return Err(reset("the listener closed before accepting"))
        }
        Err(e) => return Err(e),
    };
    if reply.len == 0 {
        return Err(reset("the listener closed before accepting"));
    }
    let w = message(&reply, &buf, REP_MAGIC).ok_or_else(|| bad("reply"))?;
    match w[2] {
        ST_OK => {}
        ST_REFUSED => return Err(reset("refused by the listener (no slot or buffer left)")),
        ST_INVALID => return Err(bad("the listener found our request invalid")),
        _ => return Err(bad("reply status")),
    }
    let (sslot, soff, ssize) = (w[3], w[4], w[5]);
    let mut fds = reply.fds;
    let lshm = match (fds.pop(), fds.is_empty()) {
        (Some(fd), true) => Shm::from_fd(fd, KIND_LISTENER, lname.to_string())?,
        _ => return Err(bad("descriptors")),
    };
    if !lshm.layout.valid_ring(sslot, soff, ssize) {
        return Err(bad("reply ring"));
    }
    Ok(Some(RxSide {
        peer: lshm,
        ring: RxRing {
            idx: sslot,
            base: soff,
            chunk: ssize,
        },
    }))
}

/// What became of one pending connection.
pub(crate) enum Served {
    /// Connected.
    Done(ShmStream, PeerAddr),
    /// The connector went away before or during the handshake (nothing to
    /// report: its queue slot is free again).
    Gone,
}

/// The acceptor's half of the handshake, for a connection whose first
/// message `m` (in `buf`) has arrived. Invalid requests are answered
/// INVALID and reported as `InvalidData`; a full endpoint as REFUSED.
pub(crate) fn serve(
    ep: &Arc<Endpoint>,
    ns: &Namespace,
    mode: WaitMode,
    sock: OwnedFd,
    m: raw::Received,
    buf: &[u8],
) -> io::Result<Served> {
    if m.len == 0 {
        return Ok(Served::Gone);
    }
    let answer = |status: u32| {
        let _ = raw::send_msg(
            &sock,
            &encode([REP_MAGIC, WIRE_VERSION, status, 0, 0, 0, 0, 0]),
            None,
        );
    };
    let checked = (|| {
        let (pid, uid) = raw::peer_cred(&sock)?;
        if !ns.admits(pid, uid) {
            return Err(bad("foreign process"));
        }
        let w = message(&m, buf, REQ_MAGIC).ok_or_else(|| bad("request"))?;
        let (cslot, coff, csize, seq) = (w[2], w[3], w[4], w[5]);
        let mut fds = m.fds;
        let fd = match (fds.pop(), fds.is_empty()) {
            (Some(fd), true) => fd,
            _ => return Err(bad("descriptors")),
        };
        let name = format!("c{pid}-{seq}");
        let peer = Shm::from_fd(fd, KIND_CLIENT, name.clone())?;
        if !peer.layout.valid_ring(cslot, coff, csize) {
            return Err(bad("ring"));
        }
        let paddr = PeerAddr {
            namespace: ns.clone(),
            pid,
            endpoint: name,
        };
        let rx = RxRing {
            idx: cslot,
            base: coff,
            chunk: csize,
        };
        Ok((peer, rx, paddr))
    })();
    let (peer, rx, paddr) = match checked {
        Ok(x) => x,
        Err(e) => {
            answer(ST_INVALID);
            return Err(match e.kind() {
                io::ErrorKind::InvalidData => e,
                _ => bad(&e.to_string()),
            });
        }
    };
    let tx = match ep.alloc() {
        Ok(t) => t,
        Err(e) => {
            answer(ST_REFUSED);
            return Err(e);
        }
    };
    let reply = encode([
        REP_MAGIC,
        WIRE_VERSION,
        ST_OK,
        tx.idx,
        tx.base,
        tx.alloc.load(Ordering::Relaxed),
        0,
        0,
    ]);
    // Once the reply is queued the connector takes it when it first needs
    // it. If the connector has closed its socket (it dropped the stream or
    // died while the connection waited in the backlog) the send fails: the
    // connection is still returned, as `accept(2)` returns a connection
    // whose peer has gone: what it wrote before (in X, which we mapped)
    // reads back, then EOF (or `ConnectionReset` if it died without
    // closing); our writes get `BrokenPipe`, and Y is freed on drop.
    let gone = raw::send_msg(&sock, &reply, ep.shm.fd()).is_err() || raw::hung_up(&sock);
    let live = Liveness::Socket(sock);
    let rx = RxSide { peer, ring: rx };
    let s = Conn::stream(ep.clone(), tx, Some(rx), live, paddr.clone(), mode);
    if gone {
        s.c.dead.store(true, Ordering::Relaxed);
    }
    Ok(Served::Done(s, paddr))
}
