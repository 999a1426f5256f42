//! `Inputs`: the values of a fired instance's input slots, as its body
//! receives them, in the block `SlotVec` filled (see `slot_vec.rs`), and
//! their by-value iterator.

use super::slot_vec::Store;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

/// The values of an instance's input slots, in slot order, as its body
/// receives them: a slice (`xs[0]`, `xs.iter()`, `xs.len()`), or values
/// to move out (`xs.into_iter()`, [`into_vec`](Self::into_vec)). They live
/// in a block of the core's free lists, not in a `Vec` (a single value in
/// the `Inputs` itself): a firing costs no allocation and no free.
pub struct Inputs<T> {
    /// The values' room (a block, or the one value inline).
    store: Store<T>,
    len: usize,
    _owns: PhantomData<T>,
}

// SAFETY: `Inputs` owns its values like a `Vec<T>`: sending it sends them
// (`T: Send`), and its block may be freed on any thread.
unsafe impl<T: Send> Send for Inputs<T> {}
// SAFETY: `&Inputs` gives only `&[T]`, which `T: Sync` lets threads share.
unsafe impl<T: Sync> Sync for Inputs<T> {}

impl<T> Inputs<T> {
    /// Takes over a store of `len` values.
    ///
    /// # Safety
    ///
    /// `store` came from `Store::new(len)`, its `len` values are all live,
    /// and nothing else owns them or its block.
    pub(super) unsafe fn from_store(store: Store<T>, len: usize) -> Self {
        Self {
            store,
            len,
            _owns: PhantomData,
        }
    }

    /// Where the first value is.
    #[inline(always)]
    fn base(&self) -> *const T {
        self.store.ptr(self.len)
    }

    /// `base`, for writing.
    #[inline(always)]
    fn base_mut(&mut self) -> *mut T {
        self.store.ptr_mut(self.len)
    }

    /// The values as a `Vec` (one allocation, and a copy of the values).
    pub fn into_vec(self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        let mut this = ManuallyDrop::new(self);
        let len = this.len;
        // SAFETY: the `len` values of the store are live and move into
        // `v`'s buffer (of capacity `len`, a distinct allocation); `v` owns
        // them from `set_len` on, and the store, now holding no live value,
        // is freed once (`this` is forgotten, so `Drop` does not run).
        unsafe {
            std::ptr::copy_nonoverlapping(this.base(), v.as_mut_ptr(), len);
            v.set_len(len);
            this.store.free(len);
        }
        v
    }
}

impl<T> Deref for Inputs<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: the store holds `len` live values (all slots were filled
        // before the `Inputs` was made), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.base(), self.len) }
    }
}

impl<T> DerefMut for Inputs<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.base_mut(), self.len) }
    }
}

impl<T> Drop for Inputs<T> {
    fn drop(&mut self) {
        let len = self.len;
        // SAFETY: the `len` values are live and owned by `self`: dropped
        // once, here; then the store, holding no live value, freed once.
        unsafe {
            std::ptr::slice_from_raw_parts_mut(self.base_mut(), len).drop_in_place();
            self.store.free(len);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Inputs<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: PartialEq<U>, U> PartialEq<Inputs<U>> for Inputs<T> {
    fn eq(&self, other: &Inputs<U>) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Inputs<T> {}

impl<T: PartialEq<U>, U> PartialEq<Vec<U>> for Inputs<T> {
    fn eq(&self, other: &Vec<U>) -> bool {
        **self == **other
    }
}

impl<T: PartialEq<U>, U> PartialEq<[U]> for Inputs<T> {
    fn eq(&self, other: &[U]) -> bool {
        **self == *other
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for Inputs<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        **self == *other
    }
}

impl<T> From<Inputs<T>> for Vec<T> {
    fn from(xs: Inputs<T>) -> Self {
        xs.into_vec()
    }
}

impl<'a, T> IntoIterator for &'a Inputs<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Inputs<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T> IntoIterator for Inputs<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        let this = ManuallyDrop::new(self);
        IntoIter {
            // SAFETY: `this` is forgotten, so its store moves to the
            // iterator once.
            store: unsafe { std::ptr::read(&this.store) },
            len: this.len,
            next: 0,
            end: this.len,
            _owns: PhantomData,
        }
    }
}

/// The values of an [`Inputs`], moved out in slot order.
pub struct IntoIter<T> {
    store: Store<T>,
    /// The block's size in values.
    len: usize,
    /// Values `next..end` are live; the others were moved out.
    next: usize,
    end: usize,
    _owns: PhantomData<T>,
}

impl<T> IntoIter<T> {
    /// Where the first value is.
    #[inline(always)]
    fn base(&mut self) -> *mut T {
        self.store.ptr_mut(self.len)
    }
}

// SAFETY: as for `Inputs`: the iterator owns the values left.
unsafe impl<T: Send> Send for IntoIter<T> {}
// SAFETY: `&IntoIter` gives access to no value.
unsafe impl<T: Sync> Sync for IntoIter<T> {}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.next == self.end {
            return None;
        }
        let k = self.next;
        self.next += 1;
        // SAFETY: value `k` is in `next..end` (live, owned by the iterator)
        // and leaves that range above, so it is read out once.
        Some(unsafe { self.base().add(k).read() })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl<T> DoubleEndedIterator for IntoIter<T> {
    fn next_back(&mut self) -> Option<T> {
        if self.next == self.end {
            return None;
        }
        self.end -= 1;
        // SAFETY: value `end` was the last of `next..end` (live, owned by
        // the iterator) and has left that range: read out once.
        Some(unsafe { self.base().add(self.end).read() })
    }
}

impl<T> ExactSizeIterator for IntoIter<T> {}

impl<T> Drop for IntoIter<T> {
    fn drop(&mut self) {
        let len = self.len;
        // SAFETY: values `next..end` are live and owned here: dropped once;
        // the others were moved out. The store (of `len` values, from
        // `Store::new(len)`) then holds nothing live and is freed once.
        unsafe {
            let rest = self.base().add(self.next);
            std::ptr::slice_from_raw_parts_mut(rest, self.end - self.next).drop_in_place();
            self.store.free(len);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter")
            .field("left", &(self.end - self.next))
            .finish()
    }
}
