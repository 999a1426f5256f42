//! File-descriptor system calls through `libc`, each made safe by owning or
//! borrowing its fds (`OwnedFd`, `BorrowedFd`) and by passing the kernel
//! only buffers it may write.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `Ok(r)` for a non-negative return value, the thread's `errno` otherwise.
pub(super) fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A pipe: (read end, write end), both close-on-exec, in blocking mode.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the kernel to fill.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both are fresh fds that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// An eventfd (counter 0, close-on-exec), non-blocking if `nonblocking`.
pub(crate) fn eventfd(nonblocking: bool) -> io::Result<OwnedFd> {
    let flags = libc::EFD_CLOEXEC | if nonblocking { libc::EFD_NONBLOCK } else { 0 };
    // SAFETY: eventfd takes no pointers.
    let fd = check(unsafe { libc::eventfd(0, flags) })?;
    // SAFETY: eventfd succeeded, so `fd` is a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A timerfd on the monotonic clock (close-on-exec, blocking), armed to
/// expire first after `first` (at least 1 ns: a zero `it_value` would
/// disarm it) and then every `interval` (`None`: once). Durations beyond
/// what a `timespec` holds saturate.
pub(crate) fn timerfd(
    first: std::time::Duration,
    interval: Option<std::time::Duration>,
) -> io::Result<OwnedFd> {
    fn spec(d: std::time::Duration) -> libc::timespec {
        libc::timespec {
            tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: d.subsec_nanos() as libc::c_long,
        }
    }
    // SAFETY: timerfd_create takes no pointers.
    let fd = check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) })?;
    // SAFETY: timerfd_create succeeded, so `fd` is a fresh fd that nothing
    // else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let value = libc::itimerspec {
        it_value: spec(first.max(std::time::Duration::from_nanos(1))),
        it_interval: spec(interval.unwrap_or(std::time::Duration::ZERO)),
    };
    // SAFETY: `value` is a valid itimerspec for the kernel to read; the
    // old value is not asked for (null); `fd` is open (owned above).
    check(unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &value, std::ptr::null_mut()) })?;
    Ok(fd)
}

/// Sets or clears `O_NONBLOCK` on the file description of `fd`.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL takes no pointer; `fd` is open while borrowed.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    let want = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if want != flags {
        // SAFETY: F_SETFL takes an int; `fd` is open while borrowed.
        check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, want) })?;
    }
    Ok(())
}

/// Reads at most `buf.capacity() - buf.len()` bytes into the spare capacity
/// of `buf` and extends it by what was read; returns that count (0 at end
/// of file). Retries on `EINTR`.
pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut Vec<u8>) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    loop {
        // SAFETY: the kernel writes at most `spare.len()` bytes into
        // `spare`, which is memory `buf` owns; `fd` is open while borrowed.
        let r = unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
        if r >= 0 {
            let n = r as usize;
            let len = buf.len();
            // SAFETY: the kernel initialised the first `n <= spare.len()`
            // bytes of the spare capacity.
            unsafe { buf.set_len(len + n) };
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes `data` (or a prefix of it); returns the count written. Retries on
/// `EINTR`.
pub(crate) fn write(fd: BorrowedFd<'_>, data: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: the kernel reads at most `data.len()` bytes of `data`;
        // `fd` is open while borrowed.
        let r = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Waits until `fd` is readable or `timeout` has passed: whether it is
/// readable. `EINTR` reports not readable.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout: std::time::Duration) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `p` is one valid pollfd and `ts` a valid timespec, both locals
    // the kernel reads (and writes `p.revents`) during the call only; no
    // signal mask is passed; `fd` is open while borrowed.
    let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0 && p.revents & libc::POLLIN != 0)
}

/// What a port needs to know of a pipe or FIFO (`pipe_facts`).
pub(crate) struct Pipe {
    /// In byte-stream mode (not `O_DIRECT`, whose reads return one packet
    /// at a time): a read that returns less than it asked for (and more
    /// than nothing) left it empty.
    pub(crate) stream: bool,
    /// Which pipe it is an end of, and which end: `(device, inode, read
    /// end)` when opened for reading only or writing only (the two ends of
    /// one pipe share the device and inode); `None` when opened for both.
    pub(crate) end: Option<(u64, u64, bool)>,
}

/// `fd`'s pipe facts if it is a pipe or FIFO, `None` otherwise (or if the
/// kernel will not say): one `fstat` and one `F_GETFL`.
pub(crate) fn pipe_facts(fd: BorrowedFd<'_>) -> Option<Pipe> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: the kernel fills `st`, a local of the right type, on success;
    // `fd` is open while borrowed.
    if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    // SAFETY: F_GETFL takes no pointer; `fd` is open while borrowed.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return None;
    }
    let end = match flags & libc::O_ACCMODE {
        libc::O_RDONLY => Some((st.st_dev, st.st_ino, true)),
        libc::O_WRONLY => Some((st.st_dev, st.st_ino, false)),
        _ => None,
    };
    Some(Pipe {
        stream: flags & libc::O_DIRECT == 0,
        end,
    })
}

/// Whether `fd` is an eventfd, and if so whether a read drains it: `None`
/// for anything else; `Some(true)` for an eventfd that the kernel reports
/// in counter mode (a read returns the whole count and leaves it 0, so a
/// read that went through left it empty); `Some(false)` for one in
/// semaphore mode, or whose mode the kernel does not report.
pub(crate) fn eventfd_mode(fd: BorrowedFd<'_>) -> Option<bool> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    let mut lines = info.lines();
    if !lines.clone().any(|l| l.starts_with("eventfd-count:")) {
        return None;
    }
    let drains = lines.any(|l| {
        l.strip_prefix("eventfd-semaphore:")
            .is_some_and(|v| v.trim() == "0")
    });
    Some(drains)
}
