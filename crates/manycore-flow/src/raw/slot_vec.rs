//! `SlotVec`: an instance's input slots, filled in any order, that become
//! the [`Inputs`] its body receives without being copied: one block of `n`
//! values from the thread's free lists (`slab.rs`), taken when the instance
//! is made, and a bit per slot saying which are written. `Inputs` owns the
//! block from then on and gives it back to the free lists of the thread
//! that drops it, so a firing calls the allocator neither for its values
//! nor to free them (a `Vec` would be one `malloc` and one `free` a
//! firing).
//!
//! One slot is the common case (a continuation that waits for one value):
//! its value is kept inline, in the `SlotVec` (so in the instance's own
//! block) and then in the `Inputs`, with no block at all: a one-input
//! instance's firing touches no line but its own, and visits the free
//! lists neither when it is made nor when its values are dropped.

use super::inputs::Inputs;
use super::slab;
use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

/// Whether `n` values are kept inline (in the [`Store`] itself) rather
/// than in a block: exactly when `n` is 1.
#[inline(always)]
pub(super) fn inline(n: usize) -> bool {
    n == 1
}

/// Where `n` values are (`n` known to the holder): a block of `n` from the
/// free lists, or, for one value, the value itself in the same room. The
/// two are never both in use, so a value no larger than a pointer is kept
/// inline at no cost in size. `repr(C)`: both fields at offset 0.
#[repr(C)]
pub(super) union Store<T> {
    block: NonNull<T>,
    one: ManuallyDrop<MaybeUninit<T>>,
}

impl<T> Store<T> {
    /// Room for `n` values.
    #[inline]
    fn new(n: usize) -> Self {
        if inline(n) {
            Store {
                one: ManuallyDrop::new(MaybeUninit::uninit()),
            }
        } else {
            Store {
                block: alloc_block::<T>(n),
            }
        }
    }

    /// Where value 0 of the `n` is (`n` as given to `new`).
    #[inline(always)]
    pub(super) fn ptr(&self, n: usize) -> *const T {
        if inline(n) {
            // `one`, at offset 0 (`repr(C)`), laid out as a `T`
            // (`ManuallyDrop` and `MaybeUninit` are transparent).
            (self as *const Self).cast::<T>()
        } else {
            // SAFETY: with `n` not inline, `new` wrote `block`, and nothing
            // writes `one` (every write goes through `ptr_mut(n)`, which
            // then points into the block).
            unsafe { self.block }.as_ptr()
        }
    }

    /// `ptr`, for writing.
    #[inline(always)]
    pub(super) fn ptr_mut(&mut self, n: usize) -> *mut T {
        if inline(n) {
            (self as *mut Self).cast::<T>()
        } else {
            // SAFETY: as in `ptr`.
            unsafe { self.block }.as_ptr()
        }
    }

    /// Gives back the block, if the values were in one.
    ///
    /// # Safety
    ///
    /// `n` is the `n` given to `new`, none of the values is live any more
    /// (dropped or moved out), and this is called once.
    #[inline]
    pub(super) unsafe fn free(&mut self, n: usize) {
        if !inline(n) {
            // SAFETY: not inline: `block` came from `alloc_block::<T>(n)`
            // (see `ptr`); no value in it is live, and it is freed once
            // (the caller's contract).
            unsafe { free_block(self.block, n) };
        }
    }
}

/// A block for `n` values of `T`: from the free lists, or dangling (and
/// never freed) when it would be empty.
fn alloc_block<T>(n: usize) -> NonNull<T> {
    match Layout::array::<T>(n) {
        Ok(l) if l.size() > 0 => slab::alloc(l).cast(),
        Ok(_) => NonNull::dangling(),
        Err(_) => panic!("an input block of {n} values overflows"),
    }
}

/// Gives back a block from [`alloc_block`].
///
/// # Safety
///
/// `p` came from `alloc_block::<T>(n)` with this `n`, none of its values
/// is live any more (dropped or moved out), and it is freed once.
unsafe fn free_block<T>(p: NonNull<T>, n: usize) {
    if let Ok(l) = Layout::array::<T>(n) {
        if l.size() > 0 {
            // SAFETY: by the contract, `p` came from `slab::alloc(l)` (the
            // same layout: the same `T` and `n`) and is freed once.
            unsafe { slab::free(p.cast(), l) };
        }
    }
}

/// Up to 64 values, each written at most once, in any order.
pub(crate) struct SlotVec<T> {
    /// Room for `n` values (a block, or the value inline when `n` is 1);
    /// slot `k` is live when bit `k` of `filled` is set.
    store: Store<T>,
    n: usize,
    /// Bit `k` set: slot `k` holds a value.
    filled: u64,
    _owns: PhantomData<T>,
}

// SAFETY: a `SlotVec` owns its values (like a `Vec<T>`): moving it to
// another thread moves them, which `T: Send` allows; its block may be
// given back on any thread (the free lists take blocks from any thread).
unsafe impl<T: Send> Send for SlotVec<T> {}

impl<T> SlotVec<T> {
    /// `n` empty slots (`n` <= 64; no allocation when `n` is 0 or `T` has
    /// no size).
    #[inline]
    pub(crate) fn new(n: usize) -> Self {
        assert!(n <= 64, "at most 64 slots");
        Self {
            store: Store::new(n),
            n,
            filled: 0,
            _owns: PhantomData,
        }
    }

    /// Where slot 0 is.
    #[inline(always)]
    fn base(&mut self) -> *mut T {
        self.store.ptr_mut(self.n)
    }

    /// Slots holding `values`, in order (at most 64 of them).
    pub(crate) fn full(values: Vec<T>) -> Self {
        let n = values.len();
        let mut s = Self::new(n);
        let mut values = ManuallyDrop::new(values);
        // SAFETY: `values` holds `n` initialised values and `s.base()` is
        // room for `n` (a fresh block, or the store for a single value; distinct
        // from the `Vec`'s buffer: no overlap). The values move there:
        // `set_len(0)` below makes the `Vec` forget them before its buffer
        // is freed.
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr(), s.base(), n);
            values.set_len(0);
            ManuallyDrop::drop(&mut values);
        }
        s.filled = mask(n);
        s
    }

    /// Writes slot `k`; gives `v` back if there is no such slot or it holds
    /// a value already.
    #[inline]
    pub(crate) fn put(&mut self, k: usize, v: T) -> Result<(), T> {
        if k >= self.n || self.filled & (1 << k) != 0 {
            return Err(v);
        }
        // SAFETY: `k < n`, so the write is inside the room for `n` values
        // (the store or its block), and slot `k` holds no live value (its bit
        // is clear), so nothing is overwritten without being dropped.
        unsafe { self.base().add(k).write(v) };
        self.filled |= 1 << k;
        Ok(())
    }

    /// Whether every slot holds a value.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.filled == mask(self.n)
    }

    /// The values in slot order, if every slot holds one.
    #[inline]
    pub(crate) fn into_inputs(self) -> Result<Inputs<T>, Self> {
        if !self.is_full() {
            return Err(self);
        }
        let this = ManuallyDrop::new(self);
        // The store and its `n` values, all written (`filled` is full), pass
        // to the `Inputs`, which drops and frees them; `this` is forgotten,
        // so the store is moved out once.
        // SAFETY: as just said, the store (of `Store::new(n)`) holds `n` live
        // values that nothing else owns any more; the read moves it out of
        // `this`, which is never used again.
        Ok(unsafe { Inputs::from_store(std::ptr::read(&this.store), this.n) })
    }
}

impl<T> Drop for SlotVec<T> {
    fn drop(&mut self) {
        for k in 0..self.n {
            if self.filled & (1 << k) != 0 {
                // SAFETY: bit `k` says slot `k` was written and not moved out
                // since (`into_inputs` forgets the `SlotVec` when it hands
                // the values on); it is dropped once, here.
                unsafe { self.base().add(k).drop_in_place() };
            }
        }
        // SAFETY: the store came from `Store::new(self.n)`, every value in
        // it was dropped just above, and this is its one free.
        unsafe { self.store.free(self.n) };
    }
}

/// The low `n` bits.
fn mask(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Slots against a model: any order of fills, refusals, partial takes and
/// drops, with values that count their drops.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::SlotVec;
    use proptest::prelude::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A value that counts its drops.
    #[derive(Debug)]
    struct Counted(u64, Rc<Cell<u64>>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.set(self.1.get() + 1);
        }
    }

    proptest! {
        /// Fills in a random order (with repeats and slots past the end):
        /// a fill of a filled slot or of no such slot is refused with the
        /// value given back; once all are in, the inputs are the values in
        /// slot order; every value is dropped exactly once whether the
        /// slots are dropped part-filled, or the inputs dropped, iterated
        /// in part from either end, or turned into a `Vec`.
        #[test]
        fn slots_match_a_model(
            n in 0usize..=64,
            fills in proptest::collection::vec(0usize..70, 0..200),
            end in 0u8..4,
            taken in 0usize..70,
        ) {
            let drops = Rc::new(Cell::new(0));
            let mut s = SlotVec::new(n);
            let mut model = vec![None; n];
            let mut made = 0u64;
            for (i, k) in fills.into_iter().enumerate() {
                let v = Counted(i as u64, drops.clone());
                made += 1;
                match s.put(k, v) {
                    Ok(()) => {
                        prop_assert!(k < n && model[k].is_none());
                        model[k] = Some(i as u64);
                    }
                    Err(v) => {
                        prop_assert!(k >= n || model[k].is_some());
                        prop_assert_eq!(v.0, i as u64);
                    }
                }
                prop_assert_eq!(s.is_full(), model.iter().all(Option::is_some));
            }
            match s.into_inputs() {
                Err(s) => {
                    prop_assert!(model.iter().any(Option::is_none));
                    drop(s);
                }
                Ok(xs) => {
                    let want: Vec<u64> = model.iter().map(|v| v.unwrap()).collect();
                    let got: Vec<u64> = xs.iter().map(|v| v.0).collect();
                    prop_assert_eq!(&got, &want);
                    match end {
                        0 => drop(xs),
                        1 => {
                            let mut it = xs.into_iter();
                            for w in want.iter().take(taken) {
                                prop_assert_eq!(it.next().map(|v| v.0), Some(*w));
                            }
                        }
                        2 => {
                            let mut it = xs.into_iter();
                            for w in want.iter().rev().take(taken) {
                                prop_assert_eq!(it.next_back().map(|v| v.0), Some(*w));
                            }
                        }
                        _ => {
                            let v = xs.into_vec();
                            prop_assert_eq!(v.iter().map(|v| v.0).collect::<Vec<_>>(), want);
                        }
                    }
                }
            }
            prop_assert_eq!(drops.get(), made);
        }
    }

    /// Zero-sized values and no slots allocate nothing and still count.
    #[test]
    fn empty_and_zero_sized() {
        let s = SlotVec::<()>::new(0);
        assert!(s.is_full());
        assert_eq!(s.into_inputs().map(|x| x.len()).ok(), Some(0));
        let mut s = SlotVec::<()>::new(3);
        for k in 0..3 {
            assert!(s.put(k, ()).is_ok());
        }
        assert_eq!(s.into_inputs().map(|x| x.into_iter().count()).ok(), Some(3));
        let xs = SlotVec::full(vec![String::from("a"), String::from("b")])
            .into_inputs()
            .ok()
            .unwrap();
        assert_eq!(xs.concat(), "ab");
    }
}
