//! Coroutine stack overflow reporting: a SIGSEGV/SIGBUS handler (on the
//! alternate signal stack std gives every thread) that recognises a fault
//! just below the running coroutine's stack, prints a clear message and
//! aborts. Anything else goes to the handler that was there before.

use std::sync::Once;

/// Bytes below a coroutine stack's limit counted as its guard window.
const WINDOW: usize = 64 * 1024;

static mut OLD: [std::mem::MaybeUninit<libc::sigaction>; 2] = [std::mem::MaybeUninit::uninit(); 2];
static INSTALL: Once = Once::new();

/// The fault-address window for a stack: its guard page (the lowest page
/// of the mapping; corosensei's `limit()` is the mapping's start) and a
/// margin below it, for frames large enough to jump the guard.
pub(crate) fn guard_window(stack: &corosensei::stack::DefaultStack) -> (usize, usize) {
    use corosensei::stack::Stack;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let limit = stack.limit().get();
    (limit.saturating_sub(WINDOW), limit + page)
}

/// Installs the handler once per process.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
            // SAFETY: sigaction is plain data; all-zero is a valid empty set.
            let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
            act.sa_sigaction = handler as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: `OLD[i]` is written once here, under `Once`, before
            // the handler that reads it is installed; `act` is valid.
            unsafe {
                let old = (*std::ptr::addr_of_mut!(OLD))[i].as_mut_ptr();
                libc::sigaction(sig, &act, old);
            }
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (lo, hi) = super::coroutine::running_guard_window();
    if addr >= lo && addr < hi {
        let msg = b"manycore: coroutine stack overflow: the coroutine ran past the guard page of its stack; \
give it a larger stack (Builder::coroutine_stack or Core::spawn_coroutine_with_stack)\n";
        // SAFETY: write(2) and abort are async-signal-safe; msg is valid.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::abort();
        }
    }
    let i = if sig == libc::SIGSEGV { 0 } else { 1 };
    // SAFETY: OLD[i] was initialised by `install` before this handler
    // could run. We chain to it as the kernel would have called it.
    unsafe {
        let old = (*std::ptr::addr_of!(OLD))[i].assume_init_ref();
        if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
            // Restore it and return: the fault repeats under the default.
            libc::sigaction(sig, old, std::ptr::null_mut());
        } else if old.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(old.sa_sigaction);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
            f(sig);
        }
    }
}
