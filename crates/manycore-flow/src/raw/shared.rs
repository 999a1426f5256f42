//! `Shared`: a counted reference to a value on the heap, like `Arc` but
//! with one count (no weak references, so dropping the last reference is
//! one read-modify-write, not two) and with a way to make the first two
//! references at once, before the value is shared, without any
//! read-modify-write. An instance is a `Shared<dyn AnyNode>`: its maker
//! keeps one reference in the owner's registry and hands out the other.
//!
//! The count is the usual protocol: a clone adds one (Relaxed: a clone is
//! made from a live reference, which keeps the count above zero); a drop
//! takes one away with Release, and the drop that takes the last one
//! fences with Acquire before it frees, so every use of the value through
//! any other reference happens before the free. A drop that reads 1 (with
//! Acquire) holds the only reference and frees without writing the count:
//! nobody else can hold or make one. An instance's last reference is
//! usually its owner's, dropped after its body ran, when its handles are
//! gone: that drop is a load. `loom_tests.rs` checks the protocol.

use manycore_sync::atomic::{fence, AtomicUsize, Ordering};
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

/// Past this many references the process aborts (as `Arc` does), rather
/// than let the count wrap.
const MAX_REFS: usize = isize::MAX as usize;

/// A value with its count, as `Shared` allocates it.
pub(crate) struct Counted<T: ?Sized> {
    count: AtomicUsize,
    value: T,
}

impl<T> Counted<T> {
    /// `value`, to be boxed (and the box coerced to `Counted<dyn Trait>`
    /// if need be) and handed to [`Shared::pair`] or [`Shared::one`].
    pub(crate) fn new(value: T) -> Self {
        Self {
            count: AtomicUsize::new(1),
            value,
        }
    }
}

/// A counted reference to a `T`.
pub(crate) struct Shared<T: ?Sized> {
    ptr: NonNull<Counted<T>>,
}

// SAFETY: a `Shared` gives `&T` to any thread that holds one and drops the
// `T` on whichever thread drops the last reference: `T` must be `Sync` (to
// be shared) and `Send` (to be dropped elsewhere), exactly as for `Arc`.
unsafe impl<T: ?Sized + Send + Sync> Send for Shared<T> {}
// SAFETY: as above; `&Shared` only gives `&T` and clones.
unsafe impl<T: ?Sized + Send + Sync> Sync for Shared<T> {}

impl<T: ?Sized> Shared<T> {
    /// The one reference to the value in `b`.
    pub(crate) fn one(b: Box<Counted<T>>) -> Self {
        Self {
            ptr: NonNull::from(Box::leak(b)),
        }
    }

    /// Two references to the value in `b`, made without a read-modify-write
    /// (nothing else can see the count yet).
    pub(crate) fn pair(mut b: Box<Counted<T>>) -> (Self, Self) {
        b.count = AtomicUsize::new(2);
        let ptr = NonNull::from(Box::leak(b));
        (Self { ptr }, Self { ptr })
    }

    /// Whether `a` and `b` refer to the same value.
    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        std::ptr::addr_eq(a.ptr.as_ptr(), b.ptr.as_ptr())
    }

    fn counted(&self) -> &Counted<T> {
        // SAFETY: `ptr` came from a leaked box and the box is freed only when
        // the count drops to zero, which cannot happen while this reference
        // (counted) is alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized> Clone for Shared<T> {
    #[inline]
    fn clone(&self) -> Self {
        let old = self.counted().count.fetch_add(1, Ordering::Relaxed);
        if old > MAX_REFS {
            std::process::abort();
        }
        Self { ptr: self.ptr }
    }
}

impl<T: ?Sized> Drop for Shared<T> {
    #[inline]
    fn drop(&mut self) {
        let count = &self.counted().count;
        // The last reference, if the count says 1: no other reference
        // exists, and none can be made (a clone needs a live one), so no
        // read-modify-write is needed to know it. Acquire pairs with the
        // Release of the drops that brought the count down to 1.
        if count.load(Ordering::Acquire) != 1 {
            if count.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            // Pairs with the Release of every other reference's drop: their
            // uses of the value happen before the free below.
            fence(Ordering::Acquire);
        }
        // SAFETY: the count was 1 (read above, or taken from 1 to 0 by this
        // drop): this was the last reference, no other exists or can be made
        // (a clone needs a live reference), so the box leaked by `one` or
        // `pair` is ours to free, once.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

impl<T: ?Sized> Deref for Shared<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.counted().value
    }
}

impl<T: ?Sized> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}
