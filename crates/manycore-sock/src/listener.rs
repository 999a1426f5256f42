//! `ShmListener`: a bound rendezvous socket, its endpoint region, and `accept`,
//! which takes connections from the kernel's queue, waits for each one's
//! request (several at once: a slow or dead connector holds up nobody) and
//! completes the handshake of `handshake.rs` (rckSock, Clauss, section 3.2).

use crate::config::{Config, WaitMode};
use crate::endpoint::Endpoint;
use crate::handshake::{self, Served};
use crate::layout::KIND_LISTENER;
use crate::namespace::{Rendezvous, SockAddr};
use crate::raw;
use crate::stream::{check_timeout, deadline_after, lock, PeerAddr, ShmStream};
use manycore_sync::atomic::{AtomicBool, Ordering};
use manycore_sync::SpinBudget;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an accepted connection may take to send its request before it
/// is dropped (an honest connector sends it right after connecting).
const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// Longest single sleep of `accept` (it re-checks request deadlines).
const ACCEPT_SLICE: Duration = Duration::from_secs(1);

/// The pending set and whether the rendezvous socket is in the epoll set.
#[derive(Debug)]
struct PendSet {
    v: Vec<Pending>,
    rv_in: bool,
}

/// A connection taken from the kernel's queue whose request has not arrived.
#[derive(Debug)]
struct Pending {
    sock: OwnedFd,
    since: Instant,
}

/// A listening endpoint, shaped like `std::net::TcpListener`.
///
/// [`try_clone`](ShmListener::try_clone) gives handles that share
/// everything (backlog, non-blocking mode, accept timeout), as clones of a
/// socket share its open file description.
pub struct ShmListener {
    inner: Arc<Inner>,
}

struct Inner {
    ep: Arc<Endpoint>,
    rv: Rendezvous,
    addr: SockAddr,
    config: Config,
    pending: Mutex<PendSet>,
    /// The readiness descriptor (`AsFd`): an epoll set of the rendezvous
    /// socket (while the pending set has room) and the pending
    /// connections, so that it is readable when `accept` could make
    /// progress: a connection queued or a request arrived.
    epoll: OwnedFd,
    nonblocking: AtomicBool,
    timeout: Mutex<Option<Duration>>,
}

impl fmt::Debug for ShmListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShmListener")
            .field("addr", &self.inner.addr)
            .finish()
    }
}

/// Where `bind` to port 0 looks for a free port (Linux's default
/// ephemeral range).
const EPHEMERAL: std::ops::RangeInclusive<u32> = 32768..=60999;

impl ShmListener {
    /// Binds `addr` with the default [`Config`] (256 KiB buffer).
    /// `AddrInUse` if a live endpoint holds the port; port 0 picks a free
    /// port, which [`local_addr`](ShmListener::local_addr) tells.
    pub fn bind(addr: &SockAddr) -> io::Result<ShmListener> {
        Self::bind_with(addr, Config::default())
    }

    /// Binds `addr` with an explicit configuration.
    pub fn bind_with(addr: &SockAddr, config: Config) -> io::Result<ShmListener> {
        let ns = addr.namespace();
        let backlog = config.backlog.max(1);
        // Check the parameters before taking a name.
        config.params().layout()?;
        let (port, rv) = if addr.port() == 0 {
            let span = EPHEMERAL.end() - EPHEMERAL.start() + 1;
            let start = (raw::random_u64() % span as u64) as u32;
            let mut found = None;
            for i in 0..span {
                let port = EPHEMERAL.start() + (start + i) % span;
                match ns.listen(port, backlog) {
                    Ok(rv) => {
                        found = Some((port, rv));
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::AddrInUse => {}
                    Err(e) => return Err(e),
                }
            }
            found.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "manycore-sock: no free port in the ephemeral range",
                )
            })?
        } else {
            (addr.port(), ns.listen(addr.port(), backlog)?)
        };
        // Connectors may queue from here on; they are served once `accept`
        // runs, by then with the endpoint below.
        let ep = Endpoint::create(&format!("p{port}"), KIND_LISTENER, config.params())?;
        let epoll = raw::epoll()?;
        raw::epoll_watch(&epoll, rv.fd.as_fd(), true)?;
        Ok(ShmListener {
            inner: Arc::new(Inner {
                ep,
                rv,
                addr: ns.addr(port),
                config,
                pending: Mutex::new(PendSet {
                    v: Vec::new(),
                    rv_in: true,
                }),
                epoll,
                nonblocking: AtomicBool::new(false),
                timeout: Mutex::new(None),
            }),
        })
    }

    /// The bound address (with the port picked, if bound to port 0).
    pub fn local_addr(&self) -> io::Result<SockAddr> {
        Ok(self.inner.addr.clone())
    }

    /// A second handle to the same listener (shares its state and options).
    pub fn try_clone(&self) -> io::Result<ShmListener> {
        Ok(ShmListener {
            inner: self.inner.clone(),
        })
    }

    /// In non-blocking mode `accept` returns `WouldBlock` when nobody waits.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.nonblocking.store(nonblocking, Ordering::Relaxed);
        Ok(())
    }

    /// Bounds each `accept`: after it, `accept` returns `WouldBlock`, as
    /// `accept(2)` on a socket with `SO_RCVTIMEO` does. `None` waits
    /// forever; a zero duration is `InvalidInput`, std's rule for its
    /// sockets' timeouts (kept here as for the streams'); any other,
    /// `Duration::MAX` included, is accepted.
    pub fn set_accept_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        *lock(&self.inner.timeout) = t;
        Ok(())
    }

    /// The accept timeout.
    pub fn accept_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(*lock(&self.inner.timeout))
    }

    /// Iterates over incoming connections (`accept` in a loop).
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { l: self }
    }

    /// Takes the oldest connection from the backlog (waiting for one per the
    /// accept timeout and non-blocking mode) and completes its handshake:
    /// maps the connector's ring, allocates ours, replies. Whatever the
    /// connector wrote since its `connect` returned is there to read. A
    /// request that fails validation is refused and reported as
    /// `InvalidData` (the listener stays usable); a connector that died
    /// before posting its request is skipped. Concurrent calls take turns.
    pub fn accept(&self) -> io::Result<(ShmStream, PeerAddr)> {
        self.inner.accept()
    }
}

impl Inner {
    fn accept(&self) -> io::Result<(ShmStream, PeerAddr)> {
        let nb = self.nonblocking.load(Ordering::Relaxed);
        let deadline = if nb {
            Some(Instant::now())
        } else {
            lock(&self.timeout).and_then(deadline_after)
        };
        let cap = self.config.backlog.max(1) as usize;
        // Spin per the wait mode before sleeping in poll(2): a connector
        // that arrives within the budget costs no sleep, and no "sync"
        // wake-up that would move this thread to the connector's CPU (and
        // the stream that follows with it).
        let mut spin = SpinBudget::new(match self.config.wait_mode {
            WaitMode::Spin => Duration::from_millis(1),
            WaitMode::Hybrid { spin } => spin,
            WaitMode::Sleep => Duration::ZERO,
        });
        loop {
            let now = Instant::now();
            let mut guard = lock(&self.pending);
            let set = &mut *guard;
            let pend = &mut set.v;
            let unwatch = |p: Pending| {
                let _ = raw::epoll_watch(&self.epoll, p.sock.as_fd(), false);
                p.sock
            };
            // Connectors that died before posting their request make room
            // (looked for only when room is short: a poll per entry).
            if pend.len() >= cap {
                let mut i = 0;
                while i < pend.len() {
                    if raw::closed(&pend[i].sock) {
                        drop(unwatch(pend.remove(i)));
                    } else {
                        i += 1;
                    }
                }
            }
            while pend.len() < cap {
                match raw::accept(&self.rv.fd)? {
                    Some(sock) => {
                        raw::epoll_watch(&self.epoll, sock.as_fd(), true)?;
                        pend.push(Pending { sock, since: now });
                    }
                    None => break,
                }
            }
            // The rendezvous counts for readiness only while accept would
            // take from it.
            if set.rv_in != (pend.len() < cap) {
                set.rv_in = pend.len() < cap;
                raw::epoll_watch(&self.epoll, self.rv.fd.as_fd(), set.rv_in)?;
            }
            let mut buf = [0u8; 40];
            let mut i = 0;
            while i < pend.len() {
                match raw::recv_msg(&pend[i].sock, &mut buf) {
                    Ok(None) if now.duration_since(pend[i].since) < REQUEST_WAIT => i += 1,
                    Ok(None) | Err(_) => drop(unwatch(pend.remove(i))),
                    Ok(Some(m)) => {
                        // In arrival order (`remove`, not `swap_remove`):
                        // the backlog is first come, first served.
                        let sock = unwatch(pend.remove(i));
                        let served = handshake::serve(
                            &self.ep,
                            self.addr.namespace(),
                            self.config.wait_mode,
                            sock,
                            m,
                            &buf,
                        )?;
                        if let Served::Done(s, p) = served {
                            return Ok((s, p));
                        }
                    }
                }
            }
            if nb {
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            let left = deadline.map(|d| d.saturating_duration_since(now));
            if left == Some(Duration::ZERO) {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "manycore-sock: accept timed out",
                ));
            }
            if spin.spin() {
                continue;
            }
            // Sleep until a connection or a request arrives (or a pending
            // request's time is up).
            let mut wait = left.unwrap_or(ACCEPT_SLICE).min(ACCEPT_SLICE);
            if let Some(first) = pend.iter().map(|p| p.since).min() {
                wait = wait.min((first + REQUEST_WAIT).saturating_duration_since(now));
            }
            let mut fds = Vec::with_capacity(pend.len() + 1);
            if pend.len() < cap {
                fds.push(self.rv.fd.as_fd());
            }
            fds.extend(pend.iter().map(|p| p.sock.as_fd()));
            raw::poll_in(&fds, Some(wait));
        }
    }
}

/// Iterator over [`ShmListener::accept`] results; never ends.
#[derive(Debug)]
pub struct Incoming<'a> {
    l: &'a ShmListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<ShmStream>;
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.l.accept().map(|(s, _)| s))
    }
}

/// The listener's readiness descriptor, for an event loop to poll for
/// *readable*: an epoll set that is readable when `accept` can make
/// progress (a connection in the backlog, a pending connection's request
/// arrived or its connector gone). Set the listener non-blocking and call
/// `accept` until `WouldBlock` after each event. Only poll it.
impl AsFd for ShmListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.epoll.as_fd()
    }
}

impl AsRawFd for ShmListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.epoll.as_raw_fd()
    }
}
