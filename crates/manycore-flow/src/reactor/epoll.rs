//! The epoll engine. A device epoll watches is on the direct path
//! (`port.rs`): its issuers try their requests themselves and park those
//! that would block; the reactor waits on the shared epoll instance (as
//! issuers poll it) and serves the ports whose edges it takes. An fd epoll
//! cannot watch (a regular file) is always ready: it is the reactor's own,
//! and its requests are served by the reactor thread when they arrive.

use super::request::{self, add, errno, Answer, Dir, Queues, Req};
use super::{Cmd, IoError, Shared, WAKE};
use crate::raw::epoll::{Epoll, BATCH, IN};
use crate::raw::fd;
use manycore_sync::{AdaptiveSpin, GapPredictor};
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};

/// The longest the reactor polls before it waits in the kernel (the
/// runtime's default `Hybrid` budget).
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// The first period the reactor stays out of the epoll instance while
/// issuers poll it (`lease.rs`); each period that issuers poll through
/// doubles the next, up to `DEFER_MAX`. The longest an edge that no
/// issuer takes waits once they stop polling.
const DEFER_MIN: std::time::Duration = std::time::Duration::from_micros(50);
const DEFER_MAX: std::time::Duration = std::time::Duration::from_millis(1);

struct Dev {
    fd: OwnedFd,
    queues: Queues,
    /// The fd could not be prepared: the error every request gets.
    broken: Option<IoError>,
}

/// The reactor thread's loop (see `Commands` for the sleep handshake).
pub(super) fn run(sh: &Shared, ep: &Epoll) {
    let counters = &sh.counters;
    let mut devs: HashMap<u64, Dev> = HashMap::new();
    // The wake eventfd, level-triggered: readable until drained.
    let armed =
        fd::set_nonblocking(sh.wake.as_fd(), true).and_then(|()| ep.add(sh.wake.as_fd(), IN, WAKE));
    if armed.is_err() && sh.commands.stop() {
        sh.ring_wake();
    }
    let (mut cmds, mut events) = (Vec::new(), Vec::with_capacity(BATCH));
    // Before it waits in the kernel the reactor polls (non-blocking epoll
    // waits and looks at its queue) for as long as the adaptive idle
    // policy says: about twice the gaps it has seen between pieces of
    // work, at most `SPIN`, yielding while manycore's threads outnumber
    // the CPUs. A request or an fd that comes within the spin costs no
    // wake-up of this thread, and the submitter no eventfd write.
    let gaps = GapPredictor::new(SPIN);
    let mut spin = AdaptiveSpin::counted(SPIN, &gaps);
    let mut sleep = false;
    let mut defer = DEFER_MIN;
    loop {
        if sh.lease.defer() {
            // Issuers poll the instance: stay out of it for a period,
            // waiting on the wake eventfd alone (a command still wakes the
            // reactor: `sleeping` is set as for any kernel wait).
            let stopped = sh.commands.take(&mut cmds, true);
            let idle = cmds.is_empty() && !stopped;
            for c in cmds.drain(..) {
                command(&mut devs, c, sh);
            }
            if stopped {
                break;
            }
            // Out of the instance only while no request waits for an edge
            // alone; one parked alone from now on wakes the reactor.
            if idle && sh.parked.go_out() {
                add(&counters.waits, 1);
                if let Ok(true) = fd::wait_readable(sh.wake.as_fd(), defer) {
                    let mut b = Vec::with_capacity(8);
                    let _ = fd::read(sh.wake.as_fd(), &mut b);
                }
                defer = (defer * 2).min(DEFER_MAX);
            }
            sh.parked.come_in();
            sh.commands.awake();
            spin.slept();
            sleep = false;
            continue;
        }
        defer = DEFER_MIN;
        // With `sleep`, an empty queue marks the reactor asleep, and the
        // next push wakes it (`Commands`).
        let stopped = sh.commands.take(&mut cmds, sleep);
        let sleep_now = sleep && cmds.is_empty() && !stopped;
        let had_cmds = !cmds.is_empty();
        for c in cmds.drain(..) {
            command(&mut devs, c, sh);
        }
        if stopped {
            break;
        }
        events.clear();
        let r = if sleep_now {
            // Unless an issuer has polled since the last look (then the
            // loop's top defers instead): an issuer that polls from now on
            // wakes the reactor.
            let r = if sh.lease.nap() {
                add(&counters.waits, 1);
                let r = ep.wait(-1, BATCH, |t, e| events.push((t, e)));
                sh.lease.woke();
                r
            } else {
                Ok(0)
            };
            sh.commands.awake();
            spin.slept();
            r
        } else {
            ep.wait(0, BATCH, |t, e| events.push((t, e)))
        };
        if r.is_err() {
            // Unusable: refuse new requests, answer the rest.
            sh.commands.stop();
            sh.commands.take(&mut cmds, false);
            for c in cmds.drain(..) {
                command(&mut devs, c, sh);
            }
            break;
        }
        let mut work = had_cmds;
        for &(token, _) in &events {
            if token == WAKE {
                let mut b = Vec::with_capacity(8);
                let _ = fd::read(sh.wake.as_fd(), &mut b);
                work = true;
            } else if let Some(p) = sh.port(token) {
                p.serve(&counters.reactor, &sh.parked);
                work = true;
            }
        }
        if work {
            spin.found();
            sleep = false;
        } else {
            // Nothing: poll again while the spin lasts, then sleep.
            sleep = !spin.spin();
        }
    }
    sh.close_ports();
    for (_, mut d) in devs.drain() {
        request::fail_queued(&mut d.queues, [0, 0], IoError::Shutdown, &counters.reactor);
        counters
            .devices
            .fetch_sub(1, manycore_sync::atomic::Ordering::Relaxed);
    }
}

fn command(devs: &mut HashMap<u64, Dev>, c: Cmd, sh: &Shared) {
    let counters = &sh.counters;
    match c {
        Cmd::Register { id, fd, broken } => {
            // Not pollable (epoll refused it: a regular file, always ready)
            // or broken; either way never in the epoll instance.
            devs.insert(
                id,
                Dev {
                    fd,
                    queues: Default::default(),
                    broken,
                },
            );
            add(&counters.devices, 1);
        }
        Cmd::Request { id, req } => {
            add(&counters.reactor.requests, 1);
            match devs.get_mut(&id) {
                Some(d) => {
                    let dir = req.dir();
                    d.queues[dir as usize].push_back(req);
                    drive(d, dir, sh);
                }
                None => request::answer(
                    req,
                    Answer::Failed(IoError::Deregistered),
                    &counters.reactor,
                ),
            }
        }
        Cmd::Deregister { id } => {
            if let Some(mut d) = devs.remove(&id) {
                request::fail_queued(
                    &mut d.queues,
                    [0, 0],
                    IoError::Deregistered,
                    &counters.reactor,
                );
                counters
                    .devices
                    .fetch_sub(1, manycore_sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Serves `d`'s `dir` queue from the head until it is empty (the fd is
/// always ready).
fn drive(d: &mut Dev, dir: Dir, sh: &Shared) {
    let q = &mut d.queues[dir as usize];
    while let Some(head) = q.front_mut() {
        let (n, buf) = match (d.broken, head) {
            (Some(e), _) => {
                if let Some(req) = q.pop_front() {
                    request::answer(req, Answer::Failed(e), &sh.counters.reactor);
                }
                continue;
            }
            (None, Req::Read { len, .. }) => {
                let mut buf = Vec::with_capacity(*len);
                match fd::read(d.fd.as_fd(), &mut buf) {
                    Ok(n) => (n as i64, buf),
                    Err(e) => (-(errno(&e) as i64), buf),
                }
            }
            (None, Req::Write { data, .. }) => match fd::write(d.fd.as_fd(), data) {
                Ok(n) => (n as i64, Vec::new()),
                Err(e) => (-(errno(&e) as i64), Vec::new()),
            },
        };
        if let Some(req) = q.pop_front() {
            let a = request::outcome(&req, n, buf);
            request::answer(req, a, &sh.counters.reactor);
        }
    }
}
