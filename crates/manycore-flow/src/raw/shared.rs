//! `Shared`: a counted reference to a value on the heap, like `Arc` but
//! with one count (no weak references, so dropping the last reference is
//! one read-modify-write, not two) and with a way to make the first two
//! references at once, before the value is shared, without any
//! read-modify-write. An instance is a `Shared<dyn AnyNode>`: its maker
//! keeps one reference in the owner's registry and hands out the other.
//!
//! The block comes from the allocating thread's free lists (`slab.rs`),
//! and the last drop gives it back to the freeing thread's lists: an
//! instance made and dropped on one core reuses the block of the last. An
//! instance's block is taken (a [`Block`]) before the instance is built,
//! so that the compiler builds it in the block rather than on the stack
//! and then copies it.
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
//!
//! A handle dropped beside its instance's ready-stack reference (a
//! [`Handle`]) can skip the read-modify-write too: if its owner thread's
//! ready stack holds a reference (which only that thread reaches) and the
//! count reads 2 on that thread, the two references are the handle and the
//! stack's, nobody else holds one or can make one, and the count is written
//! 1 with a plain store (`drop_beside_held`). A body that makes an instance
//! on its own core and completes it (the instance is then on the stack)
//! drops its handle so.

use super::slab;
use crate::here;
use crate::node::AnyNode;
use manycore_sync::atomic::{fence, AtomicUsize, Ordering};
use std::alloc::Layout;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;

/// Past this many references the process aborts (as `Arc` does), rather
/// than let the count wrap.
const MAX_REFS: usize = isize::MAX as usize;

/// A value with its count, as `Shared` allocates it.
struct Counted<T: ?Sized> {
    count: AtomicUsize,
    value: T,
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

impl<T> Shared<T> {
    /// The one reference to `value`.
    #[cfg(test)]
    pub(crate) fn one(value: T) -> Self {
        Self {
            ptr: Block::new().fill(1, value),
        }
    }

    /// Two references to `value`, made without a read-modify-write (nothing
    /// else can see the count yet).
    #[cfg(test)]
    pub(crate) fn pair(value: T) -> (Self, Self) {
        let ptr = Block::new().fill(2, value);
        (Self { ptr }, Self { ptr })
    }
}

/// A block taken for a value and its count, not written yet: given back if
/// dropped unused.
pub(crate) struct Block<T> {
    ptr: NonNull<Counted<T>>,
}

impl<T> Block<T> {
    /// A block for a `T` and its count.
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            ptr: slab::alloc(Layout::new::<Counted<T>>()).cast(),
        }
    }

    /// Writes `value` with `refs` references counted.
    #[inline(always)]
    fn fill(self, refs: usize, value: T) -> NonNull<Counted<T>> {
        let p = self.ptr;
        std::mem::forget(self);
        // SAFETY: `p` is a block of this `Block`'s own (taken in `new`, never
        // handed out: `self` is forgotten above, so its `Drop` will not free
        // it) with at least the size and alignment of a `Counted<T>`, so the
        // write is in bounds and aligned, and overwrites nothing.
        unsafe {
            p.as_ptr().write(Counted {
                count: AtomicUsize::new(refs),
                value,
            })
        };
        p
    }
}

impl<T> Drop for Block<T> {
    fn drop(&mut self) {
        // SAFETY: the block came from `slab::alloc` with this layout and was
        // never written or handed out (`fill` forgets `self`): freed once.
        unsafe { slab::free(self.ptr.cast(), Layout::new::<Counted<T>>()) }
    }
}

impl Shared<dyn AnyNode> {
    /// The one reference to the instance `node`, written into `block`
    /// (taken before `node` was built).
    #[inline(always)]
    pub(crate) fn one_node_in<N: AnyNode>(block: Block<N>, node: N) -> Self {
        let ptr: NonNull<Counted<dyn AnyNode>> = block.fill(1, node);
        Self { ptr }
    }

    /// Two references to the instance `node`, written into `block` (taken
    /// before `node` was built), made without a read-modify-write (nothing
    /// else can see the count yet).
    #[inline(always)]
    pub(crate) fn pair_node_in<N: AnyNode>(block: Block<N>, node: N) -> (Self, Self) {
        let ptr: NonNull<Counted<dyn AnyNode>> = block.fill(2, node);
        (Self { ptr }, Self { ptr })
    }
}

impl<T: ?Sized> Shared<T> {
    /// Whether `a` and `b` refer to the same value.
    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        std::ptr::addr_eq(a.ptr.as_ptr(), b.ptr.as_ptr())
    }

    /// The address of the value this reference counts (the same for
    /// every reference to it): a name for it that holds no count.
    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr().cast::<u8>() as usize
    }

    fn counted(&self) -> &Counted<T> {
        // SAFETY: `ptr` came from `Block::fill`, which wrote a `Counted<T>`
        // into it, and the block is freed only when the count drops to zero, which
        // cannot happen while this reference (counted) is alive.
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
        let layout = Layout::for_value(self.counted());
        // SAFETY: the count was 1 (read above, or taken from 1 to 0 by this
        // drop): this was the last reference, no other exists or can be made
        // (a clone needs a live reference), so the value `fill` wrote is
        // ours to drop, once, and then its block to free, once, with the
        // layout it was allocated for (`Counted<T>`'s, the same as
        // `for_value` gives for it, unsized or not).
        unsafe {
            std::ptr::drop_in_place(self.ptr.as_ptr());
            slab::free(self.ptr.cast(), layout);
        }
    }
}

impl<T: ?Sized> Shared<T> {
    /// Drops this reference. `held_here` says that another reference to
    /// the same value is held by a structure of the calling thread that no
    /// other thread reaches (for an instance: its owner core's ready stack),
    /// and that this reference is not that one.
    ///
    /// Then the count is at least 2, and if it reads 2 the two references
    /// are this one and the held one: no other thread holds a reference or
    /// can make one (a clone needs a live one), so nothing else reads or
    /// writes the count, and a plain store of 1 does what the
    /// read-modify-write would. Acquire pairs with the Release of the drops
    /// that brought the count down to 2, as for a drop that reads 1; the
    /// held reference is dropped on this thread or handed on by a release
    /// (a message, a queue), so this thread's uses happen before its free.
    /// Otherwise (`held_here` false, or more references) an ordinary drop.
    #[inline]
    pub(crate) fn drop_beside_held(self, held_here: bool) {
        let count = &self.counted().count;
        if held_here && count.load(Ordering::Acquire) == 2 {
            count.store(1, Ordering::Relaxed);
            std::mem::forget(self);
        }
    }
}

/// A counted reference to an instance held by a handle (`Instance`): the
/// same as a [`Shared`], but its drop skips the read-modify-write when the
/// instance's owner thread drops it while its ready stack holds the other
/// reference (see [`Shared::drop_beside_held`]).
pub(crate) struct Handle(ManuallyDrop<Shared<dyn AnyNode>>);

impl Handle {
    /// A handle holding `node`.
    #[inline]
    pub(crate) fn new(node: Shared<dyn AnyNode>) -> Self {
        Self(ManuallyDrop::new(node))
    }
}

impl Clone for Handle {
    #[inline]
    fn clone(&self) -> Self {
        Self::new((*self.0).clone())
    }
}

impl Deref for Handle {
    type Target = Shared<dyn AnyNode>;

    #[inline]
    fn deref(&self) -> &Shared<dyn AnyNode> {
        &self.0
    }
}

impl Drop for Handle {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `self.0` is taken once, here, and `self` is never used
        // again (it is being dropped).
        let node = unsafe { ManuallyDrop::take(&mut self.0) };
        // On the owner core's thread, the frame's mark says exactly whether
        // its ready stack holds a reference to the instance (only that
        // thread writes it: `ready.rs` marks the instance when it pushes it
        // and unmarks it when it takes it off): the held reference
        // `drop_beside_held` asks for, and not this one, which a handle
        // holds. The mark is read first (a load of the frame's line, which
        // the drop reads anyway), the owner only if it is set.
        let frame = node.frame();
        let held = frame.stacked() && here::is(frame.owner());
        node.drop_beside_held(held);
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
