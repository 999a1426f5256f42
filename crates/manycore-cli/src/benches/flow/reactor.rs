//! A ping-pong through two pipes, 8 bytes each way: party A writes to
//! pipe 1 and waits for pipe 2, party B waits for pipe 1 and answers on
//! pipe 2; a round trip is one of A's writes answered.
//!
//! * [`FlowPingPong`]: A and B are kernel-mode instances on the one core
//!   of a runtime; every read and write is a device request to a
//!   [`Reactor`], and each completion is the continuation signal that
//!   fires the next instance.
//! * [`EpollLoop`]: the hand-written event loop: one thread, one epoll
//!   set watching both pipes' read ends, A's and B's handlers called from
//!   the loop.
//! * The same two with two eventfds instead of the pipes
//!   ([`FlowPingPong::eventfds`], [`EpollLoop::eventfds`]): A writes
//!   eventfd 1 and waits for eventfd 2, B the reverse; each eventfd is one
//!   device (one fd in the loop's set) that both parties use.
//! * [`EpollThreads`]: A and B as two threads, each waiting in an epoll of
//!   its own (each hop wakes the other thread, as each of the flow
//!   version's hops wakes the reactor or the core).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use manycore::Runtime;
use manycore_flow::{Backend, Ctx, Device, Instance, IoResult, Kernel, Reactor, ReactorStats};

use crate::measure::PARTNER_TIMEOUT;

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    manycore_flow::pipe().map_err(|e| format!("pipe: {e}"))
}

fn eventfd() -> Result<OwnedFd, String> {
    manycore_flow::eventfd().map_err(|e| format!("eventfd: {e}"))
}

/// The flow version: a one-core runtime, a reactor and the four pipe ends
/// as its devices. B runs from construction until the value is dropped.
pub struct FlowPingPong {
    rt: Runtime,
    reactor: Reactor,
    /// A's devices: pipe 1's write end, pipe 2's read end.
    a: (Arc<Device>, Arc<Device>),
}

impl std::fmt::Debug for FlowPingPong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowPingPong")
            .field("backend", &self.reactor.backend())
            .finish()
    }
}

impl FlowPingPong {
    /// Sets it up with the reactor's `backend` (an error if the reactor
    /// would fall back to another).
    pub fn new(backend: Backend) -> Result<Self, String> {
        Self::on_one_core(backend, false)
    }

    /// The same through two eventfds, each registered once and used by
    /// both parties (A writes 1 and reads 2, B reads 1 and writes 2).
    pub fn eventfds(backend: Backend) -> Result<Self, String> {
        Self::on_one_core(backend, true)
    }

    /// A one-core runtime and a reactor with `backend`, then `with`.
    fn on_one_core(backend: Backend, eventfds: bool) -> Result<Self, String> {
        let rt = Runtime::builder()
            .cores(1)
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        let reactor = Reactor::with_backend(backend).map_err(|e| format!("reactor: {e}"))?;
        Self::with(rt, reactor, backend, eventfds)
    }

    /// The rest of [`new`](Self::new): on an error, `rt` and `reactor`
    /// are shut down before it returns.
    fn with(
        rt: Runtime,
        reactor: Reactor,
        backend: Backend,
        eventfds: bool,
    ) -> Result<Self, String> {
        let stop = |rt: &Runtime, reactor: &Reactor| {
            reactor.shutdown();
            rt.shutdown();
        };
        if backend != Backend::Auto && reactor.backend() != backend {
            stop(&rt, &reactor);
            return Err(format!("{backend:?} refused here"));
        }
        let devices = (|| {
            let reg = |fd: OwnedFd| {
                reactor
                    .register(fd)
                    .map(Arc::new)
                    .map_err(|e| format!("register: {e}"))
            };
            if eventfds {
                let e1 = reg(eventfd()?)?;
                let e2 = reg(eventfd()?)?;
                return Ok::<_, String>(((e1.clone(), e2.clone()), (e1, e2)));
            }
            let (p1r, p1w) = pipe()?;
            let (p2r, p2w) = pipe()?;
            Ok::<_, String>(((reg(p1w)?, reg(p2r)?), (reg(p1r)?, reg(p2w)?)))
        })();
        let (a, (b_in, b_out)) = match devices {
            Ok(d) => d,
            Err(e) => {
                stop(&rt, &reactor);
                return Err(e);
            }
        };
        let started = Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| {
            b_arm(ctx, b_in, b_out)
        });
        if let Err(e) = started {
            stop(&rt, &reactor);
            return Err(e.to_string());
        }
        Ok(Self { rt, reactor, a })
    }

    /// The reactor's counters (requests, those answered on the issuer's
    /// thread, kernel waits, wake-ups), for the probe `flowioq`.
    pub fn stats(&self) -> ReactorStats {
        self.reactor.stats()
    }

    /// `n` round trips, timed on the core from A's first write to the
    /// arrival of the last answer.
    pub fn batch(&self, n: u64) -> Result<Duration, String> {
        let (tx, rx) = mpsc::channel();
        let (out, inp) = self.a.clone();
        Instance::<(), Kernel>::new(self.rt.core(0), 0, move |ctx, _| {
            a_round(ctx, out, inp, n, Instant::now(), tx)
        })
        .map_err(|e| e.to_string())?;
        rx.recv_timeout(PARTNER_TIMEOUT).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => {
                format!("reactor ping-pong: no answer within {PARTNER_TIMEOUT:?}")
            }
            mpsc::RecvTimeoutError::Disconnected => "reactor ping-pong: a request failed".into(),
        })
    }
}

impl Drop for FlowPingPong {
    fn drop(&mut self) {
        // Answers B's outstanding read with `Shutdown`, which ends B.
        self.reactor.shutdown();
        self.rt.shutdown();
    }
}

/// B: read pipe 1; its receiver answers on pipe 2 and reads again. Ends
/// when a read fails (the reactor shut down).
fn b_arm(ctx: &Ctx<'_, Kernel>, inp: Arc<Device>, out: Arc<Device>) {
    let i2 = inp.clone();
    let receiver = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
        let Some(Ok(data)) = got.into_iter().next() else {
            return;
        };
        if let Ok(ack) = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {}) {
            out.write(ctx, data, ack.slot(0));
        }
        b_arm(ctx, i2, out);
    });
    if let Ok(r) = receiver {
        inp.read(ctx, 8, r.slot(0));
    }
}

/// A: read pipe 2 (its receiver starts the next round), write pipe 1.
fn a_round(
    ctx: &Ctx<'_, Kernel>,
    out: Arc<Device>,
    inp: Arc<Device>,
    left: u64,
    t0: Instant,
    done: mpsc::Sender<Duration>,
) {
    if left == 0 {
        let _ = done.send(t0.elapsed());
        return;
    }
    let (o2, i2) = (out.clone(), inp.clone());
    // A failed read drops `done` with the receiver: the caller sees it.
    let receiver = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
        if let Some(Ok(_)) = got.first() {
            a_round(ctx, o2, i2, left - 1, t0, done);
        }
    });
    let ack = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {});
    if let (Ok(r), Ok(a)) = (receiver, ack) {
        inp.read(ctx, 8, r.slot(0));
        out.write(ctx, left.to_le_bytes().to_vec(), a.slot(0));
    }
}

/// An epoll set (level-triggered, read readiness), each fd tagged.
#[derive(Debug)]
struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> Result<Self, String> {
        // SAFETY: epoll_create1 takes no pointers.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(format!("epoll_create1: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn add(&self, fd: BorrowedFd<'_>, tag: u64) -> Result<(), String> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: tag,
        };
        // SAFETY: both descriptors are open for the call (owned by `self`
        // and borrowed); `ev` is a valid event the kernel copies.
        let r = unsafe {
            libc::epoll_ctl(
                self.0.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut ev,
            )
        };
        if r < 0 {
            return Err(format!("epoll_ctl: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Waits at most `timeout` for readiness; the ready fds' tags go into
    /// `tags` (empty after a timeout).
    fn wait(&self, tags: &mut Vec<u64>, timeout: Duration) -> Result<(), String> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        loop {
            // SAFETY: `evs` is a writable array of `evs.len()` events for
            // the kernel to fill; the epoll fd is open.
            let n = unsafe {
                libc::epoll_wait(self.0.as_raw_fd(), evs.as_mut_ptr(), evs.len() as i32, ms)
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("epoll_wait: {e}"));
            }
            tags.clear();
            for ev in &evs[..n as usize] {
                // A copy of the (packed) field.
                let tag = ev.u64;
                tags.push(tag);
            }
            return Ok(());
        }
    }
}

const TAG_A: u64 = 1;
const TAG_B: u64 = 2;

/// The hand-written event loop: one thread, both parties' handlers.
#[derive(Debug)]
pub struct EpollLoop {
    ep: Epoll,
    p1: (File, File),
    p2: (File, File),
    /// Added to the round number A writes (an eventfd write of 0 makes
    /// nothing readable).
    base: u64,
}

impl EpollLoop {
    /// Two pipes and an epoll set watching their read ends.
    pub fn new() -> Result<Self, String> {
        let (p1r, p1w) = pipe()?;
        let (p2r, p2w) = pipe()?;
        let ep = Epoll::new()?;
        ep.add(p1r.as_fd(), TAG_B)?;
        ep.add(p2r.as_fd(), TAG_A)?;
        Ok(Self {
            ep,
            p1: (File::from(p1r), File::from(p1w)),
            p2: (File::from(p2r), File::from(p2w)),
            base: 0,
        })
    }

    /// The same over two eventfds (each one fd in the set, read and
    /// written through it: the second `File` of a pair is a dup).
    pub fn eventfds() -> Result<Self, String> {
        let ep = Epoll::new()?;
        let e1 = File::from(eventfd()?);
        let e2 = File::from(eventfd()?);
        ep.add(e1.as_fd(), TAG_B)?;
        ep.add(e2.as_fd(), TAG_A)?;
        let dup = |f: &File| f.try_clone().map_err(|e| format!("dup: {e}"));
        Ok(Self {
            ep,
            p1: (dup(&e1)?, e1),
            p2: (dup(&e2)?, e2),
            base: 1,
        })
    }

    /// `n` round trips.
    pub fn batch(&self, n: u64) -> Result<Duration, String> {
        let io = |e: std::io::Error| format!("epoll loop: {e}");
        let (mut buf, mut tags, mut done) = ([0u8; 8], Vec::new(), 0u64);
        let t0 = Instant::now();
        (&self.p1.1)
            .write_all(&self.base.to_le_bytes())
            .map_err(io)?;
        while done < n {
            self.ep.wait(&mut tags, PARTNER_TIMEOUT)?;
            if tags.is_empty() {
                return Err(format!("epoll loop: nothing within {PARTNER_TIMEOUT:?}"));
            }
            for &tag in &tags {
                if tag == TAG_B {
                    (&self.p1.0).read_exact(&mut buf).map_err(io)?;
                    (&self.p2.1).write_all(&buf).map_err(io)?;
                } else {
                    (&self.p2.0).read_exact(&mut buf).map_err(io)?;
                    done += 1;
                    if done < n {
                        (&self.p1.1)
                            .write_all(&(done + self.base).to_le_bytes())
                            .map_err(io)?;
                    }
                }
            }
        }
        Ok(t0.elapsed())
    }
}

/// A and B as two threads, each with its own epoll set. B runs until pipe
/// 1's write end closes (when the value is dropped).
#[derive(Debug)]
pub struct EpollThreads {
    ep: Epoll,
    /// Pipe 1's write end (`None` once dropped) and pipe 2's read end.
    a: (Option<File>, File),
    b: Option<JoinHandle<()>>,
}

impl EpollThreads {
    /// Two pipes, A's epoll set, and B's thread.
    pub fn new() -> Result<Self, String> {
        let (p1r, p1w) = pipe()?;
        let (p2r, p2w) = pipe()?;
        let ep = Epoll::new()?;
        ep.add(p2r.as_fd(), TAG_A)?;
        let ep_b = Epoll::new()?;
        ep_b.add(p1r.as_fd(), TAG_B)?;
        let (mut rx, mut tx) = (File::from(p1r), File::from(p2w));
        let b = std::thread::Builder::new()
            .name("flow-bench-epoll-b".into())
            .spawn(move || {
                let (mut buf, mut tags) = ([0u8; 8], Vec::new());
                loop {
                    if ep_b.wait(&mut tags, Duration::from_millis(100)).is_err() {
                        return;
                    }
                    if tags.is_empty() {
                        continue;
                    }
                    // End of stream (A's end closed) or an error ends B.
                    if rx.read_exact(&mut buf).is_err() || tx.write_all(&buf).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("thread: {e}"))?;
        Ok(Self {
            ep,
            a: (Some(File::from(p1w)), File::from(p2r)),
            b: Some(b),
        })
    }

    /// `n` round trips.
    pub fn batch(&self, n: u64) -> Result<Duration, String> {
        let io = |e: std::io::Error| format!("epoll threads: {e}");
        let Some(out) = self.a.0.as_ref() else {
            return Err("epoll threads: closed".into());
        };
        let (mut buf, mut tags) = ([0u8; 8], Vec::new());
        let t0 = Instant::now();
        for i in 0..n {
            (&*out).write_all(&i.to_le_bytes()).map_err(io)?;
            self.ep.wait(&mut tags, PARTNER_TIMEOUT)?;
            if tags.is_empty() {
                return Err(format!("epoll threads: no answer within {PARTNER_TIMEOUT:?}"));
            }
            (&self.a.1).read_exact(&mut buf).map_err(io)?;
        }
        Ok(t0.elapsed())
    }
}

impl Drop for EpollThreads {
    fn drop(&mut self) {
        // B reads the end of the stream and returns.
        drop(self.a.0.take());
        if let Some(b) = self.b.take() {
            let _ = b.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ping_pong_makes_its_round_trips() {
        let f = FlowPingPong::new(Backend::Epoll).unwrap();
        for n in [1, 100] {
            assert!(f.batch(n).is_ok());
        }
        drop(f);
        let l = EpollLoop::new().unwrap();
        assert!(l.batch(100).is_ok());
        let f = FlowPingPong::eventfds(Backend::Epoll).unwrap();
        for n in [1, 100] {
            assert!(f.batch(n).is_ok());
        }
        drop(f);
        let l = EpollLoop::eventfds().unwrap();
        assert!(l.batch(100).is_ok());
        let t = EpollThreads::new().unwrap();
        assert!(t.batch(100).is_ok());
    }
}
