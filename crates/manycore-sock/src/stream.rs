//! `ShmStream`: one rckSock connection, a pair of fragment rings, each in its
//! sender's buffer region (Clauss, Figure 4: chunks X and Y), with the
//! spin-then-sleep doorbell protocol of `README.md`.

use crate::config::WaitMode;
use crate::endpoint::{Endpoint, Liveness, TxSlot};
use crate::layout::FLAG_CLOSED;
use crate::namespace::Namespace;
use crate::region::Shm;
use crate::ring::{self, RingRef, RxState};
use manycore_sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use manycore_sync::{SharedEventCount, SpinBudget};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How often a sleeper wakes to check peer liveness and deadlines.
pub(crate) const SLICE: Duration = Duration::from_millis(20);
/// Spin slice of `WaitMode::Spin` between liveness checks.
const SPIN_SLICE: Duration = Duration::from_millis(10);

/// The peer of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAddr {
    /// The namespace both ends live in.
    pub namespace: Namespace,
    /// The peer's process id (as the kernel reported it for the connection).
    pub pid: u32,
    /// The peer's endpoint name (`p<port>` for a listener, `c<pid>-<n>` for
    /// a client endpoint).
    pub endpoint: String,
}

impl PeerAddr {
    /// The listener's address, if this names a listener's endpoint
    /// (`p<port>`); None for a client endpoint.
    pub fn as_sock_addr(&self) -> Option<crate::SockAddr> {
        let port = self.endpoint.strip_prefix('p')?.parse().ok()?;
        Some(self.namespace.addr(port))
    }

    /// True for a connector's end (a client endpoint has no port), as
    /// std's `SocketAddr::is_unnamed` is for an unbound Unix socket.
    pub fn is_unnamed(&self) -> bool {
        self.as_sock_addr().is_none()
    }
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} (pid {})", self.namespace, self.endpoint, self.pid)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Result of a bounded wait.
pub(crate) enum Waited {
    Ready,
    PeerDead,
    TimedOut,
}

/// Smallest adaptive spin budget of `WaitMode::Hybrid`.
const MIN_SPIN_NS: u32 = 2_000;

/// Spin hints for one waiting direction: an adaptive budget (doubled when a
/// spin succeeds, halved when it has to sleep) and the CPU the peer last ran
/// on (spinning against a peer on our own CPU only delays it).
pub(crate) struct SpinHint<'a> {
    pub budget_ns: &'a AtomicU32,
    pub peer_cpu: Option<&'a AtomicU32>,
}

impl SpinHint<'_> {
    /// Whether the peer last ran on our CPU (spinning would only delay it).
    fn colocated(&self) -> bool {
        self.peer_cpu
            .is_some_and(|c| c.load(Ordering::Relaxed) == crate::raw::current_cpu())
    }
}

/// How long a wait under `mode` spins before it sleeps: the whole budget of
/// `Spin` or `Hybrid` (the adaptive one, if there is a hint), nothing under
/// `Sleep` or, for `Hybrid`, when the peer last ran on our CPU.
fn spin_for(mode: WaitMode, hint: Option<&SpinHint<'_>>, colocated: bool) -> Duration {
    match mode {
        WaitMode::Spin => SPIN_SLICE,
        WaitMode::Hybrid { .. } if colocated => Duration::ZERO,
        WaitMode::Hybrid { spin } => match hint {
            Some(h) => Duration::from_nanos(h.budget_ns.load(Ordering::Relaxed) as u64).min(spin),
            None => spin,
        },
        WaitMode::Sleep => Duration::ZERO,
    }
}

/// Adapts a `Hybrid` wait's budget after a spin: doubled if the spin found
/// what it waited for (`ok`), halved (down to `MIN_SPIN_NS`) if it had to
/// sleep.
fn adapt(mode: WaitMode, hint: Option<&SpinHint<'_>>, ok: bool) {
    if let (WaitMode::Hybrid { spin: max }, Some(h)) = (mode, hint) {
        let max = max.as_nanos().min(u32::MAX as u128) as u32;
        let b = h.budget_ns.load(Ordering::Relaxed).min(max);
        let nb = if ok {
            b.saturating_mul(2).min(max)
        } else {
            (b / 2).max(MIN_SPIN_NS.min(max))
        };
        h.budget_ns.store(nb, Ordering::Relaxed);
    }
}

/// How often a waiter whose peer last ran on its own CPU yields it (under
/// `Hybrid`, then sleeps; under `Spin`, then checks liveness and deadlines).
const COLOCATED_YIELDS: u32 = 16;
const COLOCATED_YIELDS_SPIN: u32 = 64;

/// What an event loop's direction does before it arms ([`Conn::poll_spin`]).
#[cfg(feature = "tokio")]
pub(crate) enum PollSpin {
    /// Arms at once.
    None,
    /// Polls the ring for this long.
    Spin(Duration),
    /// Yields the CPU (to the peer) up to this many times, polling between.
    Yield(u32),
}

/// Waits until `check` says ready: spin per `mode`, then announce on `ec`,
/// re-check, and sleep in slices, checking `peer` between slices. `check`
/// errors are returned (after withdrawing any announcement).
pub(crate) fn wait_on(
    mode: WaitMode,
    deadline: Option<Instant>,
    ec: &SharedEventCount,
    peer: &Liveness,
    hint: Option<SpinHint<'_>>,
    mut check: impl FnMut() -> io::Result<bool>,
) -> io::Result<Waited> {
    let colocated = hint.as_ref().is_some_and(SpinHint::colocated);
    // A spin never outlasts the deadline: under a long `Hybrid` budget
    // (under `Duration::MAX` the adaptive one starts at 4.3 s) a timeout
    // would otherwise expire only once the spin ran out.
    let spin = spin_for(mode, hint.as_ref(), colocated);
    let spin = deadline.map_or(spin, |d| {
        spin.min(d.saturating_duration_since(Instant::now()))
    });
    let adapt = |ok: bool| adapt(mode, hint.as_ref(), ok);
    let mut first = true;
    loop {
        let mut budget = SpinBudget::new(spin);
        let mut i = 0u32;
        loop {
            if check()? {
                if first && !spin.is_zero() && !colocated {
                    adapt(true);
                }
                return Ok(Waited::Ready);
            }
            if colocated && mode != WaitMode::Sleep {
                // The peer needs our CPU: give it away rather than spin (a
                // bounded number of times; Hybrid then sleeps on the futex).
                let most = match mode {
                    WaitMode::Spin => COLOCATED_YIELDS_SPIN,
                    _ => COLOCATED_YIELDS,
                };
                if i >= most {
                    break;
                }
                std::thread::yield_now();
                i += 1;
                continue;
            }
            if !budget.spin() {
                break;
            }
        }
        if first && !spin.is_zero() && !colocated {
            adapt(false);
        }
        first = false;
        if mode == WaitMode::Spin {
            std::thread::yield_now();
        } else {
            let key = ec.prepare_wait();
            match check() {
                Ok(true) => {
                    ec.cancel_wait();
                    return Ok(Waited::Ready);
                }
                Err(e) => {
                    ec.cancel_wait();
                    return Err(e);
                }
                Ok(false) => {}
            }
            let slice = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
                None => SLICE,
            };
            ec.wait_timeout(key, slice);
        }
        if check()? {
            return Ok(Waited::Ready);
        }
        if peer.dead() {
            return Ok(Waited::PeerDead);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Waited::TimedOut);
        }
    }
}

/// Bits of `Conn::shut`: `shutdown(Read)` was called (reads return 0).
const SHUT_RD: u8 = 1;
/// `shutdown(Write)` was called (writes fail with `BrokenPipe`).
const SHUT_WR: u8 = 2;

pub(crate) struct Conn {
    pub ep: Arc<Endpoint>,
    pub tx: Arc<TxSlot>,
    /// The ring we read, in the peer's region: known from the start for an
    /// accepted stream, set once by `establish` for a connector when the
    /// listener's reply arrives (the connection waited in the backlog until
    /// then).
    pub rxs: OnceLock<RxSide>,
    /// A connector's handshake outcome while it is pending: `None` until a
    /// reply or a hang-up arrives, then the failure, if any. Held while the
    /// reply is taken, so that `shutdown(Read)` and `establish` agree on who
    /// raises the peer's consumer flag.
    pub hs: Mutex<Option<(io::ErrorKind, String)>>,
    pub rx: Mutex<RxState>,
    pub live: Arc<Liveness>,
    pub peer_addr: PeerAddr,
    pub mode: Mutex<WaitMode>,
    pub read_timeout: Mutex<Option<Duration>>,
    pub write_timeout: Mutex<Option<Duration>>,
    /// `set_nonblocking`; Relaxed both ways (it orders nothing).
    pub nonblocking: AtomicBool,
    /// `SHUT_RD | SHUT_WR` bits, each set once by `fetch_or` (Relaxed) in
    /// `shutdown`, which acts only on the bits it newly set (closing our
    /// ring, or raising the peer's consumer flag). Process-local: the peer
    /// learns of a shutdown through the lines' `flags`.
    pub shut: AtomicU8,
    /// Set (Relaxed, never cleared) once the peer was seen dead;
    /// `probed` rate-limits the probes of `live` by calls that never wait,
    /// per direction (0 read, 1 write), so that one direction's probes do
    /// not put off the other's.
    pub dead: AtomicBool,
    pub probed: [Mutex<Instant>; 2],
    /// `take_error` reported the handshake's failure (Relaxed).
    pub error_taken: AtomicBool,
    /// Someone took the readiness descriptor (`AsFd`, `AsRawFd`) to poll
    /// it: from then on a non-blocking call that returns `WouldBlock` arms
    /// its direction (see "Readiness" in `README.md`). Relaxed, never
    /// cleared.
    pub polled: AtomicBool,
    /// The read direction is armed (under `rx`; mirrored here, Relaxed, so
    /// that a read checks it without a look at shared memory).
    pub read_armed: AtomicBool,
    /// The write direction is armed (under `tx.tx`, mirrored likewise).
    pub write_armed: AtomicBool,
    /// The last non-blocking write that returned `WouldBlock` could not arm
    /// (it waits for a shrinking neighbour's ring, whose wake-ups go to
    /// that ring's peer): an event loop must retry on its own.
    pub write_unarmed: AtomicBool,
    /// Adaptive spin budgets (ns) of the read and write waits.
    pub rx_spin: AtomicU32,
    pub tx_spin: AtomicU32,
}

/// The one-byte message that rings a peer's readiness descriptor.
const DOORBELL: u8 = 0xdb;

/// How long a connector's first read spins for the listener's reply before
/// it sleeps in poll(2).
const REPLY_SPIN: Duration = Duration::from_micros(200);

/// How often a call that never waits (a writer that never has to, a
/// non-blocking reader nobody polls for) probes the peer's liveness.
const PROBE_EVERY: Duration = Duration::from_millis(20);

/// The ring a new connection reads: in the peer's region, as the handshake
/// announced it (validated against the region's layout by the caller).
pub(crate) struct RxRing {
    pub idx: u32,
    pub base: u32,
    pub chunk: u32,
}

/// The ring we read and the peer region it lives in.
pub(crate) struct RxSide {
    pub peer: Arc<Shm>,
    pub ring: RxRing,
}

impl RxSide {
    fn ring(&self) -> io::Result<RingRef<'_, Shm>> {
        RingRef::new(&*self.peer, self.ring.idx, self.ring.base)
            .ok_or_else(|| ring::invalid("slot"))
    }
    /// Tells the writer that we read no more (it gets `BrokenPipe`).
    fn close_reader(&self) {
        if let Ok(r) = self.ring() {
            // Release; pairs with the Acquire in the peer's `reader_closed`.
            r.slot.cons.flags.store(FLAG_CLOSED, Ordering::Release);
            r.slot.cons.space_ec.notify_all();
            r.slot.prod.data_ec.notify_all();
        }
    }
}

impl Conn {
    /// A stream: our sending ring `tx` in `ep`, the ring `rx` we read (None
    /// for a connector until the listener's reply arrives), and the
    /// connection's socket `live`.
    pub(crate) fn stream(
        ep: Arc<Endpoint>,
        tx: Arc<TxSlot>,
        rx: Option<RxSide>,
        live: Liveness,
        peer_addr: PeerAddr,
        mode: WaitMode,
    ) -> ShmStream {
        let live = Arc::new(live);
        let _ = tx.live.set(live.clone());
        let chunk = rx.as_ref().map_or(0, |r| r.ring.chunk);
        let rxs = OnceLock::new();
        if let Some(r) = rx {
            let _ = rxs.set(r);
        }
        let conn = Conn {
            ep,
            tx,
            rxs,
            hs: Mutex::new(None),
            rx: Mutex::new(RxState {
                chunk,
                ..RxState::default()
            }),
            live,
            peer_addr,
            mode: Mutex::new(mode),
            read_timeout: Mutex::new(None),
            write_timeout: Mutex::new(None),
            nonblocking: AtomicBool::new(false),
            shut: AtomicU8::new(0),
            dead: AtomicBool::new(false),
            probed: [Mutex::new(Instant::now()), Mutex::new(Instant::now())],
            error_taken: AtomicBool::new(false),
            polled: AtomicBool::new(false),
            read_armed: AtomicBool::new(false),
            write_armed: AtomicBool::new(false),
            write_unarmed: AtomicBool::new(false),
            rx_spin: AtomicU32::new(u32::MAX),
            tx_spin: AtomicU32::new(u32::MAX),
        };
        ShmStream { c: Arc::new(conn) }
    }

    /// Tells the peer which CPU we run on (its spin hint).
    fn publish_cpu(&self) {
        if let Some(s) = self.ep.shm.slot(self.tx.idx) {
            let c = crate::raw::current_cpu();
            if s.prod.cpu.load(Ordering::Relaxed) != c {
                s.prod.cpu.store(c, Ordering::Relaxed);
            }
        }
    }

    /// True if the peer is known dead (probing at most every `PROBE_EVERY`
    /// per direction; `write`: for the writer).
    fn peer_dead(&self, write: bool) -> bool {
        if self.dead.load(Ordering::Relaxed) {
            return true;
        }
        let now = Instant::now();
        {
            let mut l = lock(&self.probed[write as usize]);
            if now.duration_since(*l) < PROBE_EVERY {
                return false;
            }
            *l = now;
        }
        self.mark_dead_if(self.live.dead())
    }
    fn mark_dead_if(&self, d: bool) -> bool {
        if d {
            self.dead.store(true, Ordering::Relaxed);
        }
        d
    }

    fn txr(&self) -> io::Result<RingRef<'_, Shm>> {
        RingRef::new(&*self.ep.shm, self.tx.idx, self.tx.base).ok_or_else(|| ring::invalid("slot"))
    }
    /// The spin hint of a waiting direction (`write`: the writer): its
    /// adaptive budget, and the CPU the peer last ran on, which it
    /// publishes in the ring we read.
    #[cfg(feature = "tokio")]
    fn hint(&self, write: bool) -> SpinHint<'_> {
        SpinHint {
            budget_ns: if write { &self.tx_spin } else { &self.rx_spin },
            peer_cpu: self
                .rxs
                .get()
                .and_then(|s| s.ring().ok())
                .map(|r| &r.slot.prod.cpu),
        }
    }

    /// For an event loop (`AsyncShmStream`): what a direction whose call
    /// returned `WouldBlock` does before it arms, as a blocking wait of the
    /// stream's wait mode does before it sleeps: spin (the whole budget of
    /// `Spin`, `Hybrid`'s adaptive one), or, when the peer last ran on our
    /// CPU, give the CPU away a bounded number of times; nothing under
    /// `Sleep`.
    #[cfg(feature = "tokio")]
    pub(crate) fn poll_spin(&self, write: bool) -> PollSpin {
        let mode = *lock(&self.mode);
        let h = self.hint(write);
        match mode {
            WaitMode::Sleep => PollSpin::None,
            WaitMode::Spin if h.colocated() => PollSpin::Yield(COLOCATED_YIELDS_SPIN),
            WaitMode::Hybrid { .. } if h.colocated() => PollSpin::Yield(COLOCATED_YIELDS),
            _ => PollSpin::Spin(spin_for(mode, Some(&h), false)),
        }
    }

    /// Adapts the budget of a [`PollSpin::Spin`] after the spin: it made
    /// progress (`ok`) or had to arm.
    #[cfg(feature = "tokio")]
    pub(crate) fn poll_spun(&self, write: bool, ok: bool) {
        adapt(*lock(&self.mode), Some(&self.hint(write)), ok);
    }

    /// Rings the peer's readiness descriptor (its end of our socket): one
    /// byte, never waiting. A full socket already holds a doorbell, so a
    /// failed send loses nothing.
    fn ring_doorbell(&self) {
        if let Liveness::Socket(s) = &*self.live {
            let _ = crate::raw::send_msg(s, &[DOORBELL], None);
        }
    }

    /// Empties our socket of doorbells before arming, so that the next one
    /// makes it readable anew (an edge for edge-triggered pollers). Only
    /// once the connection is established: until then the socket holds
    /// the listener's reply, which `establish` takes. False if the drain
    /// stopped at something other than an empty queue (or its bound): an
    /// end of file or an error, which a socket whose peer's end closed
    /// returns (see `gone_before_arming`).
    fn drain_doorbells(&self) -> bool {
        let Liveness::Socket(s) = &*self.live else {
            return true;
        };
        if self.rxs.get().is_none() {
            return true;
        }
        let mut b = [0u8; 8];
        for _ in 0..1024 {
            match crate::raw::recv_msg(s, &mut b) {
                Ok(Some(m)) if m.len > 0 => {}
                Ok(None) => return true,
                _ => return false,
            }
        }
        true
    }

    /// A polled stream's non-blocking call that found nothing to do, before
    /// it arms: drains the doorbells, and tells whether the peer is gone.
    /// The peer's death hangs up the socket, which wakes the poller (a
    /// hang-up makes a descriptor readable) but rings no doorbell, so the
    /// call that follows the wake-up must see it here, or it would arm
    /// again and wait for a doorbell that never comes (a level-triggered
    /// poller, or tokio, which keeps a hang-up as a final state, would
    /// spin). The drain reads the socket anyway, and stops at an end of
    /// file or an error instead of an empty queue only if the peer's end
    /// closed (or a hostile peer sent an empty message): only then does it
    /// probe (`Liveness::dead`), so a live peer costs nothing more.
    fn gone_before_arming(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
            || (!self.drain_doorbells() && self.mark_dead_if(self.live.dead()))
    }

    /// The ring we read, if the connection is established. A connector
    /// takes the listener's reply here once it has come (without waiting);
    /// a failed handshake is returned as its error.
    fn establish(&self) -> io::Result<Option<&RxSide>> {
        if let Some(s) = self.rxs.get() {
            return Ok(Some(s));
        }
        let mut hs = lock(&self.hs);
        if let Some(s) = self.rxs.get() {
            return Ok(Some(s));
        }
        if let Some((kind, why)) = &*hs {
            return Err(io::Error::new(*kind, why.clone()));
        }
        let Liveness::Socket(sock) = &*self.live else {
            return Err(ring::invalid("connection without a socket"));
        };
        match crate::handshake::take_reply(sock, &self.peer_addr.endpoint) {
            Ok(None) => Ok(None),
            Ok(Some(side)) => {
                let side = self.rxs.get_or_init(|| side);
                // Under `hs`: a `shutdown(Read)` before the reply left the
                // raising of the peer's consumer flag to us.
                if self.shut.load(Ordering::Relaxed) & SHUT_RD != 0 {
                    side.close_reader();
                }
                Ok(Some(side))
            }
            Err(e) => {
                *hs = Some((e.kind(), e.to_string()));
                Err(e)
            }
        }
    }

    /// Waits (per `nb` and `deadline`) until the connection is established:
    /// a connector whose connection still waits in the listener's backlog
    /// sleeps on its socket, where the reply (or a hang-up) arrives.
    fn established(&self, nb: bool, deadline: Option<Instant>) -> io::Result<&RxSide> {
        // Spin first: a reply that comes within the budget costs no sleep,
        // and no wake-up through the socket. That is a "sync" wake-up, which
        // moves this thread to the listener's CPU, and the stream that
        // follows would run both ends there.
        let mut spin = SpinBudget::new(REPLY_SPIN);
        loop {
            if let Some(s) = self.establish()? {
                return Ok(s);
            }
            if nb {
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Err(self.timed_out());
            }
            if spin.spin() {
                continue;
            }
            if let Liveness::Socket(sock) = &*self.live {
                crate::raw::poll_in(&[sock.as_fd()], Some(left.unwrap_or(SLICE).min(SLICE)));
            }
        }
    }
    fn deadline(&self, t: &Mutex<Option<Duration>>) -> Option<Instant> {
        lock(t).and_then(deadline_after)
    }
    /// An expired read or write timeout: `WouldBlock`, as `EAGAIN` from a
    /// Unix socket with `SO_RCVTIMEO`/`SO_SNDTIMEO` (what std returns).
    fn timed_out(&self) -> io::Error {
        io::Error::new(io::ErrorKind::WouldBlock, "manycore-sock: timed out")
    }

    /// Reads (`peek`: copies without consuming). With `wait` false it never
    /// waits (the second and later buffers of a vectored read).
    fn read(&self, buf: &mut [u8], peek: bool, wait: bool) -> io::Result<usize> {
        if buf.is_empty() || self.shut.load(Ordering::Relaxed) & SHUT_RD != 0 {
            return Ok(0);
        }
        let nb = !wait || self.nonblocking.load(Ordering::Relaxed);
        let deadline = if nb {
            Some(Instant::now())
        } else {
            self.deadline(&self.read_timeout)
        };
        let side = self.established(nb, deadline)?;
        let r = side.ring()?;
        self.publish_cpu();
        let mut rx = lock(&self.rx);
        if rx.chunk == 0 {
            rx.chunk = side.ring.chunk;
        }
        if self.read_armed.load(Ordering::Relaxed) {
            let mut armed = true;
            ring::disarm_reader(&r, &mut armed);
            self.read_armed.store(false, Ordering::Relaxed);
        }
        let mode = *lock(&self.mode);
        let take = |rx: &mut RxState, buf: &mut [u8]| {
            if peek {
                ring::try_peek(&r, rx, buf)
            } else {
                ring::try_read(&r, rx, buf)
            }
        };
        // The peer died: what it committed before, then EOF if it had
        // closed first, else `ConnectionReset`.
        let died = |rx: &mut RxState, buf: &mut [u8]| {
            self.mark_dead_if(true);
            let n = take(rx, buf)?;
            if n > 0 {
                return Ok(n);
            }
            if ring::writer_closed(&r)? {
                rx.eof = true;
                return Ok(0);
            }
            Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "manycore-sock: peer died",
            ))
        };
        loop {
            let n = take(&mut rx, buf);
            if std::mem::take(&mut rx.rang) && ring::writer_polls(&r) {
                self.ring_doorbell();
            }
            let n = n?;
            if n > 0 {
                return Ok(n);
            }
            if rx.eof {
                return Ok(0);
            }
            if ring::writer_closed(&r)? {
                if !ring::reader_has_data(&r, &mut rx)? {
                    rx.eof = true;
                    return Ok(0);
                }
                continue;
            }
            if nb {
                // The caller's own call (not a spin's look, nor a vectored
                // read's later buffer) learns of a dead peer, as a blocking
                // one would: from the drain before it arms if polled, else
                // by a probe at most every `PROBE_EVERY`.
                if wait {
                    let polled = self.polled.load(Ordering::Relaxed);
                    let gone = match polled {
                        true => self.gone_before_arming(),
                        false => self.peer_dead(false),
                    };
                    if gone {
                        return died(&mut rx, buf);
                    }
                    if polled {
                        // An event loop will wait on our socket: arm, and
                        // read after all if the data came meanwhile.
                        let mut armed = false;
                        let ready = ring::arm_reader(&r, &mut rx, &mut armed);
                        if !matches!(ready, Ok(false)) {
                            ring::disarm_reader(&r, &mut armed);
                            ready?;
                            continue;
                        }
                        self.read_armed.store(true, Ordering::Relaxed);
                    }
                }
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            let ec = &r.slot.prod.data_ec;
            let hint = SpinHint {
                budget_ns: &self.rx_spin,
                peer_cpu: Some(&r.slot.prod.cpu),
            };
            let w = wait_on(mode, deadline, ec, &self.live, Some(hint), || {
                Ok(ring::reader_has_data(&r, &mut rx)? || ring::writer_closed(&r)?)
            })?;
            match w {
                Waited::Ready => {}
                Waited::PeerDead => return died(&mut rx, buf),
                Waited::TimedOut => return Err(self.timed_out()),
            }
        }
    }

    /// Writes; with `wait` false it never waits (the second and later
    /// buffers of a vectored write).
    fn write(&self, buf: &[u8], wait: bool) -> io::Result<usize> {
        if self.shut.load(Ordering::Relaxed) & SHUT_WR != 0 {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "manycore-sock: write side shut down",
            ));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let r = self.txr()?;
        // A connector whose connection waits in the backlog writes into its
        // own ring all the same (the listener reads it once it accepts);
        // a failed handshake shows here.
        let rxs = match self.establish() {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(e),
            Err(e) => return Err(io::Error::new(io::ErrorKind::BrokenPipe, e.to_string())),
        };
        self.publish_cpu();
        let mut tx = lock(&self.tx.tx);
        if self.write_armed.load(Ordering::Relaxed) {
            let mut armed = true;
            ring::disarm_writer(&r, &mut armed);
            self.write_armed.store(false, Ordering::Relaxed);
        }
        let nb = !wait || self.nonblocking.load(Ordering::Relaxed);
        let deadline = if nb {
            Some(Instant::now())
        } else {
            self.deadline(&self.write_timeout)
        };
        let mode = *lock(&self.mode);
        if !tx.ready {
            if let Err(e) = self.wait_ready(mode, deadline) {
                if e.kind() == io::ErrorKind::WouldBlock {
                    self.write_unarmed.store(true, Ordering::Relaxed);
                }
                return Err(e);
            }
            tx.ready = true;
        }
        loop {
            if ring::reader_closed(&r)? {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "manycore-sock: peer closed",
                ));
            }
            if self.peer_dead(true) {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "manycore-sock: peer died",
                ));
            }
            let desired = self.tx.alloc.load(Ordering::Relaxed);
            let res = ring::try_write(&r, &mut tx, desired, buf);
            Endpoint::publish_extent(&self.tx, tx.chunk);
            if std::mem::take(&mut tx.rang) && ring::reader_polls(&r) {
                self.ring_doorbell();
            }
            let n = res?;
            if n > 0 {
                return Ok(n);
            }
            if nb {
                if wait && self.polled.load(Ordering::Relaxed) {
                    // Unpolled, the probe above covers a dead peer.
                    if self.gone_before_arming() {
                        return Err(io::Error::new(
                            io::ErrorKind::BrokenPipe,
                            "manycore-sock: peer died",
                        ));
                    }
                    let mut armed = false;
                    let ready = ring::arm_writer(&r, &mut tx, desired, &mut armed);
                    if !matches!(ready, Ok(false)) {
                        ring::disarm_writer(&r, &mut armed);
                        ready?;
                        continue;
                    }
                    self.write_armed.store(true, Ordering::Relaxed);
                }
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            ring::writer_wants_half(&r, &tx);
            let ec = &r.slot.cons.space_ec;
            let peer = rxs.and_then(|s| s.ring().ok());
            let peer_cpu = peer.as_ref().map(|p| &p.slot.prod.cpu);
            let hint = SpinHint {
                budget_ns: &self.tx_spin,
                peer_cpu,
            };
            let w = wait_on(mode, deadline, ec, &self.live, Some(hint), || {
                let d = self.tx.alloc.load(Ordering::Relaxed);
                Ok(ring::reader_closed(&r)? || ring::writer_can_progress(&r, &mut tx, d)?)
            })?;
            match w {
                Waited::Ready => {}
                Waited::PeerDead => {
                    self.mark_dead_if(true);
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "manycore-sock: peer died",
                    ));
                }
                Waited::TimedOut => return Err(self.timed_out()),
            }
        }
    }

    /// `read_vectored`: fills the buffers in order; only the first non-empty
    /// one may wait, the rest take what is there already.
    fn read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        let mut it = bufs.iter_mut().filter(|b| !b.is_empty());
        let Some(first) = it.next() else {
            return Ok(0);
        };
        let mut n = self.read(first, false, true)?;
        if n < first.len() {
            return Ok(n);
        }
        for b in it {
            match self.read(b, false, false) {
                Ok(k) => {
                    n += k;
                    if k < b.len() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        Ok(n)
    }

    /// `write_vectored`: writes the buffers in order; only the first
    /// non-empty one may wait, the rest go in as far as there is room.
    fn write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut it = bufs.iter().filter(|b| !b.is_empty());
        let Some(first) = it.next() else {
            return self.write(&[], true);
        };
        let mut n = self.write(first, true)?;
        if n < first.len() {
            return Ok(n);
        }
        for b in it {
            match self.write(b, false) {
                Ok(k) => {
                    n += k;
                    if k < b.len() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        Ok(n)
    }

    /// Waits until no shrinking neighbour still has data in our new block.
    fn wait_ready(&self, mode: WaitMode, deadline: Option<Instant>) -> io::Result<()> {
        loop {
            let Some(b) = self.ep.blocker(&self.tx) else {
                return Ok(());
            };
            self.ep.try_apply(&b);
            let Some(br) = RingRef::new(&*self.ep.shm, b.idx, b.base) else {
                return Ok(());
            };
            let ec = &br.slot.cons.space_ec;
            let w = wait_on(mode, deadline, ec, &Liveness::Never, None, || {
                self.ep.try_apply(&b);
                Ok(self.ep.blocker(&self.tx).is_none())
            })?;
            if let Waited::TimedOut = w {
                return Err(self.timed_out());
            }
        }
    }

    fn shutdown(&self, how: Shutdown) {
        let bits = match how {
            Shutdown::Read => SHUT_RD,
            Shutdown::Write => SHUT_WR,
            Shutdown::Both => SHUT_RD | SHUT_WR,
        };
        let old = self.shut.fetch_or(bits, Ordering::Relaxed);
        let new = bits & !old;
        if new & SHUT_WR != 0 {
            self.ep.close_tx(&self.tx);
        }
        if new & SHUT_RD != 0 {
            // Under `hs`: if the reply has not come yet, `establish` raises
            // the flag when it does.
            let _hs = lock(&self.hs);
            if let Some(side) = self.rxs.get() {
                side.close_reader();
            }
        }
        if new != 0 && self.rxs.get().is_some() {
            // After the flags: a peer that polls learns of the shutdown
            // (EOF, or BrokenPipe on its writes) through its readiness
            // descriptor.
            self.ring_doorbell();
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Withdraw a poller's announcements: the peer need not ring us any
        // more.
        if self.read_armed.load(Ordering::Relaxed) {
            if let Some(r) = self.rxs.get().and_then(|s| s.ring().ok()) {
                ring::disarm_reader(&r, &mut true);
            }
        }
        if self.write_armed.load(Ordering::Relaxed) {
            if let Ok(r) = self.txr() {
                ring::disarm_writer(&r, &mut true);
            }
        }
        self.shutdown(Shutdown::Both);
        if self.rxs.get().is_none() {
            // A connector dropped while its connection waits in the
            // backlog: the listener can no longer learn of it through our
            // consumer flag, so say so on the socket. Its end reports a
            // hang-up (`Liveness::dead`); what we wrote stays readable.
            if let Liveness::Socket(s) = &*self.live {
                let _ = crate::raw::shutdown_write(s);
            }
        }
        self.ep.retire(self.tx.clone(), self.live.clone());
    }
}

/// A connected socket over shared memory, shaped like `std::net::TcpStream`.
///
/// Reads and writes may run on two threads at once (via
/// [`try_clone`](ShmStream::try_clone)); concurrent readers (or writers) are
/// serialised. Dropping the last clone closes the connection: the peer reads
/// EOF once it has drained the data, and its writes fail with `BrokenPipe`.
pub struct ShmStream {
    pub(crate) c: Arc<Conn>,
}

impl fmt::Debug for ShmStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShmStream")
            .field("local", &self.c.ep.shm.name)
            .field("peer", &self.c.peer_addr)
            .field("tx_chunk", &self.c.tx.alloc.load(Ordering::Relaxed))
            .finish()
    }
}

impl ShmStream {
    /// A read that neither waits nor arms (`AsyncShmStream`'s spin).
    #[cfg(feature = "tokio")]
    pub(crate) fn read_no_arm(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.c.read(buf, false, false)
    }

    /// A write that neither waits nor arms (`AsyncShmStream`'s spin).
    #[cfg(feature = "tokio")]
    pub(crate) fn write_no_arm(&self, buf: &[u8]) -> io::Result<usize> {
        self.c.write(buf, false)
    }

    /// Connects to a listener. Returns once the listener's backlog holds the
    /// connection (as `connect(2)` does), without waiting for `accept`:
    /// what is written meanwhile waits in the connection's buffer, and the
    /// first read waits for the listener to accept. `ConnectionRefused` if
    /// nobody listens or the backlog is full.
    pub fn connect(addr: &crate::SockAddr) -> io::Result<ShmStream> {
        crate::handshake::connect(addr)
    }

    /// Connects like [`connect`](ShmStream::connect), which never waits
    /// (the backlog takes the connection or refuses it at once); the
    /// timeout is only checked, as `TcpStream::connect_timeout` checks it.
    /// A zero `timeout` is `InvalidInput`, as in std; any other is accepted.
    pub fn connect_timeout(addr: &crate::SockAddr, timeout: Duration) -> io::Result<ShmStream> {
        check_timeout(Some(timeout))?;
        crate::handshake::connect(addr)
    }

    /// A connected pair of streams, as `UnixStream::pair`: made through a
    /// listener of a fresh private namespace, dropped once it has accepted.
    pub fn pair() -> io::Result<(ShmStream, ShmStream)> {
        let l = crate::ShmListener::bind(&crate::Namespace::private().addr(0))?;
        let a = ShmStream::connect(&l.local_addr()?)?;
        l.set_nonblocking(true)?;
        // The connection is in the backlog already: accept does not wait.
        let (b, _) = l.accept()?;
        Ok((a, b))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<PeerAddr> {
        Ok(self.c.peer_addr.clone())
    }

    /// This end's address: the listener's endpoint (`p<port>`) for an
    /// accepted stream, the process's client endpoint (`c<pid>-<n>`, which
    /// [`PeerAddr::is_unnamed`] reports as unnamed) for a connector.
    pub fn local_addr(&self) -> io::Result<PeerAddr> {
        Ok(PeerAddr {
            namespace: self.c.peer_addr.namespace.clone(),
            pid: crate::raw::getpid(),
            endpoint: self.c.ep.shm.name.clone(),
        })
    }

    /// Reads without consuming: the next `read` returns the same bytes.
    /// Waits as `read` does (timeout, non-blocking mode).
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.c.read(buf, true, true)
    }

    /// True: `write_vectored` writes several buffers in one call (std's
    /// `Write::is_write_vectored` is unstable, hence an inherent method).
    pub fn is_write_vectored(&self) -> bool {
        true
    }

    /// True: `read_vectored` fills several buffers in one call.
    pub fn is_read_vectored(&self) -> bool {
        true
    }

    /// The error of a connection the listener refused or answered with an
    /// invalid reply after `connect` had returned (reported once; reads
    /// and writes keep failing), like `SO_ERROR`. `Ok(None)` otherwise.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        if self.c.rxs.get().is_none() {
            let _ = self.c.establish();
        }
        let hs = lock(&self.c.hs);
        match &*hs {
            Some((kind, why)) if !self.c.error_taken.swap(true, Ordering::Relaxed) => {
                Ok(Some(io::Error::new(*kind, why.clone())))
            }
            _ => Ok(None),
        }
    }

    /// A second handle to the same connection (shares options and state).
    pub fn try_clone(&self) -> io::Result<ShmStream> {
        Ok(ShmStream { c: self.c.clone() })
    }

    /// Shuts down reading, writing, or both (the peer sees EOF after a write
    /// shutdown and `BrokenPipe` on writing after a read shutdown).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.c.shutdown(how);
        Ok(())
    }

    /// In non-blocking mode, operations that would wait return `WouldBlock`.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.c.nonblocking.store(nonblocking, Ordering::Relaxed);
        Ok(())
    }

    /// Read timeout (`None`: wait forever). A zero duration is refused
    /// with `InvalidInput`: that is std's rule (`UnixStream::set_read_timeout`),
    /// kept so that code written for std behaves the same. Any other
    /// duration, `Duration::MAX` included, is accepted and saturates.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        *lock(&self.c.read_timeout) = t;
        Ok(())
    }

    /// Write timeout (`None`: wait forever). A zero duration is refused
    /// with `InvalidInput`: that is std's rule (`UnixStream::set_write_timeout`),
    /// kept so that code written for std behaves the same. Any other
    /// duration, `Duration::MAX` included, is accepted and saturates.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        *lock(&self.c.write_timeout) = t;
        Ok(())
    }

    /// The read timeout.
    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(*lock(&self.c.read_timeout))
    }

    /// The write timeout.
    pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(*lock(&self.c.write_timeout))
    }

    /// How blocked operations wait (spin, hybrid (default), sleep).
    pub fn set_wait_mode(&self, mode: WaitMode) {
        *lock(&self.c.mode) = mode;
    }

    /// The current wait mode.
    pub fn wait_mode(&self) -> WaitMode {
        *lock(&self.c.mode)
    }

    /// The sender chunk size this side currently writes with (its buddy block;
    /// a split halves it, a merge doubles it).
    pub fn send_chunk(&self) -> u32 {
        self.c.tx.alloc.load(Ordering::Relaxed)
    }

    /// The chunk size the peer last announced in a fragment header (before
    /// the first fragment: the one of the handshake, or 0 while a
    /// connector's connection waits in the listener's backlog).
    pub fn recv_chunk(&self) -> u32 {
        match lock(&self.c.rx).chunk {
            0 => self.c.rxs.get().map_or(0, |s| s.ring.chunk),
            c => c,
        }
    }
}

impl Read for ShmStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.c.read(buf, false, true)
    }
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        self.c.read_vectored(bufs)
    }
}

impl Read for &ShmStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.c.read(buf, false, true)
    }
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        self.c.read_vectored(bufs)
    }
}

impl Write for ShmStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.c.write(buf, true)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.c.write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &ShmStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.c.write(buf, true)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.c.write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `Instant::now() + d`, or None (no deadline) where that is beyond what an
/// `Instant` can hold: every `Duration` is a valid timeout.
pub(crate) fn deadline_after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Refuses a zero timeout, as std's sockets do (`InvalidInput`); any other
/// duration, `Duration::MAX` included, is accepted.
pub(crate) fn check_timeout(t: Option<Duration>) -> io::Result<()> {
    if t == Some(Duration::ZERO) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot set a 0 duration timeout",
        ));
    }
    Ok(())
}

/// The stream's readiness descriptor: its end of the connection's Unix
/// socket, for an event loop to poll for *readable* (mio, tokio's
/// `AsyncFd`, async-io). It becomes readable when the stream may make
/// progress in a direction whose non-blocking call last returned
/// `WouldBlock`: data or EOF to read, room to write, the listener's reply,
/// or the peer gone (a hang-up, which stays: every call from then on
/// reports the death, as a blocking one would). Taking it marks the
/// stream as polled: from then on such a `WouldBlock` asks the peer to
/// ring the socket (see "Readiness" in `src/README.md`); a stream nobody
/// polls costs the peer nothing. Take it (register it) before the calls
/// whose `WouldBlock` it should report, as an edge-triggered loop does
/// anyway. Only poll it: reading from or writing to it breaks the
/// connection.
impl AsFd for ShmStream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.c.polled.store(true, Ordering::Relaxed);
        match &*self.c.live {
            Liveness::Socket(s) => s.as_fd(),
            // Streams are always made with their socket.
            Liveness::Never => unreachable!("a stream without a socket"),
        }
    }
}

impl std::os::fd::AsRawFd for ShmStream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.as_fd().as_raw_fd()
    }
}
