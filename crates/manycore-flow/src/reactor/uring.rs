//! The io_uring engine: each request at the head of its device's queue is
//! a read or write submitted to the kernel, tagged with (device,
//! direction); its completion answers that request and starts the next.
//! A request the kernel answers with `EAGAIN` (an fd left non-blocking)
//! waits for readiness with a one-shot poll and is submitted again.

use super::request::{self, add, errno, Answer, Dir, Queues, Req};
use super::{Cmd, IoError, Shared, URING_ENTRIES};
use crate::raw::uring::{Done, OpId, Ring};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

/// The tag of the read that watches the wake eventfd.
const WAKE: u64 = u64::MAX;

/// How long a shutting-down reactor waits for the kernel to hand back
/// buffers of cancelled operations.
const DRAIN: Duration = Duration::from_secs(1);

/// Opens a ring for the reactor.
pub(super) fn open() -> io::Result<Ring> {
    Ring::new(URING_ENTRIES)
}

struct Dev {
    fd: OwnedFd,
    queues: Queues,
    /// The operation in flight per direction, and whether it is the poll
    /// that waits for readiness rather than the read or write itself.
    busy: [Option<(OpId, bool)>; 2],
    /// Being deregistered (or shut down): the error its requests get.
    closing: Option<IoError>,
    /// The fd could not be prepared: the error every request gets.
    broken: Option<IoError>,
}

struct Engine<'a> {
    sh: &'a Shared,
    ring: Ring,
    devs: HashMap<u64, Dev>,
    wake: Option<OpId>,
    stopping: bool,
}

fn tag(id: u64, dir: Dir) -> u64 {
    (id << 1) | dir as u64
}

/// The reactor thread's loop (see `Commands` for the sleep handshake).
pub(super) fn run(sh: &Shared, ring: Ring) {
    let mut e = Engine {
        sh,
        ring,
        devs: HashMap::new(),
        wake: None,
        stopping: false,
    };
    e.arm_wake();
    let (mut cmds, mut done) = (Vec::new(), Vec::new());
    loop {
        let stopped = sh.commands.take(&mut cmds, true);
        let sleep = cmds.is_empty() && !stopped;
        for c in cmds.drain(..) {
            e.command(c);
        }
        if stopped {
            break;
        }
        let r = if sleep {
            add(&sh.counters.waits, 1);
            let r = e.ring.submit_and_wait(1, None);
            sh.commands.awake();
            r
        } else {
            e.ring.submit_and_wait(0, None)
        };
        if r.is_err() {
            // The ring is unusable: refuse new requests, answer the rest.
            if sh.commands.stop() {
                sh.ring_wake();
            }
            sh.commands.take(&mut cmds, false);
            for c in cmds.drain(..) {
                e.command(c);
            }
            break;
        }
        e.ring.reap(&mut done);
        for d in done.drain(..) {
            e.complete(d);
        }
    }
    e.shut_down();
}

impl Engine<'_> {
    fn arm_wake(&mut self) {
        self.wake = self.ring.read(self.sh.wake.as_fd(), 8, WAKE).ok();
    }

    fn command(&mut self, c: Cmd) {
        let counters = &self.sh.counters;
        match c {
            Cmd::Register { id, fd, broken } => {
                // Blocking, so that the kernel waits for readiness itself.
                let broken = broken.or_else(|| {
                    crate::raw::fd::set_nonblocking(fd.as_fd(), false)
                        .err()
                        .map(|e| IoError::Os(errno(&e)))
                });
                self.devs.insert(
                    id,
                    Dev {
                        fd,
                        queues: Default::default(),
                        busy: [None, None],
                        closing: None,
                        broken,
                    },
                );
                add(&counters.devices, 1);
            }
            Cmd::Request { id, req } => {
                add(&counters.reactor.requests, 1);
                let dir = req.dir();
                match self.devs.get_mut(&id) {
                    Some(d) if d.closing.is_none() => {
                        d.queues[dir as usize].push_back(req);
                        self.start(id, dir);
                    }
                    Some(d) => request::answer(
                        req,
                        Answer::Failed(d.closing.unwrap_or(IoError::Deregistered)),
                        &counters.reactor,
                    ),
                    None => request::answer(
                        req,
                        Answer::Failed(IoError::Deregistered),
                        &counters.reactor,
                    ),
                }
            }
            Cmd::Deregister { id } => self.close(id, IoError::Deregistered),
        }
    }

    /// Submits the head request of `id`'s `dir` queue if none is in flight.
    fn start(&mut self, id: u64, dir: Dir) {
        let counters = &self.sh.counters;
        let Some(d) = self.devs.get_mut(&id) else {
            return;
        };
        let q = &mut d.queues[dir as usize];
        while d.busy[dir as usize].is_none() && d.closing.is_none() {
            let Some(head) = q.front_mut() else {
                return;
            };
            let r = match (d.broken, head) {
                (Some(e), _) => Err(Answer::Failed(e)),
                (None, Req::Read { len: 0, .. }) => Err(Answer::Read(Vec::new())),
                (None, Req::Read { len, .. }) => self
                    .ring
                    .read(d.fd.as_fd(), *len, tag(id, dir))
                    .map_err(|e| Answer::Failed(IoError::Os(errno(&e)))),
                (None, Req::Write { data, .. }) => self
                    .ring
                    .write(d.fd.as_fd(), std::mem::take(data), tag(id, dir))
                    .map_err(|e| Answer::Failed(IoError::Os(errno(&e)))),
            };
            match r {
                Ok(op) => d.busy[dir as usize] = Some((op, false)),
                // Answered without the kernel: go on with the next.
                Err(a) => {
                    let Some(req) = q.pop_front() else { return };
                    request::answer(req, a, &counters.reactor);
                }
            }
        }
    }

    fn complete(&mut self, done: Done) {
        let Done { tag, result, buf } = done;
        if tag == WAKE {
            self.wake = None;
            if !self.stopping {
                self.arm_wake();
            }
            return;
        }
        let counters = &self.sh.counters;
        let (id, dir) = (tag >> 1, if tag & 1 == 0 { Dir::Read } else { Dir::Write });
        let Some(d) = self.devs.get_mut(&id) else {
            return;
        };
        let Some((_, polling)) = d.busy[dir as usize].take() else {
            return;
        };
        let q = &mut d.queues[dir as usize];
        if let Some(err) = d.closing {
            if let Some(req) = q.pop_front() {
                // Done before the cancellation reached it: the real answer.
                let a = if polling || result == -libc::ECANCELED {
                    Answer::Failed(err)
                } else {
                    request::outcome(&req, result as i64, buf)
                };
                request::answer(req, a, &counters.reactor);
            }
            if d.busy == [None, None] {
                self.devs.remove(&id);
                add_neg(&counters.devices);
            }
            return;
        }
        if polling {
            if result < 0 {
                if let Some(req) = q.pop_front() {
                    request::answer(
                        req,
                        Answer::Failed(request::from_errno(-result)),
                        &counters.reactor,
                    );
                }
            }
            return self.start(id, dir);
        }
        if result == -libc::EAGAIN {
            // Left non-blocking after all: wait for readiness, then retry.
            if let Some(Req::Write { data, .. }) = q.front_mut() {
                *data = buf;
            }
            match self.ring.poll(d.fd.as_fd(), dir == Dir::Write, tag) {
                Ok(op) => d.busy[dir as usize] = Some((op, true)),
                Err(e) => {
                    if let Some(req) = q.pop_front() {
                        request::answer(
                            req,
                            Answer::Failed(IoError::Os(errno(&e))),
                            &counters.reactor,
                        );
                    }
                    self.start(id, dir);
                }
            }
            return;
        }
        if let Some(req) = q.pop_front() {
            let a = request::outcome(&req, result as i64, buf);
            request::answer(req, a, &counters.reactor);
        }
        self.start(id, dir);
    }

    /// Deregisters `id`: its queued requests are answered with `err` now,
    /// those in flight are cancelled and answered when the kernel gives them
    /// back; then its fd is closed.
    fn close(&mut self, id: u64, err: IoError) {
        let counters = &self.sh.counters;
        let Some(d) = self.devs.get_mut(&id) else {
            return;
        };
        d.closing = Some(err);
        let skip = d.busy.map(|b| b.is_some() as usize);
        request::fail_queued(&mut d.queues, skip, err, &counters.reactor);
        let busy = d.busy;
        for (op, _) in busy.into_iter().flatten() {
            let _ = self.ring.cancel(op);
        }
        if busy == [None, None] {
            self.devs.remove(&id);
            add_neg(&counters.devices);
        }
    }

    /// Answers everything with `Shutdown` and hands the ring back (bounded
    /// wait for the kernel's cancellations; see `Ring`'s drop).
    fn shut_down(mut self) {
        self.stopping = true;
        let ids: Vec<u64> = self.devs.keys().copied().collect();
        for id in ids {
            self.close(id, IoError::Shutdown);
        }
        if let Some(w) = self.wake.take() {
            let _ = self.ring.cancel(w);
        }
        let deadline = Instant::now() + DRAIN;
        let mut done = Vec::new();
        while !self.devs.is_empty() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            if self.ring.submit_and_wait(1, Some(left)).is_err() {
                break;
            }
            self.ring.reap(&mut done);
            for d in done.drain(..) {
                self.complete(d);
            }
        }
        // Operations the kernel did not give back in time: answer them all
        // the same (their buffers stay with the ring, which leaks them).
        let counters = &self.sh.counters;
        for (_, mut d) in self.devs.drain() {
            request::fail_queued(&mut d.queues, [0, 0], IoError::Shutdown, &counters.reactor);
            add_neg(&counters.devices);
        }
    }
}

fn add_neg(c: &manycore_sync::atomic::AtomicU64) {
    c.fetch_sub(1, manycore_sync::atomic::Ordering::Relaxed);
}
