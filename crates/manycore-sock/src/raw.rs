//! All `unsafe` of manycore-sock: shared mappings, typed views into them,
//! byte copies in and out, and the Linux calls (sealed memfds, Unix sockets
//! with descriptor passing, poll) that the rckSock emulation needs on a
//! process-shared Linux machine.

use crate::layout::{ConnSlot, RegionHeader};
use manycore_sync::atomic::AtomicU64;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::ptr::NonNull;
use std::time::Duration;

/// Types that may be viewed in shared memory through a shared reference:
/// made of atomics only (any bit pattern valid, all mutation interior).
///
/// # Safety
/// The implementor must be `#[repr(C)]`, contain only atomics, and accept
/// every bit pattern as a valid value.
pub(crate) unsafe trait ShmSafe {}
// SAFETY: both are repr(C) structs of AtomicU32/AtomicU64/SharedEventCount
// (itself repr(C) of two AtomicU32, documented as valid for all bit patterns).
unsafe impl ShmSafe for RegionHeader {}
// SAFETY: see above.
unsafe impl ShmSafe for ConnSlot {}
// SAFETY: a single atomic word.
unsafe impl ShmSafe for AtomicU64 {}

/// A shared, read-write mapping of a file descriptor.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory; all typed access goes through atomics
// (`ShmSafe`) or bounds-checked byte copies whose races are the protocol's.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` shared and read-write.
    pub fn map(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a fresh mapping chosen by the kernel (addr null) aliases no
        // Rust object; fd is a valid open descriptor for the call's duration.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Mapping { ptr, len })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// A typed view at byte offset `off`, or None if out of bounds or misaligned.
    pub fn get<T: ShmSafe>(&self, off: usize) -> Option<&T> {
        let size = std::mem::size_of::<T>();
        let end = off.checked_add(size)?;
        if end > self.len || off % std::mem::align_of::<T>() != 0 {
            return None;
        }
        // SAFETY: in bounds and aligned (checked above; the mapping is
        // page-aligned); T is ShmSafe so every bit pattern is a valid T and
        // shared references to it permit concurrent (atomic) mutation; the
        // reference lives no longer than `self`, which keeps the mapping.
        Some(unsafe { &*self.ptr.as_ptr().add(off).cast::<T>() })
    }

    /// Copies `src` into the mapping at `off`. Returns false (copying nothing)
    /// if out of bounds.
    pub fn write_bytes(&self, off: usize, src: &[u8]) -> bool {
        match off.checked_add(src.len()) {
            Some(end) if end <= self.len => {
                // SAFETY: destination range in bounds (checked); `src` is a
                // private buffer that cannot overlap the shared mapping.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.as_ptr(),
                        self.ptr.as_ptr().add(off),
                        src.len(),
                    )
                };
                true
            }
            _ => false,
        }
    }

    /// Copies from the mapping at `off` into `dst`. Returns false (copying
    /// nothing) if out of bounds. The bytes may be changing under a hostile
    /// peer: the copy is a snapshot, validated by the caller if it matters.
    pub fn read_bytes(&self, off: usize, dst: &mut [u8]) -> bool {
        match off.checked_add(dst.len()) {
            Some(end) if end <= self.len => {
                // SAFETY: source range in bounds (checked); `dst` is private
                // memory that cannot overlap the shared mapping. Bytes written
                // concurrently by a misbehaving peer process only yield
                // garbage bytes (u8 has no invalid values).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.ptr.as_ptr().add(off),
                        dst.as_mut_ptr(),
                        dst.len(),
                    )
                };
                true
            }
            _ => false,
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; no references into
        // the mapping outlive `self` (all views borrow it).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cpath(p: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

/// The seals every region must carry: nobody, its creator included, can
/// change its size (a shrunk shared mapping faults with SIGBUS) or the seals.
pub(crate) const REGION_SEALS: libc::c_int =
    libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A sealed-size anonymous memory file of `len` bytes ([`REGION_SEALS`]).
pub(crate) fn memfd(name: &str, len: usize) -> io::Result<OwnedFd> {
    let n = CString::new(name).unwrap_or_default();
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // Not executable (required where `vm.memfd_noexec` = 2); kernels before
    // 6.3 do not know the flag (EINVAL) and make no such demand.
    // SAFETY: n is a valid NUL-terminated string for the call.
    let fd = match cvt(unsafe { libc::memfd_create(n.as_ptr(), flags | libc::MFD_NOEXEC_SEAL) }) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // SAFETY: as above.
            cvt(unsafe { libc::memfd_create(n.as_ptr(), flags) })?
        }
        r => r?,
    };
    // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    set_len(&fd, len)?;
    // SAFETY: fcntl on a valid descriptor with integer argument.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, REGION_SEALS) })?;
    // Sealed now; the size can no longer change (nothing else in this
    // process should have touched it, but check before anyone maps it).
    if fstat(fd.as_fd())?.1 != len as u64 {
        return Err(io::Error::other(
            "manycore-sock: memfd resized while sealing",
        ));
    }
    Ok(fd)
}

/// The seals of a memory file (`EINVAL` for files that cannot be sealed).
pub(crate) fn seals(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    // SAFETY: fcntl on a valid descriptor, no argument.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) })
}

/// The filesystem magic of an open file (`TMPFS_MAGIC` for a plain memfd,
/// `HUGETLBFS_MAGIC` for a huge-page one).
pub(crate) fn fs_type(fd: BorrowedFd<'_>) -> io::Result<i64> {
    // SAFETY: an all-zero statfs is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and a valid out pointer.
    cvt(unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) })?;
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_type as i64)
}

/// Sets the file length.
pub(crate) fn set_len(fd: &OwnedFd, len: usize) -> io::Result<()> {
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) }).map(drop)
}

/// (owner uid, size, mode, is regular file) of an open descriptor.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<(u32, u64, u32, bool)> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and a valid out pointer.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok((
        st.st_uid,
        st.st_size as u64,
        st.st_mode & 0o7777,
        st.st_mode & libc::S_IFMT == libc::S_IFREG,
    ))
}

/// The real user id.
pub(crate) fn uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// True if a process with this pid exists (signal 0; EPERM means it exists).
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Our process id.
pub(crate) fn getpid() -> u32 {
    std::process::id()
}

/// The CPU this thread runs on now (or u32::MAX if unknown).
pub(crate) fn current_cpu() -> u32 {
    manycore_sync::cpu::current_cpu().map_or(u32::MAX, |c| c as u32)
}

/// A Unix socket address: a path or a Linux abstract name.
pub(crate) struct UnixAddr {
    sa: libc::sockaddr_un,
    len: libc::socklen_t,
}

impl UnixAddr {
    fn from_bytes(lead_nul: bool, name: &[u8]) -> io::Result<UnixAddr> {
        // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
        let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let start = lead_nul as usize;
        // A path keeps a terminating NUL; an abstract name is counted exactly.
        if name.is_empty() || name.contains(&0) || start + name.len() >= sa.sun_path.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "manycore-sock: socket name too long or malformed",
            ));
        }
        for (d, &b) in sa.sun_path[start..].iter_mut().zip(name) {
            *d = b as libc::c_char;
        }
        let base = std::mem::size_of::<libc::sa_family_t>();
        let len = base + start + name.len() + (!lead_nul) as usize;
        Ok(UnixAddr {
            sa,
            len: len as libc::socklen_t,
        })
    }
    /// A filesystem path.
    pub fn path(p: &Path) -> io::Result<UnixAddr> {
        use std::os::unix::ffi::OsStrExt;
        Self::from_bytes(false, p.as_os_str().as_bytes())
    }
    /// An abstract name (no file; gone with the socket).
    pub fn abstract_name(name: &str) -> io::Result<UnixAddr> {
        Self::from_bytes(true, name.as_bytes())
    }
    fn ptr(&self) -> *const libc::sockaddr {
        (&self.sa as *const libc::sockaddr_un).cast()
    }
}

/// A non-blocking, close-on-exec `SOCK_SEQPACKET` Unix socket whose file
/// (if bound to a path) will have mode 0600.
pub(crate) fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    })?;
    // SAFETY: fd was just returned by socket and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // Linux creates a bound socket's file with the socket inode's mode (less
    // the umask), so the file is never more open than this.
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) })?;
    Ok(fd)
}

/// bind(2).
pub(crate) fn bind(fd: &OwnedFd, a: &UnixAddr) -> io::Result<()> {
    // SAFETY: a valid descriptor and an address of the length given.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), a.ptr(), a.len) }).map(drop)
}

/// listen(2) with room for exactly `pending` unaccepted connections (Linux
/// refuses a connection only when the queue holds more than the backlog).
pub(crate) fn listen(fd: &OwnedFd, pending: u32) -> io::Result<()> {
    let backlog = pending.saturating_sub(1).min(i32::MAX as u32) as libc::c_int;
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) }).map(drop)
}

/// connect(2) on a non-blocking socket: `WouldBlock` if the listener's queue
/// is full.
pub(crate) fn connect(fd: &OwnedFd, a: &UnixAddr) -> io::Result<()> {
    // SAFETY: a valid descriptor and an address of the length given.
    cvt(unsafe { libc::connect(fd.as_raw_fd(), a.ptr(), a.len) }).map(drop)
}

/// accept4(2): a non-blocking, close-on-exec connection, or None if none waits.
pub(crate) fn accept(fd: &OwnedFd) -> io::Result<Option<OwnedFd>> {
    loop {
        // SAFETY: valid descriptor; null address pointers are allowed.
        let r = unsafe {
            libc::accept4(
                fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            )
        };
        if r >= 0 {
            // SAFETY: a fresh descriptor owned by nobody else.
            return Ok(Some(unsafe { OwnedFd::from_raw_fd(r) }));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) => return Ok(None),
            // The connection died in the queue, or a signal: try the next one.
            Some(libc::ECONNABORTED) | Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// Room for a few descriptors: a peer that sends more than one is refused,
/// and the kernel closes whatever does not fit.
const CMSG_WORDS: usize = 16;

/// Sends one message, passing `pass` along (SCM_RIGHTS). Never raises
/// SIGPIPE (`BrokenPipe` instead) and never blocks (`WouldBlock`).
pub(crate) fn send_msg(fd: &OwnedFd, data: &[u8], pass: Option<BorrowedFd<'_>>) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; CMSG_WORDS];
    // SAFETY: an all-zero msghdr is valid (no name, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(pfd) = pass {
        let int = std::mem::size_of::<libc::c_int>() as libc::c_uint;
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(int) } as usize;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points to `space` <= sizeof(cbuf) bytes, 8-byte
        // aligned, so CMSG_FIRSTHDR is non-null and its header and one int of
        // data lie inside cbuf.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(int) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), pfd.as_raw_fd());
        }
    }
    loop {
        // SAFETY: msg points to live buffers (iov -> data, control -> cbuf).
        let r = unsafe {
            libc::sendmsg(
                fd.as_raw_fd(),
                &msg,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if r >= 0 {
            return if r as usize == data.len() {
                Ok(())
            } else {
                Err(io::Error::from(io::ErrorKind::WriteZero))
            };
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// One received message.
#[derive(Debug)]
pub(crate) struct Received {
    /// Bytes received (0: the peer closed or shut down).
    pub len: usize,
    /// Descriptors that came with it (close-on-exec).
    pub fds: Vec<OwnedFd>,
    /// The message or its descriptors did not fit.
    pub truncated: bool,
}

/// Receives one message without blocking (None if none is there).
pub(crate) fn recv_msg(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<Received>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; CMSG_WORDS];
    // SAFETY: an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    let n = loop {
        // SAFETY: msg points to live buffers of the lengths given.
        let r = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            )
        };
        if r >= 0 {
            break r as usize;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => return Ok(None),
            _ => return Err(e),
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with msg_controllen bytes of
    // well-formed cmsg headers; CMSG_FIRSTHDR/NXTHDR stay inside them, and
    // each SCM_RIGHTS payload holds (cmsg_len - CMSG_LEN(0)) / 4 descriptors
    // that were installed for us (so we own them).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                let bytes = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                for i in 0..bytes / std::mem::size_of::<libc::c_int>() {
                    let raw = std::ptr::read_unaligned(data.add(i));
                    if raw >= 0 {
                        fds.push(OwnedFd::from_raw_fd(raw));
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Some(Received {
        len: n,
        fds,
        truncated: msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0,
    }))
}

/// The (pid, uid) the kernel recorded for the other end of a connected Unix
/// socket (at connect(2), or at listen(2) for the listener's side).
pub(crate) fn peer_cred(fd: &OwnedFd) -> io::Result<(u32, u32)> {
    let mut c = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid descriptor and an out buffer of the length given.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut c as *mut libc::ucred).cast(),
            &mut len,
        )
    })?;
    Ok((c.pid.max(0) as u32, c.uid))
}

/// shutdown(SHUT_WR): the peer's end reports a hang-up (`POLLRDHUP`).
pub(crate) fn shutdown_write(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) }).map(drop)
}

/// Waits up to `timeout` (None: forever) until one of `fds` is readable or
/// hung up. Returns how many are ready (0 on timeout or a signal).
pub(crate) fn poll_in(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> usize {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = match timeout {
        None => -1,
        // Round up: a sub-millisecond wait must not become a busy loop.
        Some(t) => t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: p is a valid array of p.len() pollfds.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    r.max(0) as usize
}

/// True once every copy of the other end of a connected socket is closed
/// (not merely shut down for writing).
pub(crate) fn closed(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0 && p.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

/// True once the other end of a connected socket is closed (every copy of
/// it: the peer endpoint was dropped or its process died) or shut down for
/// writing (a connector dropped before its connection was accepted).
pub(crate) fn hung_up(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLRDHUP) != 0
}

/// Atomically swaps two names of one directory (renameat2 RENAME_EXCHANGE).
pub(crate) fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let (ca, cb) = (cpath(a)?, cpath(b)?);
    // SAFETY: two valid C strings relative to the current directory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// 64 random bits from the kernel.
pub(crate) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: b is a valid 8-byte buffer; short reads leave zeros.
    let _ = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    u64::from_le_bytes(b) ^ (std::process::id() as u64) << 32
}

/// A close-on-exec epoll instance.
pub(crate) fn epoll() -> io::Result<OwnedFd> {
    // SAFETY: plain epoll_create1(2) call.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds `fd` to the epoll set `ep` (level-triggered, readable or hung up),
/// or removes it.
pub(crate) fn epoll_watch(ep: &OwnedFd, fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
        u64: fd.as_raw_fd() as u64,
    };
    let op = if on {
        libc::EPOLL_CTL_ADD
    } else {
        libc::EPOLL_CTL_DEL
    };
    // SAFETY: valid descriptors and a valid event (ignored for DEL).
    cvt(unsafe { libc::epoll_ctl(ep.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) }).map(drop)
}

/// Registers a stream's readiness descriptor with tokio's reactor (for
/// readable events).
#[cfg(feature = "tokio")]
pub(crate) fn async_stream(
    s: crate::ShmStream,
) -> io::Result<tokio::io::unix::AsyncFd<crate::ShmStream>> {
    // SAFETY: the stream's `as_raw_fd` is its end of the connection's Unix
    // socket, owned by the connection (`Liveness::Socket`), which the
    // stream keeps alive (an `Arc`) and never replaces: the descriptor
    // stays open and the same while the `AsyncFd` owns the stream.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(s, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

/// Registers a listener's readiness descriptor with tokio's reactor.
#[cfg(feature = "tokio")]
pub(crate) fn async_listener(
    l: crate::ShmListener,
) -> io::Result<tokio::io::unix::AsyncFd<crate::ShmListener>> {
    // SAFETY: the listener's `as_raw_fd` is its epoll set, owned by the
    // listener's shared state, which the listener keeps alive (an `Arc`)
    // and never replaces.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(l, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}
