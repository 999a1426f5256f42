//! All `unsafe` of manycore-sock: shared mappings, typed views into them,
//! byte copies in and out, and the Linux calls (memfd, pidfd, poll) that the
//! rckSock emulation needs on a process-shared Linux machine.

use crate::layout::{BacklogSlot, ConnSlot, RegionHeader};
use manycore_sync::atomic::AtomicU64;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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
// SAFETY: all four are repr(C) structs of AtomicU32/AtomicU64/SharedEventCount
// (itself repr(C) of two AtomicU32, documented as valid for all bit patterns).
unsafe impl ShmSafe for RegionHeader {}
// SAFETY: see above.
unsafe impl ShmSafe for ConnSlot {}
// SAFETY: see above.
unsafe impl ShmSafe for BacklogSlot {}
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

/// A sealed-size anonymous memory file of `len` bytes (private namespace).
pub(crate) fn memfd(name: &str, len: usize) -> io::Result<OwnedFd> {
    let n = CString::new(name).unwrap_or_default();
    // SAFETY: n is a valid NUL-terminated string for the call.
    let fd = cvt(unsafe {
        libc::memfd_create(n.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
    })?;
    // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    set_len(&fd, len)?;
    // SAFETY: fcntl on a valid descriptor with integer argument.
    cvt(unsafe {
        libc::fcntl(
            fd.as_raw_fd(),
            libc::F_ADD_SEALS,
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
        )
    })?;
    Ok(fd)
}

/// Creates `path` with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600.
pub(crate) fn create_excl(path: &Path) -> io::Result<OwnedFd> {
    let c = cpath(path)?;
    // SAFETY: c is a valid C string; the mode is passed as the variadic arg.
    let fd = cvt(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    })?;
    // SAFETY: fd was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // fchmod in case a umask narrowed or the fs widened it.
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) })?;
    Ok(fd)
}

/// Opens an existing `path` read-write, refusing symlinks.
pub(crate) fn open_rw(path: &Path) -> io::Result<OwnedFd> {
    let c = cpath(path)?;
    // SAFETY: c is a valid C string.
    let fd = cvt(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: fd was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets the file length.
pub(crate) fn set_len(fd: &OwnedFd, len: usize) -> io::Result<()> {
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) }).map(drop)
}

/// (owner uid, size, mode, is regular file) of an open descriptor.
pub(crate) fn fstat(fd: &OwnedFd) -> io::Result<(u32, u64, u32, bool)> {
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

/// A pidfd for `pid` (Linux 5.3+), which polls readable once it exits.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(io::Error::from(io::ErrorKind::InvalidData));
    }
    // SAFETY: the raw syscall takes (pid, flags) and returns an fd or -1.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(r as libc::c_int) })
}

/// Waits up to `timeout` for `fd` to become readable (a pidfd: the process
/// exited). Returns true if readable.
pub(crate) fn poll_readable(fd: &OwnedFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && p.revents != 0
}

/// Our process id.
pub(crate) fn getpid() -> u32 {
    std::process::id()
}

/// The CPU this thread runs on now (or u32::MAX if unknown).
pub(crate) fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 {
        u32::MAX
    } else {
        c as u32
    }
}
