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

use super::request::{self, Answer, Queues, Req, Tally};
use super::IoError;
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::{Mutex, MutexGuard};
use std::io;
use std::os::fd::{AsFd, OwnedFd};

struct State {
    queues: Queues,
    /// Deregistered or shut down: the error every request gets from now on.
    closed: Option<IoError>,
}

/// A device on the direct path.
pub(crate) struct Port {
    fd: OwnedFd,
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
        Self {
            fd,
            state: Mutex::new(State {
                queues: Default::default(),
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
            let q = &mut st.queues[req.dir() as usize];
            if !q.is_empty() {
                // The head waits for an edge; this one waits behind it.
                q.push_back(req);
                parked.fetch_add(1, Ordering::Relaxed);
                return Submitted::Parked;
            }
            match attempt(self.fd.as_fd(), &mut req) {
                Some((n, buf)) => request::outcome(&req, n, buf),
                None => {
                    q.push_back(req);
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
            for q in st.queues.iter_mut() {
                while let Some(head) = q.front_mut() {
                    let Some((n, buf)) = attempt(self.fd.as_fd(), head) else {
                        break;
                    };
                    if let Some(req) = q.pop_front() {
                        let a = request::outcome(&req, n, buf);
                        if first.is_none() {
                            first = Some((req, a));
                        } else {
                            more.push((req, a));
                        }
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

/// Tries `req` on `fd` (non-blocking): `None` if it would block, otherwise
/// the system call's result (`n >= 0`, or `-errno`) and the buffer read.
fn attempt(fd: std::os::fd::BorrowedFd<'_>, req: &mut Req) -> Option<(i64, Vec<u8>)> {
    let (r, buf) = match req {
        Req::Read { len: 0, .. } => (Ok(0), Vec::new()),
        Req::Read { len, .. } => {
            let mut buf = Vec::with_capacity(*len);
            (crate::raw::fd::read(fd, &mut buf), buf)
        }
        Req::Write { data, .. } => (crate::raw::fd::write(fd, data), Vec::new()),
    };
    match r {
        Ok(n) => Some((n as i64, buf)),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => None,
        Err(e) => Some((-(errno(&e) as i64), buf)),
    }
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}
