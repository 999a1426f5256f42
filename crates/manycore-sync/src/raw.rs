//! All of manycore-sync's `unsafe`: the futex system call, CPU affinity, and
//! the libc queries behind `cpu` (thread id, current CPU, process CPU time).

#[cfg(not(loom))]
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// `futex(FUTEX_WAIT)`: sleeps while `*word == expected`, at most `timeout`.
/// Returns false if the timeout expired. Spurious returns are possible.
#[cfg(not(loom))]
pub(crate) fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    timeout: Option<Duration>,
    private: bool,
) -> bool {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64 / 2) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    let op = libc::FUTEX_WAIT | if private { libc::FUTEX_PRIVATE_FLAG } else { 0 };
    // SAFETY: `word` is a live, 4-byte aligned AtomicU32 for the duration of the
    // call; `ts_ptr` is null or points at a timespec on this stack frame. The
    // kernel only reads both.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            ts_ptr,
            0usize,
            0u32,
        )
    };
    !(r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT))
}

/// `futex(FUTEX_WAKE)`: wakes up to `n` threads sleeping on `word`.
#[cfg(not(loom))]
pub(crate) fn futex_wake(word: &AtomicU32, n: i32, private: bool) -> usize {
    let op = libc::FUTEX_WAKE | if private { libc::FUTEX_PRIVATE_FLAG } else { 0 };
    // SAFETY: `word` is a live AtomicU32; FUTEX_WAKE does not access memory
    // through the pointer beyond using its address as a key.
    let r = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op, n) };
    r.max(0) as usize
}

/// The calling thread's affinity mask as a list of CPU numbers.
pub(crate) fn thread_affinity() -> std::io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 means the calling thread; `set` is a valid cpu_set_t of the size we pass.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads the set we own, with cpu < CPU_SETSIZE.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Sets the calling thread's affinity to exactly `cpus`.
pub(crate) fn set_thread_affinity(cpus: &[usize]) -> std::io::Result<()> {
    set_affinity_of(0, cpus)
}

/// The calling thread's kernel thread id.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on at this instant, if the kernel says.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

/// Sets the affinity of thread `tid` (0: the calling thread) to exactly `cpus`.
pub(crate) fn set_affinity_of(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &c in cpus {
        if c >= max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("cpu {c} out of range"),
            ));
        }
        // SAFETY: c < CPU_SETSIZE, checked above; `set` is ours.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `tid` is a thread id (0: the calling thread; an id that no
    // longer exists makes the call fail with ESRCH); `set` is a valid cpu_set_t.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time (user + system) used by the whole process, from getrusage.
pub(crate) fn process_cpu_time() -> Duration {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to an rusage we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
