//! A message: one invocation, type-erased into a shim pointer and the
//! closure itself (inline when it fits), so that it travels in one ring slot.

use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// Bytes of closure a message carries inline; larger closures are boxed.
pub const INLINE_BYTES: usize = 48;

type Payload = MaybeUninit<[usize; INLINE_BYTES / 8]>;

/// What a message's first word points to: how to run or drop its closure,
/// and how many 16-byte cells of a packed ring the message takes.
pub(crate) struct Vt {
    shim: unsafe fn(*mut Payload, bool),
    cells: usize,
}

/// The table of a closure of type `F`.
struct VtOf<F>(std::marker::PhantomData<F>);

impl<F: FnOnce()> VtOf<F> {
    /// F inline: the pointer and F's bytes, in 16-byte cells.
    const INLINE: &'static Vt = &Vt {
        shim: inline_shim::<F>,
        cells: (8 + size_of::<F>()).div_ceil(16),
    };
    /// F boxed: the pointer and the box's pointer, one cell.
    const BOXED: &'static Vt = &Vt {
        shim: boxed_shim::<F>,
        cells: 1,
    };
}

/// An invocation record: a header, which is the address of its table with
/// the record's length in cells minus one in bits 1 and 2 (a table is
/// aligned to 8; bit 0 stays clear for the ring), plus the closure (inline
/// when it fits). 56 bytes; in a packed ring it takes only the cells its
/// closure needs (a closure of one word: one cell, a quarter of a line).
#[repr(C)]
pub(crate) struct Message {
    head: usize,
    payload: Payload,
}

const _: () = assert!(align_of::<Vt>() >= 8 && size_of::<usize>() == 8);

/// The header of a message whose table is `vt`.
#[inline(always)]
fn header(vt: &'static Vt) -> usize {
    debug_assert!((1..=4).contains(&vt.cells));
    // The address is exposed, so that `Message::vt` may make a pointer of
    // it again after the header has travelled as an integer.
    (vt as *const Vt).expose_provenance() | ((vt.cells - 1) << 1)
}

const _: () = assert!(size_of::<Message>() == 56);

// SAFETY: every constructor takes an `F: Send`; the payload holds only that F
// (or a Box<F>), so moving the record to another thread moves an F.
unsafe impl Send for Message {}

// SAFETY: a Message is 56 bytes with alignment 8; its first word, the
// header, is the address of a table (not 0, aligned to 8) with the length
// minus one in bits 1 and 2 (bit 0 clear), and a table's `cells` is 1 to 4
// (8 bytes of header and at most INLINE_BYTES of closure); the payload past
// those cells is `MaybeUninit` and unused by the shim (it reads F's bytes,
// which lie within them), so a copy of the first cells is the same message.
unsafe impl manycore_ring::packed::Packed for Message {
    #[inline(always)]
    unsafe fn cells(header: u64) -> usize {
        ((header as usize >> 1) & 3) + 1
    }
}

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
                head: header(VtOf::<F>::INLINE),
                payload,
            }
        } else {
            let boxed = Box::into_raw(Box::new(f));
            // SAFETY: a pointer fits and is aligned in a payload of usizes.
            unsafe { payload.as_mut_ptr().cast::<*mut F>().write(boxed) };
            Message {
                head: header(VtOf::<F>::BOXED),
                payload,
            }
        }
    }

    /// True if a closure of type `F` travels inline (no allocation).
    pub(crate) const fn fits<F>() -> bool {
        size_of::<F>() <= INLINE_BYTES && align_of::<F>() <= align_of::<Payload>()
    }

    /// The message's table.
    #[inline(always)]
    fn vt(&self) -> &'static Vt {
        // SAFETY: the header is the exposed address of a `&'static Vt`
        // with bits below 8 added (`header`).
        unsafe { &*std::ptr::with_exposed_provenance::<Vt>(self.head & !7) }
    }

    /// Runs the closure, consuming the message.
    #[inline]
    pub(crate) fn run(self) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: the payload holds the value `shim` expects and it has not been
        // consumed; ManuallyDrop keeps `Drop` from consuming it a second time.
        unsafe { (me.vt().shim)(&mut me.payload, true) }
    }
}

/// A place on the receiver's stack that a message is popped into and run
/// from where it lies, so that it is not moved again between the ring and
/// its shim (each move of a message through memory, in other widths than it
/// was written with, can make the next load wait for the store buffer).
pub(crate) struct Inbound {
    m: MaybeUninit<Message>,
    full: bool,
}

impl Inbound {
    pub(crate) fn new() -> Self {
        Inbound {
            m: MaybeUninit::uninit(),
            full: false,
        }
    }

    /// Pops the next message of `c` into this place. False if there was
    /// none. The place must be empty.
    #[inline(always)]
    pub(crate) fn pop(&mut self, c: &mut manycore_ring::packed::Consumer<Message>) -> bool {
        debug_assert!(!self.full);
        self.full = !self.full && c.try_pop_into(&mut self.m);
        self.full
    }

    /// Runs the message in this place, if any, emptying it.
    #[inline(always)]
    pub(crate) fn run(&mut self) {
        if std::mem::replace(&mut self.full, false) {
            let m = self.m.as_mut_ptr();
            // SAFETY: `full` said the place holds a message that was not run
            // or dropped; it is marked empty before the shim consumes it, so
            // a panic in the closure (which the shim has moved out) leaves
            // nothing to drop twice.
            unsafe { ((*m).vt().shim)(&raw mut (*m).payload, true) }
        }
    }
}

impl Drop for Inbound {
    fn drop(&mut self) {
        if self.full {
            // SAFETY: a full place holds a message not run or dropped yet.
            unsafe { self.m.assume_init_drop() }
        }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: a message not yet run still owns its closure; dropping it once here.
        unsafe { (self.vt().shim)(&mut self.payload, false) }
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
