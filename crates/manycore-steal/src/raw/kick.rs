//! The kick's signal: a worker that has waited for work for a while
//! interrupts a busy one with a real-time signal (`pool::kick` decides whom
//! and when), and the handler, on the busy worker's own thread, promotes
//! its oldest latent frames to the hungry workers, as a tick would. This is
//! how latent work leaves a worker that runs a long leaf (a sequential loop
//! that never reaches a join) or blocks inside a join's `a`.
//!
//! Why the handler may touch the chain: it runs on the owning thread, so
//! invariant L2 holds (no other thread reads `prev` or moves `state` away
//! from `LATENT`); what remains is the interrupted code on the same thread.
//!
//! * The join links a frame only once it is written, and unlinks it before
//!   it loads `state` (`Local::link` and `Local::unlink`: compiler fences,
//!   no instruction; a signal is taken between two instructions, so the
//!   handler sees the thread's own stores in program order). A handler that
//!   finds a frame on the chain therefore runs before the join's load of
//!   `state`, which sees the promotion and collects `b` from the thief.
//! * Code that promotes or puts back frames itself (a serve) or changes the
//!   binding masks the handler (`Local::mask`); a masked handler does
//!   nothing.
//! * The handler allocates nothing and takes no lock (the interrupted code
//!   may hold the allocator's or any other lock): it walks the chain, claims
//!   demand bits, CASes a mailbox, rings an event count (a futex wake) and
//!   bumps a counter of its own worker that the interrupted code does not
//!   touch while unmasked. It keeps `errno`.
//!
//! The signal is the highest real-time signal that nobody has a handler
//! for when the first kick is sent; `MANYCORE_KICK=0` in the environment
//! turns kicks off (then a worker's latent work moves only at its joins).

#[cfg(not(loom))]
use std::sync::OnceLock;

/// Whether kicks are enabled (`MANYCORE_KICK` is not `0`).
#[cfg(not(loom))]
pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("MANYCORE_KICK").map_or(true, |v| v.trim() != "0"))
}

/// The kick's signal, its handler installed on first use; `None` if kicks
/// are disabled or no real-time signal is free.
#[cfg(not(loom))]
fn signal() -> Option<libc::c_int> {
    static SIGNAL: OnceLock<Option<libc::c_int>> = OnceLock::new();
    *SIGNAL.get_or_init(|| if enabled() { install() } else { None })
}

#[cfg(not(loom))]
fn install() -> Option<libc::c_int> {
    let handler: extern "C" fn(libc::c_int) = on_kick;
    for sig in (libc::SIGRTMIN()..=libc::SIGRTMAX()).rev() {
        // SAFETY: `sigaction` with a null new action only reads the current
        // one into `old`, a plain C struct for which all-zero is valid.
        let free = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
        };
        if !free {
            continue;
        }
        // SAFETY: installs `on_kick`, an `extern "C" fn(c_int)` that is
        // async-signal-safe (module docs), for a signal nobody else handles;
        // the struct is zeroed (valid) and its mask emptied.
        let ok = unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = handler as usize;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut()) == 0
        };
        if ok {
            return Some(sig);
        }
    }
    None
}

/// Sends the kick to thread `tid` of this process; false if it could not
/// be sent (kicks disabled, no free signal, the thread is gone).
#[cfg(not(loom))]
pub(crate) fn kick(tid: i32) -> bool {
    let Some(sig) = signal() else {
        return false;
    };
    // SAFETY: `tgkill` takes plain integers; it fails (ESRCH) if no thread
    // `tid` exists in this process, and only threads of this process can
    // receive it, all of which have the handler.
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::c_long::from(libc::getpid()),
            libc::c_long::from(tid),
            libc::c_long::from(sig),
        ) == 0
    }
}

/// The handler: see the module docs for why it may do what it does.
#[cfg(not(loom))]
extern "C" fn on_kick(_sig: libc::c_int) {
    // SAFETY: `__errno_location` returns this thread's errno slot, valid
    // for the thread's lifetime; the handler's syscalls may change errno,
    // which the interrupted code must not see.
    let errno = unsafe { *libc::__errno_location() };
    // `Local` needs no destructor, so its slot stays valid (and `try_with`
    // cannot fail) until the thread is gone.
    let _ = super::local::try_with_local(crate::pool::on_kick);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}
