//! `CachePadded<T>`: a value alone on its cache line(s), so that writes to it
//! do not invalidate its neighbours (false sharing). 128 bytes on x86_64 and
//! aarch64, whose adjacent-line prefetchers pull lines in pairs (crossbeam-utils
//! uses the same figure), 64 elsewhere.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// Pads and aligns a value to the length of a cache line (or two).
#[cfg_attr(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    repr(C, align(128))
)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    repr(C, align(64))
)]
#[derive(Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CachePadded<T> {
    value: T,
}

impl<T> CachePadded<T> {
    /// Pads `value`.
    pub const fn new(value: T) -> Self {
        Self { value }
    }
    /// Returns the inner value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for CachePadded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for CachePadded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachePadded")
            .field("value", &self.value)
            .finish()
    }
}

impl<T> From<T> for CachePadded<T> {
    fn from(t: T) -> Self {
        Self::new(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn alignment_and_size() {
        assert!(std::mem::align_of::<CachePadded<u8>>() >= 64);
        assert_eq!(
            std::mem::size_of::<CachePadded<u8>>(),
            std::mem::align_of::<CachePadded<u8>>()
        );
        let mut p = CachePadded::new(5u32);
        *p += 1;
        assert_eq!(p.into_inner(), 6);
    }
}
