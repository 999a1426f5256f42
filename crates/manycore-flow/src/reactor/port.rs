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

use super::request::{self, errno, Answer, Queues, Req, Tally};
use super::IoError;
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::{Mutex, MutexGuard};
use std::os::fd::{AsFd, OwnedFd};

/// The bytes a read of a pipe asks for beyond its request (so that a read
/// that fills the request but not this tells the pipe empty).
const SPARE: usize = 64;

struct State {
    queues: Queues,
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
    state: Mutex<State>,
}

/// What a submission did with a request.
pub(crate) enum Submitted {
    /// Answered here (with a value or an error).
    Answered,
    /// Parked in the port's queue; a later edge serves it.
    Parked,
}

impl Port {
    /// A port for `fd`, which the caller made non-blocking and added to the
    /// epoll instance (edge-triggered, both directions).
    pub(crate) fn new(fd: OwnedFd) -> Self {
        let pipe = crate::raw::fd::is_stream_pipe(fd.as_fd());
        Self {
            fd,
            pipe,
            state: Mutex::new(State {
                queues: Default::default(),
                ahead: Vec::new(),
                empty: false,
                closed: None,
            }),
        }
    }

    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The issuer: answers `req` here if it can (the port is closed, or the
    /// operation did not have to wait), otherwise parks it. `parked` counts
    /// the parked requests of the reactor.
    pub(crate) fn submit(&self, mut req: Req, tally: &Tally, parked: &AtomicUsize) -> Submitted {
        request::add(&tally.requests, 1);
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
                    st.queues[dir].push_back(req);
                    parked.fetch_add(1, Ordering::Relaxed);
                    return Submitted::Parked;
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
    pub(crate) fn serve(&self, tally: &Tally, parked: &AtomicUsize) -> usize {
        // Usually one answer: kept out of the allocator.
        let (mut first, mut more) = (None, Vec::new());
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
        }
        let n = first.is_some() as usize + more.len();
        if n > 0 {
            parked.fetch_sub(n, Ordering::Relaxed);
            request::add(&tally.served, n as u64);
            for (req, a) in first.into_iter().chain(more) {
                request::answer(req, a, tally);
            }
        }
        n
    }

    /// Closes the port with `e` (deregistered, or the reactor shut down):
    /// answers every parked request with it, and every later one. Idempotent.
    pub(crate) fn close(&self, e: IoError, tally: &Tally, parked: &AtomicUsize) {
        let mut queues: Queues = Default::default();
        {
            let mut st = self.lock();
            if st.closed.is_some() {
                return;
            }
            st.closed = Some(e);
            std::mem::swap(&mut queues, &mut st.queues);
        }
        let n: usize = queues.iter().map(|q| q.len()).sum();
        parked.fetch_sub(n, Ordering::Relaxed);
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
                // pipe: it is empty now.
                st.empty = matches!(r, Ok(n) if self.pipe && n > 0 && n < ask);
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
