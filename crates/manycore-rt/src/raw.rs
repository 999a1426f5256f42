//! All of manycore-rt's `unsafe`: the type-erased message record, and the
//! completion cell an invocation's result travels through.

use crate::error::InvokeError;
use manycore_sync::atomic::{AtomicU32, Ordering};
use manycore_sync::cell::UnsafeCell;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::task::Waker;

/// Bytes of closure a message carries inline; larger closures are boxed.
pub const INLINE_BYTES: usize = 48;

type Payload = MaybeUninit<[usize; INLINE_BYTES / 8]>;

/// An invocation record: a shim pointer plus the closure (inline when it
/// fits). 56 bytes, so that with the ring's 8-byte sequence word a message is
/// exactly one cache line.
pub(crate) struct Message {
    shim: unsafe fn(*mut Payload, bool),
    payload: Payload,
}

const _: () = assert!(size_of::<Message>() == 56);

// SAFETY: every constructor takes an `F: Send`; the payload holds only that F
// (or a Box<F>), so moving the record to another thread moves an F.
unsafe impl Send for Message {}

impl Message {
    /// Wraps a closure. No allocation if `F` is at most [`INLINE_BYTES`] bytes
    /// with alignment at most 8.
    #[inline]
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        let mut payload = Payload::uninit();
        if Self::fits::<F>() {
            // SAFETY: `fits` checked that F's size and alignment fit the payload.
            unsafe { payload.as_mut_ptr().cast::<F>().write(f) };
            Message {
                shim: inline_shim::<F>,
                payload,
            }
        } else {
            let boxed = Box::into_raw(Box::new(f));
            // SAFETY: a pointer fits and is aligned in a payload of usizes.
            unsafe { payload.as_mut_ptr().cast::<*mut F>().write(boxed) };
            Message {
                shim: boxed_shim::<F>,
                payload,
            }
        }
    }

    /// True if a closure of type `F` travels inline (no allocation).
    pub(crate) const fn fits<F>() -> bool {
        size_of::<F>() <= INLINE_BYTES && align_of::<F>() <= align_of::<Payload>()
    }

    /// Runs the closure, consuming the message.
    #[inline]
    pub(crate) fn run(self) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: the payload holds the value `shim` expects and it has not been
        // consumed; ManuallyDrop keeps `Drop` from consuming it a second time.
        unsafe { (me.shim)(&mut me.payload, true) }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: a message not yet run still owns its closure; dropping it once here.
        unsafe { (self.shim)(&mut self.payload, false) }
    }
}

/// # Safety
/// `p` must hold an initialised `F` written by `Message::new`, not yet consumed.
unsafe fn inline_shim<F: FnOnce()>(p: *mut Payload, run: bool) {
    // SAFETY: guaranteed by the caller; the read moves F out and we own it now.
    let f = unsafe { p.cast::<F>().read() };
    if run {
        f()
    }
}

/// # Safety
/// `p` must hold a `Box<F>` pointer written by `Message::new`, not yet consumed.
unsafe fn boxed_shim<F: FnOnce()>(p: *mut Payload, run: bool) {
    // SAFETY: guaranteed by the caller; the pointer came from Box::into_raw.
    let f = unsafe { Box::from_raw(p.cast::<*mut F>().read()) };
    if run {
        f()
    }
}

const DONE: u32 = 1;
const WAITER: u32 = 2;
const CANCELLED: u32 = 4;

/// The meeting point of an invocation's completer (on the callee core) and
/// its single waiter (a thread, a core, or an async task).
///
/// Protocol (one state word, bits DONE and WAITER):
/// * completer: write value; `fetch_or(DONE)`; if WAITER was set, take the
///   waker and wake it.
/// * waiter: if DONE, take the value. Otherwise, to (re)register: clear WAITER
///   by CAS (failing only if DONE arrived), store the waker, `fetch_or(WAITER)`;
///   if that saw DONE, the result is there and nobody will wake us.
/// * timeout: the waiter sets CANCELLED (`cancel`). If DONE was already set,
///   the result won and the waiter takes it; otherwise the completer, seeing
///   CANCELLED when it sets DONE, drops the late result itself, on its core.
///
/// The waker cell is written by the waiter only while WAITER and DONE are both
/// clear, and read by the completer only after it set DONE with WAITER set, so
/// the two never touch it at once. Model-checked in `loom_tests.rs`.
pub(crate) struct Completion<T> {
    state: AtomicU32,
    value: UnsafeCell<Option<Result<T, InvokeError>>>,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the value cell is written once by the completer and read once by the
// waiter after DONE (Release/Acquire); the waker cell is handed over by the
// state protocol above. T crosses threads, so it must be Send.
unsafe impl<T: Send> Sync for Completion<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Completion<T> {}

impl<T> Completion<T> {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU32::new(0),
            value: UnsafeCell::new(None),
            waker: UnsafeCell::new(None),
        }
    }

    /// Stores the result and wakes a registered waiter. Called at most once.
    /// Returns false if the waiter had given up (the result was dropped here).
    pub(crate) fn complete(&self, r: Result<T, InvokeError>) -> bool {
        // SAFETY: only the completer writes the value, once, and nobody reads it
        // before observing DONE, which is set after this write.
        self.value.with_mut(|p| unsafe { *p = Some(r) });
        // AcqRel: Release publishes the value to the waiter's Acquire load of
        // DONE; Acquire pairs with the Release `fetch_or(WAITER)` in `register`
        // so the waker stored before it is visible here.
        let prev = self.state.fetch_or(DONE, Ordering::AcqRel);
        if prev & CANCELLED != 0 {
            // SAFETY: the waiter cancelled before DONE was set, so it will never
            // read the value: it is ours to drop, here, on the completer's core.
            drop(self.value.with_mut(|p| unsafe { (*p).take() }));
            return false;
        }
        if prev & WAITER != 0 {
            // SAFETY: WAITER was set when we set DONE; from now on the waiter
            // never writes the waker cell (it only writes with both bits clear).
            let w = self.waker.with_mut(|p| unsafe { (*p).take() });
            if let Some(w) = w {
                w.wake();
            }
        }
        true
    }

    /// The waiter gives up (timeout). Returns true if the result had already
    /// arrived (the result wins; take it), false if the invocation is now
    /// deactivated (the completer will drop the late result).
    pub(crate) fn cancel(&self) -> bool {
        // AcqRel: Acquire to read the value if DONE won; Release so the
        // completer's Acquire fetch_or sees our withdrawal of the waker.
        let prev = self.state.fetch_or(CANCELLED, Ordering::AcqRel);
        if prev & DONE != 0 {
            return true;
        }
        if prev & WAITER != 0 {
            // Our own registration: withdraw it so the completer does not wake
            // a waiter that left. It may race the completer's read of the cell
            // only if DONE is set, and DONE was clear when CANCELLED went in;
            // after that the completer drops instead of waking.
            // SAFETY: CANCELLED is set and DONE was clear, so the completer will
            // take the cancelled path and never touch the waker cell.
            drop(self.waker.with_mut(|p| unsafe { (*p).take() }));
        }
        false
    }

    /// True once the result is stored.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        // Acquire; pairs with the Release half of `fetch_or(DONE)` in `complete`.
        self.state.load(Ordering::Acquire) & DONE != 0
    }

    /// Takes the result. Returns None if not done yet or already taken.
    /// Must be called only by the single waiter.
    pub(crate) fn take(&self) -> Option<Result<T, InvokeError>> {
        if !self.is_done() {
            return None;
        }
        // SAFETY: DONE was observed with Acquire, so the completer's write is
        // visible and finished; the single waiter is the only reader.
        self.value.with_mut(|p| unsafe { (*p).take() })
    }

    /// Registers `waker` to be woken on completion. Returns true if the result
    /// is already there (then nothing will be woken). Single waiter only.
    pub(crate) fn register(&self, waker: &Waker) -> bool {
        let s = self.state.load(Ordering::Acquire);
        if s & DONE != 0 {
            return true;
        }
        if s & WAITER != 0 {
            // Withdraw the old registration; fails only if DONE arrived meanwhile.
            // Acquire on failure; pairs with the completer's Release.
            if self
                .state
                .compare_exchange(WAITER, 0, Ordering::Acquire, Ordering::Acquire)
                .is_err()
            {
                return true;
            }
        }
        // SAFETY: WAITER is clear and we are the only waiter, so the completer
        // will not touch the waker cell unless it sees the WAITER we set below.
        self.waker.with_mut(|p| unsafe { *p = Some(waker.clone()) });
        // AcqRel: Release hands the waker to the completer's Acquire `fetch_or`;
        // Acquire lets us read the value if DONE is already set.
        self.state.fetch_or(WAITER, Ordering::AcqRel) & DONE != 0
    }
}

/// Where a running coroutine keeps its yielder, so that `block_on` deep in
/// nested calls can suspend it.
#[derive(Default)]
pub(crate) struct YielderSlot(std::cell::Cell<*const corosensei::Yielder<(), ()>>);

impl YielderSlot {
    /// Called once by the coroutine body with its own yielder, which lives on
    /// the coroutine's stack for as long as the coroutine does.
    pub(crate) fn set(&self, y: &corosensei::Yielder<(), ()>) {
        self.0.set(y as *const _);
    }
}

/// The coroutine the current thread is running, while it runs.
pub(crate) struct CoCtx {
    pub(crate) yielder: std::rc::Rc<YielderSlot>,
    pub(crate) waker: Waker,
    /// Fault-address window of its guard page (see `overflow`).
    pub(crate) bounds: (usize, usize),
}

thread_local! {
    static CURRENT_CO: std::cell::RefCell<Option<CoCtx>> = const { std::cell::RefCell::new(None) };
    static GUARD: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Marks `ctx` as the running coroutine; returns the one it interrupts.
pub(crate) fn enter_coroutine(ctx: CoCtx) -> Option<CoCtx> {
    GUARD.with(|g| g.set(ctx.bounds));
    CURRENT_CO.with(|c| c.borrow_mut().replace(ctx))
}

/// Restores the coroutine that was running before (or none).
pub(crate) fn leave_coroutine(prev: Option<CoCtx>) {
    GUARD.with(|g| g.set(prev.as_ref().map_or((0, 0), |p| p.bounds)));
    CURRENT_CO.with(|c| *c.borrow_mut() = prev);
}

/// The waker of the running coroutine's task, if in a coroutine.
pub(crate) fn coroutine_waker() -> Option<Waker> {
    CURRENT_CO.with(|c| c.borrow().as_ref().map(|c| c.waker.clone()))
}

/// Suspends the running coroutine back to its core's executor.
pub(crate) fn suspend_coroutine() {
    let y = CURRENT_CO.with(|c| c.borrow().as_ref().map(|c| c.yielder.0.get()));
    if let Some(y) = y.filter(|y| !y.is_null()) {
        // SAFETY: the pointer was set by this coroutine's body to its own
        // yielder, which lives on the coroutine's stack while the coroutine
        // exists; CURRENT_CO holds it only while that coroutine is being
        // resumed on this thread, which is exactly when we are running on its
        // stack. No RefCell borrow is held across the suspension.
        unsafe { (*y).suspend(()) }
    }
}

/// Coroutine stack overflow reporting: a SIGSEGV/SIGBUS handler (on the
/// alternate signal stack std gives every thread) that recognises a fault
/// just below the running coroutine's stack, prints a clear message and
/// aborts. Anything else goes to the handler that was there before.
pub(crate) mod overflow {
    use std::sync::Once;

    /// Bytes below a coroutine stack's limit counted as its guard window.
    const WINDOW: usize = 64 * 1024;

    static mut OLD: [std::mem::MaybeUninit<libc::sigaction>; 2] =
        [std::mem::MaybeUninit::uninit(); 2];
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
        let (lo, hi) = super::GUARD.try_with(|g| g.get()).unwrap_or((0, 0));
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
}
