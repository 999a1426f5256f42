//! `Listener` and the connect/accept handshake of rckSock (Clauss, Figure 4
//! and section 3.2): the connector allocates chunk X in its own region and
//! posts (offset, size) into the listener's small control ring; `accept`
//! allocates chunk Y in the listener's region and replies with its offset and
//! size. A two-way handshake, a listen backlog, refusal, timeouts.

use crate::config::{Config, WaitMode};
use crate::endpoint::{client_endpoint, Endpoint, Liveness};
use crate::layout::*;
use crate::region::{Namespace, Shm, SockAddr};
use crate::ring::RxState;
use crate::stream::{lock, wait_on, Conn, PeerAddr, Stream, Waited};
use manycore_sync::atomic::Ordering;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn refused(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionRefused,
        format!("manycore-sock: {why}"),
    )
}

fn bad(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("manycore-sock: invalid connection request ({why})"),
    )
}

/// A listening endpoint, shaped like `std::net::TcpListener`.
pub struct Listener {
    ep: Arc<Endpoint>,
    addr: SockAddr,
    config: Config,
    nonblocking: AtomicBool,
    timeout: Mutex<Option<Duration>>,
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Listener {
    /// Binds `addr` with the default [`Config`] (256 KiB buffer).
    /// `AddrInUse` if a live endpoint holds the port.
    pub fn bind(addr: &SockAddr) -> io::Result<Listener> {
        Self::bind_with(addr, Config::default())
    }

    /// Binds `addr` with an explicit configuration.
    pub fn bind_with(addr: &SockAddr, config: Config) -> io::Result<Listener> {
        let mut p = config.params();
        p.backlog = p.backlog.max(1);
        let ep = Endpoint::create(
            addr.namespace(),
            &format!("p{}", addr.port()),
            KIND_LISTENER,
            p,
        )?;
        // Release; pairs with the Acquire in `connect`.
        ep.shm
            .header()
            .flags
            .store(HDR_LISTENING, Ordering::Release);
        Ok(Listener {
            ep,
            addr: addr.clone(),
            config,
            nonblocking: AtomicBool::new(false),
            timeout: Mutex::new(None),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SockAddr> {
        Ok(self.addr.clone())
    }

    /// In non-blocking mode `accept` returns `WouldBlock` when nobody waits.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.nonblocking
            .store(nonblocking, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Bounds each `accept` (`TimedOut` after it). `None` waits forever.
    pub fn set_accept_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        *lock(&self.timeout) = t;
        Ok(())
    }

    /// Iterates over incoming connections (`accept` in a loop).
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { l: self }
    }

    /// Waits for a connection request and completes the handshake. A request
    /// that fails validation is refused and reported as `InvalidData` (the
    /// listener stays usable).
    pub fn accept(&self) -> io::Result<(Stream, PeerAddr)> {
        let nb = self.nonblocking.load(std::sync::atomic::Ordering::Relaxed);
        let deadline = if nb {
            Some(Instant::now())
        } else {
            lock(&self.timeout).map(|d| Instant::now() + d)
        };
        let shm = self.ep.shm.clone();
        let hdr = shm.header();
        let scan = || -> Option<u32> {
            (0..shm.layout.backlog).find(|&i| {
                shm.backlog(i).is_some_and(|b| {
                    b.state.load(Ordering::Relaxed) == BL_REQUEST
                        // Acquire; pairs with the connector's Release store of REQUEST.
                        && b.state
                            .compare_exchange(BL_REQUEST, BL_ACCEPTING, Ordering::Acquire, Ordering::Relaxed)
                            .is_ok()
                })
            })
        };
        loop {
            let mut found = scan();
            if found.is_none() {
                if nb {
                    return Err(io::Error::from(io::ErrorKind::WouldBlock));
                }
                let mode = match self.config.wait_mode {
                    WaitMode::Spin => WaitMode::Hybrid {
                        spin: Duration::from_millis(1),
                    },
                    m => m,
                };
                let w = wait_on(
                    mode,
                    deadline,
                    &hdr.accept_ec,
                    &Liveness::SameProcess,
                    None,
                    || {
                        found = scan();
                        Ok(found.is_some())
                    },
                )?;
                if let Waited::TimedOut = w {
                    return Err(io::Error::from(io::ErrorKind::TimedOut));
                }
            }
            let Some(i) = found else { continue };
            return self.handshake(i);
        }
    }

    fn handshake(&self, i: u32) -> io::Result<(Stream, PeerAddr)> {
        let shm = &self.ep.shm;
        let b = shm.backlog(i).ok_or_else(|| bad("slot"))?;
        let finish = |state: u32| {
            // Release; pairs with the connector's Acquire load of the state.
            b.state.store(state, Ordering::Release);
            b.ec.notify_all();
        };
        // Copy the request out once.
        let pid = b.client_pid.load(Ordering::Relaxed);
        let seq = b.client_seq.load(Ordering::Relaxed);
        let cslot = b.client_slot.load(Ordering::Relaxed);
        let coff = b.client_off.load(Ordering::Relaxed);
        let csize = b.client_size.load(Ordering::Relaxed);
        let name = format!("c{pid}-{seq}");
        let res = (|| {
            if pid == 0 || pid > i32::MAX as u32 {
                return Err(bad("pid"));
            }
            let peer = Shm::open(shm.ns_ref(), &name, KIND_CLIENT).map_err(|_| bad("endpoint"))?;
            if peer.pid != pid
                || cslot >= peer.layout.nslots
                || !peer.layout.valid_block(coff, csize)
            {
                return Err(bad("slot or block"));
            }
            let live = Liveness::for_pid(pid).map_err(|_| bad("process"))?;
            Ok((peer, live))
        })();
        let (peer, live) = match res {
            Ok(x) => x,
            Err(e) => {
                finish(BL_INVALID);
                return Err(e);
            }
        };
        let tx = match self.ep.alloc() {
            Ok(t) => t,
            Err(e) => {
                finish(BL_REFUSED);
                return Err(e);
            }
        };
        b.server_slot.store(tx.idx, Ordering::Relaxed);
        b.server_off.store(tx.base, Ordering::Relaxed);
        b.server_size
            .store(tx.alloc.load(Ordering::Relaxed), Ordering::Relaxed);
        let paddr = PeerAddr {
            namespace: shm.ns_ref().clone(),
            pid,
            endpoint: name,
        };
        let live = Arc::new(live);
        let _ = tx.live.set(live.clone());
        let conn = Conn {
            ep: self.ep.clone(),
            tx,
            peer,
            rx_idx: cslot,
            rx_base: coff,
            rx: Mutex::new(RxState {
                chunk: csize,
                ..RxState::default()
            }),
            live,
            peer_addr: paddr.clone(),
            mode: Mutex::new(self.config.wait_mode),
            read_timeout: Mutex::new(None),
            write_timeout: Mutex::new(None),
            nonblocking: AtomicBool::new(false),
            shut: AtomicU8::new(0),
            dead: AtomicBool::new(false),
            last_check: Mutex::new(Instant::now()),
            rx_spin: std::sync::atomic::AtomicU32::new(u32::MAX),
            tx_spin: std::sync::atomic::AtomicU32::new(u32::MAX),
        };
        finish(BL_REPLIED);
        Ok((Stream { c: Arc::new(conn) }, paddr))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let shm = &self.ep.shm;
        shm.header().flags.store(0, Ordering::Release);
        shm.unlink_name();
        for i in 0..shm.layout.backlog {
            if let Some(b) = shm.backlog(i) {
                if b.state
                    .compare_exchange(BL_REQUEST, BL_REFUSED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    b.ec.notify_all();
                }
            }
        }
    }
}

/// Iterator over [`Listener::accept`] results; never ends.
#[derive(Debug)]
pub struct Incoming<'a> {
    l: &'a Listener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<Stream>;
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.l.accept().map(|(s, _)| s))
    }
}

/// The connector's half of the handshake.
pub(crate) fn connect(addr: &SockAddr, timeout: Option<Duration>) -> io::Result<Stream> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let ns: &Namespace = addr.namespace();
    let lname = format!("p{}", addr.port());
    let lshm = match Shm::open(ns, &lname, KIND_LISTENER) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(refused("nobody listens")),
        Err(e) => return Err(e),
    };
    let hdr = lshm.header();
    // Acquire; pairs with the Release store in `bind_with`.
    match hdr.flags.load(Ordering::Acquire) {
        HDR_LISTENING => {}
        0 => return Err(refused("not listening")),
        _ => return Err(bad("listener flags")),
    }
    let live = match Liveness::for_pid(lshm.pid) {
        Ok(l) => l,
        Err(_) => return Err(refused("listener is gone")),
    };
    let ep = client_endpoint(ns)?;
    let tx = ep.alloc()?;
    let claimed = (0..lshm.layout.backlog).find_map(|i| {
        let b = lshm.backlog(i)?;
        // Acquire; pairs with the Release store of FREE by the previous user.
        b.state
            .compare_exchange(BL_FREE, BL_CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| b)
    });
    let Some(b) = claimed else {
        ep.free_now(&tx);
        let garbage = (0..lshm.layout.backlog).any(|i| {
            lshm.backlog(i)
                .is_some_and(|b| b.state.load(Ordering::Relaxed) > BL_INVALID)
        });
        return Err(if garbage {
            bad("backlog state")
        } else {
            refused("backlog full")
        });
    };
    let seq = ep.shm.header().seq.load(Ordering::Relaxed);
    b.client_pid.store(ep.shm.pid, Ordering::Relaxed);
    b.client_seq.store(seq, Ordering::Relaxed);
    b.client_slot.store(tx.idx, Ordering::Relaxed);
    b.client_off.store(tx.base, Ordering::Relaxed);
    b.client_size
        .store(tx.alloc.load(Ordering::Relaxed), Ordering::Relaxed);
    // Release; pairs with the Acquire CAS in `accept`: the request fields and
    // our ring's initialised lines are visible to the acceptor.
    b.state.store(BL_REQUEST, Ordering::Release);
    hdr.accept_ec.notify_all();

    let fail = |e: io::Error| {
        ep.free_now(&tx);
        Err(e)
    };
    let w = wait_on(
        WaitMode::Hybrid {
            spin: Duration::from_micros(200),
        },
        deadline,
        &b.ec,
        &live,
        None,
        || {
            // Acquire; pairs with the acceptor's Release store of the reply state.
            let s = b.state.load(Ordering::Acquire);
            Ok(s != BL_REQUEST && s != BL_ACCEPTING)
        },
    );
    match w {
        Ok(Waited::Ready) => {}
        Ok(Waited::TimedOut) | Ok(Waited::PeerDead) => {
            // Withdraw the request unless the acceptor already took it.
            if b.state
                .compare_exchange(BL_REQUEST, BL_FREE, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return fail(match w {
                    Ok(Waited::TimedOut) => io::Error::from(io::ErrorKind::TimedOut),
                    _ => refused("listener is gone"),
                });
            }
            // Taken: the acceptor replies promptly unless it died.
            let w2 = wait_on(
                WaitMode::Sleep,
                Some(Instant::now() + Duration::from_secs(5)),
                &b.ec,
                &live,
                None,
                || {
                    let s = b.state.load(Ordering::Acquire);
                    Ok(s != BL_ACCEPTING)
                },
            );
            if !matches!(w2, Ok(Waited::Ready)) {
                return fail(refused("listener is gone"));
            }
        }
        Err(e) => return fail(e),
    }
    let s = b.state.load(Ordering::Acquire);
    if s != BL_REPLIED {
        if s == BL_REFUSED || s == BL_INVALID {
            // Release; pairs with the next claimant's Acquire CAS.
            b.state.store(BL_FREE, Ordering::Release);
        }
        return fail(match s {
            BL_REFUSED => refused("refused by the listener"),
            BL_INVALID => bad("the listener found our request invalid"),
            _ => bad("backlog state"),
        });
    }
    let sslot = b.server_slot.load(Ordering::Relaxed);
    let soff = b.server_off.load(Ordering::Relaxed);
    let ssize = b.server_size.load(Ordering::Relaxed);
    // Release; pairs with the next claimant's Acquire CAS.
    b.state.store(BL_FREE, Ordering::Release);
    if sslot >= lshm.layout.nslots || !lshm.layout.valid_block(soff, ssize) {
        return fail(bad("reply"));
    }
    let paddr = PeerAddr {
        namespace: ns.clone(),
        pid: lshm.pid,
        endpoint: lname,
    };
    let live = Arc::new(live);
    let _ = tx.live.set(live.clone());
    let conn = Conn {
        ep,
        tx,
        peer: lshm,
        rx_idx: sslot,
        rx_base: soff,
        rx: Mutex::new(RxState {
            chunk: ssize,
            ..RxState::default()
        }),
        live,
        peer_addr: paddr,
        mode: Mutex::new(WaitMode::default()),
        read_timeout: Mutex::new(None),
        write_timeout: Mutex::new(None),
        nonblocking: AtomicBool::new(false),
        shut: AtomicU8::new(0),
        dead: AtomicBool::new(false),
        last_check: Mutex::new(Instant::now()),
        rx_spin: std::sync::atomic::AtomicU32::new(u32::MAX),
        tx_spin: std::sync::atomic::AtomicU32::new(u32::MAX),
    };
    Ok(Stream { c: Arc::new(conn) })
}
