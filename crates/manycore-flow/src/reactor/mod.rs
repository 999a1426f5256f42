//! The reactor: file descriptors as the devices of Kusakabe, Taniguchi,
//! Amamiya, *A Study of a Continuation-based Fine-grain Multithreaded
//! Operating System CEFOS*, whose completions are continuation signals.
//!
//! A [`Reactor`] is one thread that waits in the kernel for the devices
//! registered with it ([`Reactor::register`]): through epoll (the measured
//! default) or io_uring where the kernel allows it ([`Backend`]). Under
//! epoll a request that need not wait is made and answered on its issuer's
//! thread, which then serves the edges ready in the reactor's epoll
//! instance; the reactor thread serves the rest (the direct path,
//! `port.rs`). A request
//! ([`Device::read`], [`Device::write`]) names its receiver, the slot of an
//! instance; when the device completes it, the reactor delivers the answer
//! to that slot as a kernel-mode continuation signal: no wait queue, no
//! scan, nothing woken but the receiver's core. Every request is answered
//! exactly once, with a value or a typed [`IoError`]: the device failed or
//! hung up, it was deregistered (its `Device` dropped), or the reactor shut
//! down. The protocol and why no completion is lost are in `src/README.md`.

pub(crate) mod commands;
mod epoll;
pub(crate) mod lease;
pub(crate) mod port;
mod request;
mod uring;

use crate::ctx::{Ctx, Outside};
use crate::instance::Slot;
use crate::mode::{ContinuesTo, Kernel, Mode};
use commands::{Commands, Pushed};
use lease::Lease;
use manycore_sync::atomic::{AtomicU64, Ordering};
use manycore_sync::CachePadded;
use port::{Parked, Port, Submitted};
use request::{errno, Answer, Counters, Req};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread::{JoinHandle, ThreadId};

/// The answer a receiver of a device request gets.
pub type IoResult<T> = Result<T, IoError>;

/// Why a device request failed; the value a receiver finds in its slot
/// instead of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoError {
    /// The device's file descriptor reported an error (its `errno`).
    Os(i32),
    /// The device hung up before the request completed: end of stream on a
    /// read, a broken pipe on a write.
    Closed,
    /// The device was deregistered (its [`Device`] dropped) with the
    /// request outstanding.
    Deregistered,
    /// The reactor shut down with the request outstanding, or before it
    /// was made.
    Shutdown,
}

impl IoError {
    /// The `errno` of an [`IoError::Os`].
    pub fn raw_os_error(&self) -> Option<i32> {
        match *self {
            IoError::Os(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Os(e) => write!(f, "device error: {}", io::Error::from_raw_os_error(*e)),
            IoError::Closed => f.write_str("the device hung up"),
            IoError::Deregistered => f.write_str("the device was deregistered"),
            IoError::Shutdown => f.write_str("the reactor shut down"),
        }
    }
}

impl std::error::Error for IoError {}

impl From<IoError> for io::Error {
    fn from(e: IoError) -> Self {
        match e {
            IoError::Os(n) => io::Error::from_raw_os_error(n),
            IoError::Closed => io::Error::new(io::ErrorKind::BrokenPipe, e),
            IoError::Deregistered | IoError::Shutdown => io::Error::other(e),
        }
    }
}

/// How the reactor waits for its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// The measured default: epoll. Measured against io_uring on this
    /// reactor's traffic (one request in flight per device and direction,
    /// each made as it comes), epoll had the lower round trip and the
    /// higher completion rate across several devices; io_uring's batching
    /// has little to batch there (`docs/notes/2026-11-25-flow-reactor.md`).
    #[default]
    Auto,
    /// io_uring where the kernel allows it, epoll otherwise: if the ring
    /// cannot be opened (io_uring disabled, `EPERM`; absent, `ENOSYS`; or
    /// too old for the operations the reactor uses), the reactor falls back
    /// to epoll by itself. [`Reactor::backend`] tells which one runs. Each
    /// request is a read or write submitted to the kernel, whose completion
    /// names the request.
    IoUring,
    /// epoll: the device's fd is watched (edge-triggered) and the reactor
    /// reads or writes when it is ready.
    Epoll,
}

/// Counters of a reactor (each a snapshot; see [`Reactor::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReactorStats {
    /// Devices registered and not yet deregistered.
    pub devices: u64,
    /// Requests made.
    pub requests: u64,
    /// Requests answered with a value.
    pub completed: u64,
    /// Requests answered with an [`IoError`].
    pub failed: u64,
    /// Answers whose receiver refused the signal (its slot was filled by
    /// someone else, it had fired, or its runtime had shut down).
    pub refused: u64,
    /// Requests that had to wake the reactor thread.
    pub wakeups: u64,
    /// Times the reactor thread waited in the kernel.
    pub waits: u64,
    /// Requests answered on their issuers' threads rather than by the
    /// reactor thread (the direct path: see [`Device`]).
    pub direct: u64,
}

/// A command to the reactor thread.
pub(crate) enum Cmd {
    /// A device off the direct path: an fd epoll refuses (a regular file),
    /// or one that could not be prepared (`broken`: the error its requests
    /// get); under io_uring, every device.
    Register {
        id: u64,
        fd: OwnedFd,
        broken: Option<IoError>,
    },
    Request {
        id: u64,
        req: Req,
    },
    Deregister {
        id: u64,
    },
}

/// What the reactor's handles share with its thread.
pub(crate) struct Shared {
    pub(crate) commands: Commands<Cmd>,
    /// An eventfd the reactor's kernel wait watches; written to wake it.
    pub(crate) wake: OwnedFd,
    pub(crate) counters: Counters,
    next_id: AtomicU64,
    /// The epoll instance, under the epoll backend (set by the reactor
    /// thread before it reports its backend). Shared: issuers poll it.
    pub(crate) epoll: OnceLock<crate::raw::epoll::Epoll>,
    /// The devices on the direct path, by id (an epoll event's token).
    /// (Lines of their own: the reactor's spin locks the command queue.)
    pub(crate) ports: CachePadded<manycore_sync::Mutex<HashMap<u64, Arc<Port>>>>,
    /// Requests parked in ports (hints for issuers: poll only if some).
    pub(crate) parked: CachePadded<Parked>,
    /// Marked by issuers that poll the epoll instance: the reactor thread
    /// stays out of it while they do (`lease.rs`).
    pub(crate) lease: CachePadded<Lease>,
}

impl Shared {
    /// Hands `c` to the reactor thread (waking it if it sleeps), or gives it
    /// back if the reactor has stopped.
    fn send(&self, c: Cmd) -> Result<(), Cmd> {
        match self.commands.push(c)? {
            Pushed::Queued => {}
            Pushed::QueuedWake => {
                self.counters.wakeups.fetch_add(1, Ordering::Relaxed);
                self.ring_wake();
            }
        }
        Ok(())
    }

    fn ports(&self) -> manycore_sync::MutexGuard<'_, HashMap<u64, Arc<Port>>> {
        self.ports.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The port of the device `id`, if it is on the direct path.
    pub(crate) fn port(&self, id: u64) -> Option<Arc<Port>> {
        self.ports().get(&id).cloned()
    }

    /// An issuer whose request went through: if requests are parked, takes
    /// the edges the epoll instance has ready (without waiting) and serves
    /// their ports here, the reactor thread's work done on this thread.
    fn poll(&self) {
        const MAX: usize = 16;
        if self.parked.all.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(ep) = self.epoll.get() else {
            return;
        };
        // Before the wait, if every parked request is a read that writers
        // feed: the reactor stays out of the instance while issuers poll
        // it, and a reactor asleep in it is woken to see that. (A request
        // that waits for an edge alone keeps the reactor in: an edge that
        // comes once the issuers have stopped is then taken at once.)
        if self.parked.alone.load(Ordering::Relaxed) == 0 && self.lease.mark() {
            self.counters.wakeups.fetch_add(1, Ordering::Relaxed);
            self.ring_wake();
        }
        let (mut ids, mut k) = ([0u64; MAX], 0);
        let _ = ep.wait(0, MAX, |token, _| {
            // The wake eventfd is level-triggered: the reactor sees it too.
            if token != WAKE {
                ids[k] = token;
                k += 1;
            }
        });
        for &id in &ids[..k] {
            if let Some(p) = self.port(id) {
                p.serve(&self.counters.direct, &self.parked);
            }
        }
    }

    /// Closes every port (the reactor shutting down): their parked
    /// requests, and later ones, are answered with `Shutdown`.
    pub(crate) fn close_ports(&self) {
        let ports: Vec<Arc<Port>> = self.ports().drain().map(|(_, p)| p).collect();
        for p in ports {
            p.close(IoError::Shutdown, &self.counters.reactor, &self.parked);
            self.counters.devices.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn ring_wake(&self) {
        // A full counter (never, at one write per sleep) is the only
        // failure, and it leaves the eventfd readable: the wake is not lost.
        let _ = crate::raw::fd::write(self.wake.as_fd(), &1u64.to_ne_bytes());
    }
}

/// Who issues a device request: a thread body ([`Ctx`]) or code outside
/// the flow ([`Outside`]), of mode [`Issuer::Mode`]. Talking to a device
/// is a continuation into the kernel, so only kernel and kernel-interface
/// threads may ([`Device::read`]'s bound): a user thread goes through a
/// gate, as for any system call. Sealed.
pub trait Issuer: sealed::Sealed {
    /// The issuer's mode.
    type Mode: Mode;
}

mod sealed {
    pub trait Sealed {}
}

impl<M: Mode> sealed::Sealed for Ctx<'_, M> {}
impl<M: Mode> Issuer for Ctx<'_, M> {
    type Mode = M;
}
impl<M: Mode> sealed::Sealed for Outside<M> {}
impl<M: Mode> Issuer for Outside<M> {
    type Mode = M;
}

/// A reactor: the thread that waits in the kernel for the devices
/// registered with it and delivers their completions as continuation
/// signals. Cheap to clone; the last clone dropped shuts it down (as
/// [`shutdown`](Self::shutdown)).
///
/// The reactor is not part of any runtime: it signals instances of any
/// runtime, through the same path as [`Outside`], and its thread waits in
/// the kernel when nothing is outstanding, so a runtime without devices
/// pays nothing for it.
///
/// ```
/// use manycore_flow::{Instance, IoResult, Kernel, Outcome, Outside, Reactor};
/// use manycore_rt::Runtime;
/// use std::io::Write;
/// use std::time::Duration;
///
/// let rt = Runtime::builder().cores(1).build()?;
/// let reactor = Reactor::new()?;
/// let (rx, tx) = manycore_flow::pipe()?;
/// let device = reactor.register(rx)?;
///
/// // The handler thread: fires when the device's data is there.
/// let (done, out) = Outcome::<IoResult<Vec<u8>>>::new(rt.core(0))?;
/// let handler = Instance::<IoResult<Vec<u8>>, Kernel>::new(rt.core(0), 1, move |ctx, data| {
///     let _ = ctx.signal(&done, data.into_iter().next().unwrap());
/// })?;
/// // The request names the handler's slot; nothing waits for the device.
/// device.read(&Outside::<Kernel>::new(), 64, handler.slot(0));
/// std::fs::File::from(tx).write_all(b"hello")?;
/// assert_eq!(out.wait_timeout(Duration::from_secs(10))?, Ok(b"hello".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Reactor {
    owner: Arc<Owner>,
}

/// The reactor's thread and what it shares; dropped with the last clone.
struct Owner {
    shared: Arc<Shared>,
    backend: Backend,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
}

impl fmt::Debug for Reactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reactor")
            .field("backend", &self.owner.backend)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A backend opened on the reactor thread.
pub(crate) enum Engine {
    Uring(Box<crate::raw::uring::Ring>),
    Epoll(crate::raw::epoll::Epoll),
}

/// Opens the engine for `backend`: `IoUring` tries io_uring (`uring`) and
/// falls back to epoll (`epoll`) on any error; `Auto` is epoll.
pub(crate) fn open_engine(
    backend: Backend,
    uring: impl FnOnce() -> io::Result<crate::raw::uring::Ring>,
    epoll: impl FnOnce() -> io::Result<crate::raw::epoll::Epoll>,
) -> io::Result<Engine> {
    match backend {
        Backend::Auto | Backend::Epoll => epoll().map(Engine::Epoll),
        Backend::IoUring => match uring() {
            Ok(r) => Ok(Engine::Uring(Box::new(r))),
            Err(_) => epoll().map(Engine::Epoll),
        },
    }
}

/// The epoll token of the wake eventfd.
pub(crate) const WAKE: u64 = u64::MAX;

/// Submission slots of the io_uring (more are submitted in batches).
const URING_ENTRIES: u32 = 256;

impl Reactor {
    /// A reactor with the default backend ([`Backend::Auto`]).
    pub fn new() -> io::Result<Self> {
        Self::with_backend(Backend::Auto)
    }

    /// A reactor with `backend` ([`Backend::IoUring`] falls back to epoll
    /// where the kernel refuses io_uring). Fails if epoll cannot be opened
    /// either, or the thread cannot be started.
    pub fn with_backend(backend: Backend) -> io::Result<Self> {
        Self::start(backend, uring::open)
    }

    /// Starts the thread, which opens the engine itself (an io_uring made
    /// single-issuer belongs to the thread that creates it) and reports the
    /// backend it got.
    pub(crate) fn start(
        backend: Backend,
        uring: fn() -> io::Result<crate::raw::uring::Ring>,
    ) -> io::Result<Self> {
        let wake = crate::raw::fd::eventfd(false)?;
        let shared = Arc::new(Shared {
            commands: Commands::new(),
            wake,
            counters: Counters::default(),
            next_id: AtomicU64::new(0),
            epoll: OnceLock::new(),
            ports: CachePadded::new(manycore_sync::Mutex::new(HashMap::new())),
            parked: CachePadded::new(Parked::default()),
            lease: CachePadded::new(Lease::new()),
        });
        let (tx, rx) = mpsc::channel::<io::Result<Backend>>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("manycore-flow-reactor".into())
            .spawn(move || {
                let engine = open_engine(backend, uring, crate::raw::epoll::Epoll::new);
                match engine {
                    Ok(Engine::Uring(ring)) => {
                        let _ = tx.send(Ok(Backend::IoUring));
                        uring::run(&sh, *ring);
                    }
                    Ok(Engine::Epoll(ep)) => {
                        let ep = sh.epoll.get_or_init(|| ep);
                        let _ = tx.send(Ok(Backend::Epoll));
                        epoll::run(&sh, ep);
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })?;
        let got = rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the reactor thread died")));
        let thread_id = thread.thread().id();
        match got {
            Ok(backend) => Ok(Self {
                owner: Arc::new(Owner {
                    shared,
                    backend,
                    thread: Mutex::new(Some(thread)),
                    thread_id,
                }),
            }),
            Err(e) => {
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// The backend that runs ([`Backend::IoUring`] or [`Backend::Epoll`]).
    pub fn backend(&self) -> Backend {
        self.owner.backend
    }

    /// The reactor's counters.
    pub fn stats(&self) -> ReactorStats {
        self.owner.shared.counters.snapshot()
    }

    /// Registers `fd` (a pipe end, an eventfd, a timerfd, a socket, a file)
    /// as a device. The device owns the fd from now on: it is closed when
    /// the device is deregistered, and its blocking flag is set as the
    /// backend needs (non-blocking for epoll, blocking for io_uring).
    ///
    /// Fails only if the reactor has shut down.
    pub fn register(&self, fd: impl Into<OwnedFd>) -> io::Result<Device> {
        let sh = &self.owner.shared;
        let id = sh.next_id.fetch_add(1, Ordering::Relaxed);
        let fd: OwnedFd = fd.into();
        let mut broken = None;
        if let Some(ep) = sh.epoll.get() {
            // The direct path: non-blocking, watched edge-triggered for
            // both directions, in the table before its first edge can be
            // looked up (the table's lock is held across the addition).
            match crate::raw::fd::set_nonblocking(fd.as_fd(), true) {
                Err(e) => broken = Some(IoError::Os(errno(&e))),
                Ok(()) => {
                    let mut ports = sh.ports();
                    if sh.commands.is_stopped() {
                        return Err(io::Error::other(IoError::Shutdown));
                    }
                    use crate::raw::epoll::{ET, IN, OUT, RDHUP};
                    match ep.add(fd.as_fd(), IN | OUT | RDHUP | ET, id) {
                        Ok(()) => {
                            let port = Arc::new(Port::new(fd));
                            if port.is_pipe_end() {
                                for other in ports.values() {
                                    Port::link(&port, other);
                                }
                            }
                            ports.insert(id, port.clone());
                            request::add(&sh.counters.devices, 1);
                            return Ok(Device {
                                shared: sh.clone(),
                                port: Some(port),
                                id,
                            });
                        }
                        // Not pollable (a regular file): always ready, served
                        // by the reactor thread as requests come.
                        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
                        Err(e) => broken = Some(IoError::Os(errno(&e))),
                    }
                }
            }
        }
        match sh.send(Cmd::Register { id, fd, broken }) {
            Ok(()) => Ok(Device {
                shared: sh.clone(),
                port: None,
                id,
            }),
            Err(_) => Err(io::Error::other(IoError::Shutdown)),
        }
    }

    /// Shuts the reactor down: every request outstanding is answered with
    /// [`IoError::Shutdown`], every device's fd is closed (under epoll, an
    /// fd epoll watches is closed when its [`Device`] is dropped: its
    /// handle may still be making a system call on it), the thread exits
    /// (this waits for it). Later requests are answered with `Shutdown` at
    /// once; later registrations fail. Idempotent. Called from a core (a
    /// body), it only begins the shutdown and does not wait for the thread
    /// (the thread may be delivering to that core).
    pub fn shutdown(&self) {
        self.owner.shutdown();
    }
}

impl Owner {
    fn shutdown(&self) {
        if self.shared.commands.stop() {
            self.shared.ring_wake();
        }
        // Never join from the reactor thread itself (a value it drops could
        // hold the last clone), nor from a core: the reactor may be waiting
        // for room in that very core's ring to deliver an answer. The
        // thread ends by itself.
        if std::thread::current().id() == self.thread_id || crate::here::on_a_core() {
            return;
        }
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A file descriptor registered with a [`Reactor`]: the device of the
/// paper's Figure 4. Requests on one device are served in the order they
/// are made, one at a time per direction (reads, writes). Dropping the
/// device deregisters it: its outstanding requests are answered with
/// [`IoError::Deregistered`] and its fd is closed.
///
/// Under epoll, a device whose fd epoll watches (a pipe, a socket, an
/// eventfd, a timerfd) is on the **direct path**: a request that no
/// earlier one of its direction waits before, and that does not have to
/// wait, is made with a non-blocking system call and answered on the
/// issuer's thread, before `read` or `write` returns (the receiver fires
/// on its core as for any signal). One that has to wait is parked with
/// the device, and answered by whichever thread takes the fd's next edge
/// from the reactor's epoll instance: the reactor thread, or an issuer
/// that polls the instance after a request of its own went through (as a
/// write to one device is what makes another ready; a write to a pipe
/// whose read end is a device of the same reactor, or to an eventfd
/// device, serves that end's or that eventfd's reads straight after it). A read of a device known to be empty is parked
/// without the system call. A read of a pipe
/// asks the kernel for a few bytes more than requested, to tell the pipe
/// empty: bytes beyond the request are kept by the device and answer its
/// next reads, so they are lost if the device is dropped (as is what is
/// left in the pipe, whose fd the drop closes). [`ReactorStats::direct`]
/// counts the answers made on issuers' threads.
pub struct Device {
    shared: Arc<Shared>,
    /// The device on the direct path (its fd and queues, shared with the
    /// reactor); `None`: served by the reactor thread.
    port: Option<Arc<Port>>,
    id: u64,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("id", &self.id).finish()
    }
}

impl Device {
    /// The device's number in its reactor.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Reads up to `len` bytes; the receiver `to` gets them (at least one,
    /// unless `len` is 0), or the error: [`IoError::Closed`] at the end of
    /// the stream. Issued by a kernel or kernel-interface thread (or code
    /// acting as one); the answer comes as a kernel-mode signal.
    ///
    /// A user thread may not talk to a device: it makes a system call
    /// through a kernel-interface thread instead.
    ///
    /// ```compile_fail,E0277
    /// use manycore_flow::{Device, IoResult, Outside, Slot, User};
    /// fn user_reads(dev: &Device, to: Slot<IoResult<Vec<u8>>, User>) {
    ///     dev.read(&Outside::<User>::new(), 8, to);
    /// }
    /// ```
    ///
    /// ```
    /// use manycore_flow::{Ctx, Device, IoResult, KernelInterface, Slot, User};
    /// fn gate_reads(ctx: &Ctx<'_, KernelInterface>, dev: &Device, to: Slot<IoResult<Vec<u8>>, User>) {
    ///     dev.read(ctx, 8, to);
    /// }
    /// ```
    pub fn read<I, N>(&self, by: &I, len: usize, to: Slot<IoResult<Vec<u8>>, N>)
    where
        I: Issuer,
        I::Mode: ContinuesTo<Kernel>,
        N: Mode,
    {
        let _ = by;
        self.request(Req::Read {
            len,
            to: to.erase(),
        });
    }

    /// Writes `data`, or as much of it as the device takes at once; the
    /// receiver `to` gets the count written, or the error:
    /// [`IoError::Closed`] if the reader hung up. (A write to a pipe or
    /// socket whose reader has gone raises `SIGPIPE`, which Rust programs
    /// ignore unless told otherwise; a program that restores its default
    /// action is killed by it instead.)
    pub fn write<I, N>(&self, by: &I, data: Vec<u8>, to: Slot<IoResult<usize>, N>)
    where
        I: Issuer,
        I::Mode: ContinuesTo<Kernel>,
        N: Mode,
    {
        let _ = by;
        self.request(Req::Write {
            data,
            to: to.erase(),
        });
    }

    fn request(&self, req: Req) {
        let sh = &*self.shared;
        if let Some(p) = &self.port {
            let write = matches!(req, Req::Write { .. });
            let submitted = p.submit(req, &sh.counters.direct, &sh.parked);
            if let Submitted::Parked(wake) = submitted {
                if wake {
                    sh.counters.wakeups.fetch_add(1, Ordering::Relaxed);
                    sh.ring_wake();
                }
            } else {
                // A write to a pipe whose read end is a port (or to an
                // eventfd) serves that end here (its edge is left for the next poll). The poll is
                // then needed only to keep the reactor out of the instance
                // (once per lease) or for requests that wait for an edge.
                let fed = write && p.feed(&sh.counters.direct, &sh.parked);
                if !fed || !sh.lease.is_marked() || sh.parked.alone.load(Ordering::Relaxed) > 0 {
                    sh.poll();
                }
            }
            return;
        }
        if let Err(Cmd::Request { req, .. }) = sh.send(Cmd::Request { id: self.id, req }) {
            // The reactor has stopped: answer here.
            let direct = &sh.counters.direct;
            request::add(&direct.requests, 1);
            request::answer(req, Answer::Failed(IoError::Shutdown), direct);
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let sh = &*self.shared;
        match &self.port {
            Some(p) => {
                // Gone from the table already if the reactor shut down.
                if sh.ports().remove(&self.id).is_some() {
                    if let Some(ep) = sh.epoll.get() {
                        let _ = ep.delete(p.fd());
                    }
                    p.close(IoError::Deregistered, &sh.counters.direct, &sh.parked);
                    sh.counters.devices.fetch_sub(1, Ordering::Relaxed);
                }
                // The fd is closed with the last reference to the port
                // (a server may hold one for a moment).
            }
            // Refused only once the reactor has stopped, which closed the fd.
            None => {
                let _ = sh.send(Cmd::Deregister { id: self.id });
            }
        }
    }
}

/// A pipe: (read end, write end), close-on-exec. Either end can be
/// registered as a device (`File::from` makes the other a plain file).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    crate::raw::fd::pipe()
}

/// An eventfd (counter 0, counter mode, close-on-exec), to register as a
/// device: 8-byte reads take the count (and leave it 0), 8-byte writes add
/// to it. Registered once and used for both directions, its writes feed
/// its parked reads on the writer's thread.
pub fn eventfd() -> io::Result<OwnedFd> {
    crate::raw::fd::eventfd(false)
}

/// A timerfd on the monotonic clock (close-on-exec), to register as a
/// device: it expires first after `first` and then every `interval`
/// (`None`: once), and an 8-byte read completes at an expiry with the
/// number of expiries since the last read (a `u64`, native endian). Every
/// `Duration` is accepted: `ZERO` expires at once, and durations beyond
/// what the kernel's `timespec` holds saturate (`Duration::MAX` never
/// expires in practice).
///
/// ```
/// use manycore_flow::{timerfd, Kernel, Outcome, Outside, Reactor};
/// use manycore_rt::Runtime;
/// use std::time::Duration;
///
/// let rt = Runtime::builder().cores(1).build().unwrap();
/// let reactor = Reactor::new().unwrap();
/// let timer = reactor.register(timerfd(Duration::from_millis(1), None).unwrap()).unwrap();
/// let (done, expiries) = Outcome::new(rt.core(0)).unwrap();
/// timer.read(&Outside::<Kernel>::new(), 8, done);
/// let bytes = expiries.wait_timeout(Duration::from_secs(10)).unwrap().unwrap();
/// assert_eq!(u64::from_ne_bytes(bytes.try_into().unwrap()), 1);
/// ```
pub fn timerfd(
    first: std::time::Duration,
    interval: Option<std::time::Duration>,
) -> io::Result<OwnedFd> {
    crate::raw::fd::timerfd(first, interval)
}
