//! `Port`: a device served on the **direct path** (the epoll backend, an
//! fd epoll watches). Its fd and its request queues are shared by the
//! device's handle and the reactor, behind the port's lock, so that any
//! thread can serve it:
//!
//! * the **issuer** of a request, at once: if no earlier request of its
//!   direction waits, it tries the operation with a non-blocking system
//!   call and answers it; only an operation that would block (`EAGAIN`)
//!   is **parked** in the queue, with nothing sent to the reactor thread;
//! * whoever takes the fd's next edge from the shared epoll instance and
//!   serves the queues' heads: the reactor thread, or an issuer's thread
//!   that **polls** the instance (without waiting) after a request of its
//!   own went through, as a write on one device is what makes another
//!   ready in a pipeline.
//!
//! Why no parked request is stranded: a request is parked only by a thread
//! that holds the lock and either found an earlier request queued (the
//! head waits, see below) or tried the fd itself and got `EAGAIN`; every
//! server tries the heads under the same lock until `EAGAIN` or an empty
//! queue. After an `EAGAIN` under the lock, the fd's next readiness makes
//! an edge (edge-triggered epoll reports every change after the last
//! report), the edge is reported to exactly one waiter, and that waiter
//! takes the lock after the parker released it, so it finds the request.
//! The reactor always waits on the instance (or polls it) while the
//! runtime lives, so some waiter takes every edge.
//!
//! **Known empty.** A read whose queue is empty need not try the fd when
//! the port knows the fd empty (`State::empty`): the last read tried under
//! the lock found it empty (`EAGAIN`, or, on a byte-stream pipe, a read
//! that returned less than it asked for), and every server that took an
//! edge of the port since then tried the read side again (and set the flag
//! from that try) or, if it did not, cleared the flag. Any data that comes
//! after the fd was found empty raises an edge, reported after the data
//! came; a server that takes it before the read is parked clears or
//! refreshes the flag, and one that takes it after finds the read parked.
//! So the read is parked only while an edge is still to come, as after an
//! `EAGAIN`. To see a pipe empty without an `EAGAIN`, a read of a pipe
//! asks for `SPARE` bytes more than its request: what comes beyond the
//! request is kept in the port (`State::ahead`) and answers the next reads
//! first, before the fd is tried.
//!
//! **Peers.** When both ends of one pipe are ports of the reactor, the
//! write end knows the read end (`Port::peer`): an issuer whose write went
//! through serves the read end's queue straight after it (`Port::feed`), as
//! a server that took no edge. That is always safe (a server tries heads
//! under the lock and stops only at `EAGAIN` or an empty queue, and taking
//! no edge it leaves the write's edge for whoever polls next, which serves
//! the port again); it saves the issuer the poll that would have found
//! the edge, when no other parked request needs one (`Parked::alone`).
//! An eventfd is its own peer: once a write was made through its port,
//! an issuer whose write to it went through serves the port itself (its
//! reads) the same way. Only writes through the same port feed it: an
//! eventfd registered twice (two fds of one open file) is two unlinked
//! ports, whose reads wait for edges.
//!
//! A read of an eventfd in counter mode that went through leaves it known
//! empty, as a short read of a pipe does: it returned the whole count and
//! left it 0, and any later write raises an edge.

use super::request::{self, errno, Answer, Queues, Req, Tally};
use super::IoError;
use manycore_sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use manycore_sync::{Mutex, MutexGuard};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{OnceLock, Weak};

/// The bytes a read of a pipe asks for beyond its request (so that a read
/// that fills the request but not this tells the pipe empty).
const SPARE: usize = 64;

/// The requests parked in a reactor's ports (hints for issuers).
#[derive(Default)]
pub(crate) struct Parked {
    /// All of them: an issuer polls only if some.
    pub(crate) all: AtomicUsize,
    /// Those that only an edge taken from the epoll instance serves: all
    /// but the reads parked at the read end of a pipe whose write end is a
    /// port too, or at an eventfd written through its port (its writers
    /// feed it, `Port::feed`).
    pub(crate) alone: AtomicUsize,
    /// The reactor thread is out of the epoll instance (deferring to the
    /// issuers, `lease.rs`), which it may be only while `alone` is 0.
    pub(crate) out: AtomicBool,
}

impl Parked {
    /// True if the reactor must be woken: a request parked alone while it
    /// is out of the instance. Both sides write one word and then read the
    /// other with read-modify-writes (the reactor: `out` then `alone`), so
    /// at least one of them sees the other's write.
    pub(crate) fn add(&self, n: usize, alone: usize) -> bool {
        self.all.fetch_add(n, Ordering::Relaxed);
        alone > 0 && {
            self.alone.fetch_add(alone, Ordering::SeqCst);
            self.out.fetch_or(false, Ordering::SeqCst)
        }
    }

    /// The reactor, before it leaves the instance: marks itself out and
    /// returns true if it may stay out (no request is parked alone).
    pub(crate) fn go_out(&self) -> bool {
        self.out.swap(true, Ordering::SeqCst);
        self.alone.fetch_add(0, Ordering::SeqCst) == 0
    }

    /// The reactor, back in.
    pub(crate) fn come_in(&self) {
        self.out.store(false, Ordering::Relaxed);
    }
    fn sub(&self, n: usize, alone: usize) {
        self.all.fetch_sub(n, Ordering::Relaxed);
        if alone > 0 {
            self.alone.fetch_sub(alone, Ordering::Relaxed);
        }
    }
}

struct State {
    queues: Queues,
    /// How many of the requests in `queues` are counted in `Parked::alone`.
    alone: usize,
    /// Bytes read ahead of the read requests (from a pipe), in order: the
    /// next reads are answered from them before the fd is tried.
    ahead: Vec<u8>,
    /// The fd is known empty and an edge is still to come before it has
    /// data: a read need not try it before it parks (see the module doc).
    empty: bool,
    /// Deregistered or shut down: the error every request gets from now on.
    closed: Option<IoError>,
}

/// A device on the direct path.
pub(crate) struct Port {
    fd: OwnedFd,
    /// A byte-stream pipe: reads ask for `SPARE` bytes more, and a short
    /// read tells the pipe empty.
    pipe: bool,
    /// Which pipe this is an end of (`raw::fd::Pipe::end`), if one.
    end: Option<(u64, u64, bool)>,
    /// A write end's read end, if that is a port of the same reactor.
    peer: OnceLock<Weak<Port>>,
    /// An eventfd (`raw::fd::eventfd_mode`): its own writes make its reads
    /// possible, so its writers feed it (`Port::feed`). True: a read that
    /// went through drained it (counter mode).
    eventfd: Option<bool>,
    /// A read end whose write end is a port of the same reactor, or an
    /// eventfd written through its port: its writers feed its reads.
    fed: AtomicBool,
    state: Mutex<State>,
}

/// What a submission did with a request.
pub(crate) enum Submitted {
    /// Answered here (with a value or an error).
    Answered,
    /// Parked in the port's queue; a later edge serves it. True: the
    /// reactor is out of the epoll instance and must be woken.
    Parked(bool),
}

impl Port {
    /// A port for `fd`, which the caller made non-blocking and added to the
    /// epoll instance (edge-triggered, both directions).
    pub(crate) fn new(fd: OwnedFd) -> Self {
        let facts = crate::raw::fd::pipe_facts(fd.as_fd());
        let pipe = facts.as_ref().is_some_and(|p| p.stream);
        let end = facts.and_then(|p| p.end);
        let eventfd = match end {
            Some(_) => None,
            None => crate::raw::fd::eventfd_mode(fd.as_fd()),
        };
        Self {
            fd,
            pipe,
            end,
            eventfd,
            peer: OnceLock::new(),
            fed: AtomicBool::new(false),
            state: Mutex::new(State {
                queues: Default::default(),
                alone: 0,
                ahead: Vec::new(),
                empty: false,
                closed: None,
            }),
        }
    }

    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Links `a` and `b` if they are the two ends of one pipe (the write
    /// end's writers then feed the read end).
    pub(crate) fn link(a: &std::sync::Arc<Port>, b: &std::sync::Arc<Port>) {
        let (Some((da, ia, ra)), Some((db, ib, rb))) = (a.end, b.end) else {
            return;
        };
        if (da, ia) != (db, ib) || ra == rb {
            return;
        }
        let (r, w) = if ra { (a, b) } else { (b, a) };
        if w.peer.set(std::sync::Arc::downgrade(r)).is_ok() {
            r.fed.store(true, Ordering::Relaxed);
        }
    }

    /// Whether this is a pipe end that `link` may pair.
    pub(crate) fn is_pipe_end(&self) -> bool {
        self.end.is_some()
    }

    /// An issuer whose write to this port went through: if this is the
    /// write end of a pipe whose read end is a port, serves the read end
    /// here, taking no edge; if it is an eventfd, serves this port itself.
    /// Returns whether it did.
    pub(crate) fn feed(&self, tally: &Tally, parked: &Parked) -> bool {
        if self.eventfd.is_some() {
            self.serve(tally, parked);
            return true;
        }
        match self.peer.get().and_then(Weak::upgrade) {
            Some(r) => {
                r.serve(tally, parked);
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The issuer: answers `req` here if it can (the port is closed, or the
    /// operation did not have to wait), otherwise parks it. `parked` counts
    /// the parked requests of the reactor.
    pub(crate) fn submit(&self, mut req: Req, tally: &Tally, parked: &Parked) -> Submitted {
        request::add(&tally.requests, 1);
        // An eventfd written through its port: from now on its writers
        // feed its reads (a read parked before this still counts alone).
        if self.eventfd.is_some()
            && matches!(req, Req::Write { .. })
            && !self.fed.load(Ordering::Relaxed)
        {
            self.fed.store(true, Ordering::Relaxed);
        }
        let mut st = self.lock();
        let answer = if let Some(e) = st.closed {
            Answer::Failed(e)
        } else {
            let dir = req.dir() as usize;
            // The head waits for an edge, and this one behind it; or the fd
            // is known empty with an edge to come (a read with nothing
            // read ahead).
            let wait = !st.queues[dir].is_empty()
                || (matches!(req, Req::Read { len: 1.., .. }) && st.empty && st.ahead.is_empty());
            let tried = if wait {
                None
            } else {
                self.attempt(&mut st, &mut req)
            };
            match tried {
                Some((n, buf)) => request::outcome(&req, n, buf),
                None => {
                    // A read at a fed read end is served by the writers'
                    // feeds; anything else needs an edge taken.
                    let alone =
                        !(matches!(req, Req::Read { .. }) && self.fed.load(Ordering::Relaxed));
                    st.queues[dir].push_back(req);
                    st.alone += alone as usize;
                    return Submitted::Parked(parked.add(1, alone as usize));
                }
            }
        };
        drop(st);
        request::add(&tally.served, 1);
        request::answer(req, answer, tally);
        Submitted::Answered
    }

    /// A server that took an edge of this port: serves the heads of both
    /// queues until an operation would block or the queue is empty, then
    /// answers them (outside the lock: an answer may wait for room in its
    /// receiver's core). Returns how many it answered.
    pub(crate) fn serve(&self, tally: &Tally, parked: &Parked) -> usize {
        // Usually one answer: kept out of the allocator.
        let (mut first, mut more) = (None, Vec::new());
        let alone;
        {
            let mut st = self.lock();
            if st.closed.is_some() {
                return 0;
            }
            // The edge taken may be the read side's: unless a read is tried
            // below (which sets the flag from what it finds), the fd is no
            // longer known empty.
            st.empty = false;
            for dir in 0..st.queues.len() {
                while let Some(mut req) = st.queues[dir].pop_front() {
                    let Some((n, buf)) = self.attempt(&mut st, &mut req) else {
                        st.queues[dir].push_front(req);
                        break;
                    };
                    let a = request::outcome(&req, n, buf);
                    if first.is_none() {
                        first = Some((req, a));
                    } else {
                        more.push((req, a));
                    }
                }
            }
            // Which of the answered were counted alone does not matter (a
            // hint), only that the counts stay those of the queues.
            let left: usize = st.queues.iter().map(|q| q.len()).sum();
            alone = st.alone.saturating_sub(left);
            st.alone -= alone;
        }
        let n = first.is_some() as usize + more.len();
        if n > 0 {
            parked.sub(n, alone);
            request::add(&tally.served, n as u64);
            for (req, a) in first.into_iter().chain(more) {
                request::answer(req, a, tally);
            }
        }
        n
    }

    /// Closes the port with `e` (deregistered, or the reactor shut down):
    /// answers every parked request with it, and every later one. Idempotent.
    pub(crate) fn close(&self, e: IoError, tally: &Tally, parked: &Parked) {
        let mut queues: Queues = Default::default();
        let alone;
        {
            let mut st = self.lock();
            if st.closed.is_some() {
                return;
            }
            st.closed = Some(e);
            std::mem::swap(&mut queues, &mut st.queues);
            alone = std::mem::take(&mut st.alone);
        }
        // A write end gone: its read end's reads wait for edges again.
        if let Some(r) = self.peer.get().and_then(Weak::upgrade) {
            r.fed.store(false, Ordering::Relaxed);
        }
        let n: usize = queues.iter().map(|q| q.len()).sum();
        parked.sub(n, alone);
        request::fail_queued(&mut queues, [0, 0], e, tally);
    }
}

impl Port {
    /// Tries `req` (non-blocking), under the lock (`st`): `None` if it would
    /// block, otherwise the result (`n >= 0`, or `-errno`) and the bytes
    /// read. A read is answered from the bytes read ahead if there are
    /// any; a read of the fd sets `State::empty` from what it finds.
    fn attempt(&self, st: &mut State, req: &mut Req) -> Option<(i64, Vec<u8>)> {
        let fd = self.fd.as_fd();
        let (r, buf) = match req {
            Req::Read { len: 0, .. } => (Ok(0), Vec::new()),
            Req::Read { len, .. } if !st.ahead.is_empty() => {
                let k = (*len).min(st.ahead.len());
                let buf: Vec<u8> = st.ahead.drain(..k).collect();
                return Some((k as i64, buf));
            }
            Req::Read { len, .. } => {
                let len = *len;
                let ask = if self.pipe {
                    len.saturating_add(SPARE)
                } else {
                    len
                };
                let mut buf = Vec::with_capacity(ask);
                let r = crate::raw::fd::read(fd, &mut buf);
                // Less than asked (but not the end of the stream) from a
                // pipe, or any count from an eventfd that a read drains:
                // it is empty now.
                st.empty = matches!(r, Ok(n) if self.pipe && n > 0 && n < ask)
                    || (self.eventfd == Some(true) && matches!(r, Ok(1..)));
                if buf.len() > len {
                    st.ahead.extend_from_slice(&buf[len..]);
                    buf.truncate(len);
                }
                (r.map(|n| n.min(len)), buf)
            }
            Req::Write { data, .. } => (crate::raw::fd::write(fd, data), Vec::new()),
        };
        match r {
            Ok(n) => Some((n as i64, buf)),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                if matches!(req, Req::Read { .. }) {
                    st.empty = true;
                }
                None
            }
            Err(e) => Some((-(errno(&e) as i64), buf)),
        }
    }
}
