//! An epoll instance: registration by token, and a wait that hands back
//! (token, events) pairs.

use super::fd::check;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Readable.
pub(crate) const IN: u32 = libc::EPOLLIN as u32;
/// Writable.
pub(crate) const OUT: u32 = libc::EPOLLOUT as u32;
/// The peer shut its writing half down.
pub(crate) const RDHUP: u32 = libc::EPOLLRDHUP as u32;
/// Edge-triggered.
pub(crate) const ET: u32 = libc::EPOLLET as u32;

/// The most events one wait reports.
pub(crate) const BATCH: usize = 64;

/// An epoll instance. Shared: any thread may wait on it (each wait reports
/// an edge-triggered event to one waiter only).
pub(crate) struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new instance.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: epoll_create1 takes no pointers.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Self {
            // SAFETY: epoll_create1 succeeded: a fresh fd nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }
    /// Watches `fd` for `events`, reported with `token`.
    pub(crate) fn add(&self, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid event for the call to read; both fds are
        // open while borrowed / owned.
        check(unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut ev,
            )
        })
        .map(drop)
    }

    /// Stops watching `fd`.
    pub(crate) fn delete(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add` (the event is ignored by DEL but must be valid
        // on old kernels).
        check(unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd.as_raw_fd(),
                &mut ev,
            )
        })
        .map(drop)
    }

    /// Waits up to `timeout_ms` (-1: no limit) and hands each (token,
    /// events) pair reported (at most `max`, at most [`BATCH`]) to `out`;
    /// returns how many. `EINTR` reports nothing.
    pub(crate) fn wait(
        &self,
        timeout_ms: i32,
        max: usize,
        mut out: impl FnMut(u64, u32),
    ) -> io::Result<usize> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
        let max = max.clamp(1, BATCH);
        // SAFETY: the kernel writes at most `max <= events.len()` entries
        // into `events`, a local array.
        let r = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                events.as_mut_ptr(),
                max as libc::c_int,
                timeout_ms,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        for ev in &events[..r as usize] {
            // Copies: the struct is packed on x86_64.
            let (token, events) = (ev.u64, ev.events);
            out(token, events);
        }
        Ok(r as usize)
    }
}
