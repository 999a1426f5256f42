//! Tokio types (feature `tokio`): [`AsyncShmStream`] implements tokio's
//! `AsyncRead` and `AsyncWrite`, [`AsyncShmListener`] accepts
//! asynchronously. Both register the readiness descriptor of the
//! underlying [`ShmStream`]/[`ShmListener`] (`AsFd`) with tokio's reactor
//! through `AsyncFd`, for *readable* only: the descriptor says "the socket
//! may make progress" for whichever direction last returned `WouldBlock`,
//! so reads and writes both wait on it (see "Readiness" in
//! `src/README.md`).
//!
//! A direction that finds nothing to do first polls the ring for as long
//! as a blocking wait of the stream's [`WaitMode`](crate::WaitMode) would
//! spin before it sleeps (`Hybrid`: the adaptive budget, at most its
//! `spin`; `Spin`: 10 ms; `Sleep`: not at all), in place, or yields the CPU
//! a few times when the peer last ran on it; only then does it arm and wait
//! on the descriptor. A peer that answers within the budget costs no
//! system call on either side: no doorbell, no futex wake, no trip through
//! the reactor. The price is that of the blocking wait: the executor's
//! thread spins for that long; `WaitMode::Sleep` never spins.
//!
//! A peer that dies while a task waits hangs up the descriptor, which
//! wakes the task; its next call finds the peer gone before it would arm
//! again, and returns what a blocking call returns (`ConnectionReset`
//! for a read once the data is drained, `BrokenPipe` for a write). No
//! timer is needed, and a live peer costs nothing more ("A dead peer"
//! under "Readiness" in `src/README.md`).

use crate::stream::{lock, PollSpin};
use crate::{Config, PeerAddr, ShmListener, ShmStream, SockAddr};
use manycore_sync::atomic::Ordering;
use manycore_sync::SpinBudget;
use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The tasks waiting on one stream's descriptor: the reading one and the
/// writing one (tokio's `poll_read_ready` keeps a single waker, and both
/// directions wait for the descriptor to be readable, so a stream split
/// between two tasks registers this waker, which wakes both).
#[derive(Default)]
struct Wakers {
    slots: Mutex<[Option<Waker>; 2]>,
}

impl Wake for Wakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let taken = std::mem::take(&mut *lock(&self.slots));
        for w in taken.into_iter().flatten() {
            w.wake();
        }
    }
}

/// A [`ShmStream`] for tokio: `AsyncRead + AsyncWrite`. The stream is put
/// in non-blocking mode. Reads and writes may run in two tasks at once
/// (`tokio::io::split`).
pub struct AsyncShmStream {
    fd: AsyncFd<ShmStream>,
    wakers: Arc<Wakers>,
    /// Per direction (0 read, 1 write): armed since its last progress (a
    /// wake-up that finds nothing arms again without spinning).
    armed: [bool; 2],
}

impl fmt::Debug for AsyncShmStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsyncShmStream")
            .field(self.fd.get_ref())
            .finish()
    }
}

impl AsyncShmStream {
    /// Wraps a connected stream (must be called within a tokio runtime).
    /// One `AsyncShmStream` per connection: clones of a stream share its
    /// descriptor, which a reactor registers once (`tokio::io::split`
    /// shares one `AsyncShmStream` between tasks instead).
    pub fn new(s: ShmStream) -> io::Result<AsyncShmStream> {
        s.set_nonblocking(true)?;
        Ok(AsyncShmStream {
            fd: crate::raw::async_stream(s)?,
            wakers: Arc::default(),
            armed: [false; 2],
        })
    }

    /// Connects (as [`ShmStream::connect`], which never waits).
    pub fn connect(addr: &SockAddr) -> io::Result<AsyncShmStream> {
        Self::new(ShmStream::connect(addr)?)
    }

    /// The stream.
    pub fn get_ref(&self) -> &ShmStream {
        self.fd.get_ref()
    }

    /// The stream back, in blocking mode.
    pub fn into_inner(self) -> io::Result<ShmStream> {
        let s = self.fd.into_inner();
        s.set_nonblocking(false)?;
        Ok(s)
    }

    /// Runs `op` until it does not return `WouldBlock`, waiting for the
    /// descriptor in between; `op`'s flag says whether it may arm. The
    /// first `WouldBlock` since the direction's last progress spins first
    /// ([`AsyncShmStream::spin`]). `slot` 0 is the reading task, 1 the
    /// writing.
    fn poll_io<R>(
        &mut self,
        cx: &mut Context<'_>,
        slot: usize,
        mut op: impl FnMut(&ShmStream, bool) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            match op(self.fd.get_ref(), self.armed[slot]) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => {
                    self.armed[slot] = false;
                    return Poll::Ready(r);
                }
            }
            if slot == 1
                && self
                    .get_ref()
                    .c
                    .write_unarmed
                    .swap(false, Ordering::Relaxed)
            {
                // The write waits for a shrinking neighbour's ring, whose
                // wake-ups go elsewhere: try again on the next turn.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if !self.armed[slot] {
                if let Some(r) = self.spin(slot == 1, &mut op) {
                    return Poll::Ready(r);
                }
                // Arm (in `op`), and read after all if the data came.
                self.armed[slot] = true;
                continue;
            }
            lock(&self.wakers.slots)[slot] = Some(cx.waker().clone());
            let waker = Waker::from(self.wakers.clone());
            let mut both = Context::from_waker(&waker);
            match self.fd.poll_read_ready(&mut both) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(mut g)) => g.clear_ready(),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Before a direction arms: polls the ring (`op` without arming) as a
    /// blocking wait of the stream's wait mode spins before it sleeps, in
    /// place: the executor's thread spins for at most the budget (under
    /// `Hybrid` the adaptive one, at most its `spin`), or, when the peer
    /// last ran on this CPU, yields the CPU to it a few times. Yielding to
    /// the scheduler instead would cost a wake-up of tokio's reactor per
    /// turn (two system calls) for a future run by `block_on`, and leave a
    /// colocated peer no CPU. `None` if the spin found nothing.
    fn spin<R>(
        &self,
        write: bool,
        op: &mut impl FnMut(&ShmStream, bool) -> io::Result<R>,
    ) -> Option<io::Result<R>> {
        let s = self.fd.get_ref();
        let mut again = || match op(s, false) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            r => Some(r),
        };
        match s.c.poll_spin(write) {
            PollSpin::None => None,
            PollSpin::Yield(n) => (0..n).find_map(|_| {
                std::thread::yield_now();
                again()
            }),
            PollSpin::Spin(budget) => {
                let mut b = SpinBudget::new(budget);
                let r = std::iter::from_fn(|| b.spin().then_some(())).find_map(|()| again());
                s.c.poll_spun(write, r.is_some());
                r
            }
        }
    }
}

impl AsyncRead for AsyncShmStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let dst = buf.initialize_unfilled();
        let r = this.poll_io(cx, 0, |s, arm| match arm {
            true => io::Read::read(&mut &*s, dst),
            false => s.read_no_arm(dst),
        });
        match r {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for AsyncShmStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_io(cx, 1, |s, arm| match arm {
            true => io::Write::write(&mut &*s, buf),
            false => s.write_no_arm(buf),
        })
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // Unarmed, the first non-empty buffer alone (a short write).
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        self.get_mut().poll_io(cx, 1, |s, arm| match arm {
            true => io::Write::write_vectored(&mut &*s, bufs),
            false => s.write_no_arm(first),
        })
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_ref().shutdown(std::net::Shutdown::Write))
    }
}

/// A [`ShmListener`] for tokio: `accept` waits on the listener's readiness
/// descriptor. The listener is put in non-blocking mode.
pub struct AsyncShmListener {
    fd: AsyncFd<ShmListener>,
}

impl fmt::Debug for AsyncShmListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsyncShmListener")
            .field(self.fd.get_ref())
            .finish()
    }
}

impl AsyncShmListener {
    /// Binds `addr` (as [`ShmListener::bind`]); within a tokio runtime.
    pub fn bind(addr: &SockAddr) -> io::Result<AsyncShmListener> {
        Self::new(ShmListener::bind(addr)?)
    }

    /// Binds `addr` with `config` (as [`ShmListener::bind_with`]).
    pub fn bind_with(addr: &SockAddr, config: Config) -> io::Result<AsyncShmListener> {
        Self::new(ShmListener::bind_with(addr, config)?)
    }

    /// Wraps a bound listener.
    pub fn new(l: ShmListener) -> io::Result<AsyncShmListener> {
        l.set_nonblocking(true)?;
        Ok(AsyncShmListener {
            fd: crate::raw::async_listener(l)?,
        })
    }

    /// The listener.
    pub fn get_ref(&self) -> &ShmListener {
        self.fd.get_ref()
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SockAddr> {
        self.get_ref().local_addr()
    }

    /// Accepts a connection (as [`ShmListener::accept`]), waiting without
    /// blocking the thread.
    pub async fn accept(&self) -> io::Result<(AsyncShmStream, PeerAddr)> {
        loop {
            let mut g = self.fd.readable().await?;
            match g.try_io(|l| l.get_ref().accept()) {
                Ok(Ok((s, p))) => return Ok((AsyncShmStream::new(s)?, p)),
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }
}
