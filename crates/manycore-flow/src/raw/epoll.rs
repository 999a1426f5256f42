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

/// An epoll instance.
pub(crate) struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// A new instance that reports up to `batch` events per wait.
    pub(crate) fn new(batch: usize) -> io::Result<Self> {
        // SAFETY: epoll_create1 takes no pointers.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Self {
            // SAFETY: epoll_create1 succeeded: a fresh fd nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; batch.max(1)],
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

    /// Waits up to `timeout_ms` (-1: no limit) and appends the (token,
    /// events) pairs reported to `out`. `EINTR` reports nothing.
    pub(crate) fn wait(&mut self, timeout_ms: i32, out: &mut Vec<(u64, u32)>) -> io::Result<()> {
        // SAFETY: the kernel writes at most `events.len()` entries into
        // `events`, which this instance owns.
        let r = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        for ev in &self.events[..r as usize] {
            // Copies: the struct is packed on x86_64.
            let (token, events) = (ev.u64, ev.events);
            out.push((token, events));
        }
        Ok(())
    }
}
