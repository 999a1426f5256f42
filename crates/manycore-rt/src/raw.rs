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

/// The meeting point of an invocation's completer (on the callee core) and
/// its single waiter (a thread, a core, or an async task).
///
/// Protocol (one state word, bits DONE and WAITER):
/// * completer: write value; `fetch_or(DONE)`; if WAITER was set, take the
///   waker and wake it.
/// * waiter: if DONE, take the value. Otherwise, to (re)register: clear WAITER
///   by CAS (failing only if DONE arrived), store the waker, `fetch_or(WAITER)`;
///   if that saw DONE, the result is there and nobody will wake us.
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
    pub(crate) fn complete(&self, r: Result<T, InvokeError>) {
        // SAFETY: only the completer writes the value, once, and nobody reads it
        // before observing DONE, which is set after this write.
        self.value.with_mut(|p| unsafe { *p = Some(r) });
        // AcqRel: Release publishes the value to the waiter's Acquire load of
        // DONE; Acquire pairs with the Release `fetch_or(WAITER)` in `register`
        // so the waker stored before it is visible here.
        let prev = self.state.fetch_or(DONE, Ordering::AcqRel);
        if prev & WAITER != 0 {
            // SAFETY: WAITER was set when we set DONE; from now on the waiter
            // never writes the waker cell (it only writes with both bits clear).
            let w = self.waker.with_mut(|p| unsafe { (*p).take() });
            if let Some(w) = w {
                w.wake();
            }
        }
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

    /// Withdraws a registration (after a timeout), dropping the stored waker.
    pub(crate) fn unregister(&self) {
        if self
            .state
            .compare_exchange(WAITER, 0, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: we cleared WAITER while DONE was clear: the completer will
            // not read the waker cell.
            drop(self.waker.with_mut(|p| unsafe { (*p).take() }));
        }
    }
}
