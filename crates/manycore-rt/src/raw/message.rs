//! A message: one invocation, type-erased into a shim pointer and the
//! closure itself (inline when it fits), so that it travels in one ring slot.

use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

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
