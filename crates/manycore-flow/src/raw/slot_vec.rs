//! `SlotVec`: an instance's input slots, filled in any order, that become
//! the `Vec` its body receives without being copied: one buffer of `n`
//! values, allocated when the instance is made, and a bit per slot saying
//! which are written.

use std::mem::MaybeUninit;

/// Up to 64 values, each written at most once, in any order.
pub(crate) struct SlotVec<T> {
    /// Capacity `n`, length 0: the values live in the spare capacity until
    /// `into_vec` sets the length.
    buf: Vec<T>,
    n: usize,
    /// Bit `k` set: slot `k` holds a value.
    filled: u64,
}

impl<T> SlotVec<T> {
    /// `n` empty slots (`n` <= 64; no allocation when `n` is 0).
    #[inline]
    pub(crate) fn new(n: usize) -> Self {
        assert!(n <= 64, "at most 64 slots");
        Self {
            buf: Vec::with_capacity(n),
            n,
            filled: 0,
        }
    }

    /// Slots holding `values`, in order (at most 64 of them).
    #[inline]
    pub(crate) fn full(values: Vec<T>) -> Self {
        let n = values.len();
        assert!(n <= 64, "at most 64 slots");
        let mut buf = values;
        // SAFETY: a length of 0 needs no element initialised. The `n` values
        // stay in place, in what is now spare capacity, owned by the
        // `SlotVec` through its `filled` bits (set to all `n` below), which
        // drops them or hands them on; `Vec` forgets them.
        unsafe { buf.set_len(0) };
        Self {
            buf,
            n,
            filled: mask(n),
        }
    }

    /// Writes slot `k`; gives `v` back if there is no such slot or it holds
    /// a value already.
    pub(crate) fn put(&mut self, k: usize, v: T) -> Result<(), T> {
        if k >= self.n || self.filled & (1 << k) != 0 {
            return Err(v);
        }
        self.buf.spare_capacity_mut()[k] = MaybeUninit::new(v);
        self.filled |= 1 << k;
        Ok(())
    }

    /// Whether every slot holds a value.
    pub(crate) fn is_full(&self) -> bool {
        self.filled == mask(self.n)
    }

    /// The values in slot order, if every slot holds one.
    pub(crate) fn into_vec(mut self) -> Result<Vec<T>, Self> {
        if !self.is_full() {
            return Err(self);
        }
        let mut buf = std::mem::take(&mut self.buf);
        self.filled = 0;
        // SAFETY: every one of the first `n` elements of the spare capacity
        // was written (`filled` has all `n` bits, each set by `put` right
        // after it wrote that element, or by `full`, which left `n` values
        // in place), and `n` <= the capacity (`buf` was made with capacity
        // `n`, or came from a `Vec` of `n` elements). `filled` is now clear
        // and `self.buf` empty, so `Drop` drops none of them again.
        unsafe { buf.set_len(self.n) };
        Ok(buf)
    }
}

impl<T> Drop for SlotVec<T> {
    fn drop(&mut self) {
        let spare = self.buf.spare_capacity_mut();
        for (k, v) in spare.iter_mut().enumerate().take(self.n) {
            if self.filled & (1 << k) != 0 {
                // SAFETY: bit `k` says slot `k` was written and not moved out
                // since (`into_vec` clears every bit when it takes the
                // values); it is dropped once, here, and `buf` (length 0)
                // will not drop it again.
                unsafe { v.assume_init_drop() };
            }
        }
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
