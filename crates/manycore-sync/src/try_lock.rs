//! [`TryLock`]: a mutual-exclusion lock that is only ever tried, never
//! waited for.
//!
//! # Protocol
//!
//! One byte, `locked`. [`TryLock::try_lock`] takes it with one
//! compare-and-swap `false -> true` (`Acquire`); the guard gives it back
//! with a plain `store(false, Release)`. Nobody sleeps on the lock, so the
//! release has no one to wake and need not read the word: a mutex that
//! supports waiting must swap it (to learn whether a waiter sleeps), one
//! read-modify-write more per critical section. A thread that finds the
//! lock taken gets `None` and decides for itself what to do (poll
//! something else, park, look again later).
//!
//! # Invariant and proof sketch
//!
//! At most one guard exists at a time, and every access to the value
//! happens through it. A guard exists only between a successful
//! compare-and-swap `false -> true` and the `store(false)` of its drop;
//! while `locked` is true no other compare-and-swap from `false` can
//! succeed, so guards' lives do not overlap. The `Release` store of one
//! guard's drop is read by the `Acquire` compare-and-swap that creates the
//! next, so everything the first did to the value happens before
//! everything the second does. A guard dropped during a panic still
//! releases the lock; unlike `std::sync::Mutex`, the lock is not
//! poisoned (callers that ignored poisoning lose nothing).
//!
//! The loom model (`loom_tests.rs`) checks the exclusion and the
//! ordering with loom's race detector on the value's cell.

use crate::atomic::{AtomicBool, Ordering};

/// A lock that is only tried ([`try_lock`](Self::try_lock)); see the
/// module's documentation for the protocol.
pub struct TryLock<T> {
    pub(crate) locked: AtomicBool,
    #[cfg(not(loom))]
    pub(crate) value: std::cell::UnsafeCell<T>,
    #[cfg(loom)]
    pub(crate) value: loom::cell::UnsafeCell<T>,
}

/// Holds a [`TryLock`] until dropped; dereferences to its value.
#[must_use = "the lock is released when the guard is dropped"]
pub struct TryLockGuard<'a, T> {
    pub(crate) lock: &'a TryLock<T>,
    /// loom's record of the access, alive as long as the guard.
    #[cfg(loom)]
    pub(crate) access: loom::cell::MutPtr<T>,
}

impl<T> TryLock<T> {
    /// A free lock holding `value`.
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: std::cell::UnsafeCell::new(value),
        }
    }

    /// A free lock holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: loom::cell::UnsafeCell::new(value),
        }
    }

    /// The lock, if it is free now; `None` if another guard holds it.
    // Out of line: inlined into manycore-mpi's poll loops it made the
    // round trip 20 ns slower (code layout), out of line it is even.
    #[inline(never)]
    pub fn try_lock(&self) -> Option<TryLockGuard<'_, T>> {
        // No plain load first: the lock is usually free, and a load that
        // fetches the line shared before the compare-and-swap fetches it
        // again exclusively would cost a second transfer between CPUs.
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(TryLockGuard {
            lock: self,
            #[cfg(loom)]
            access: self.value.get_mut(),
        })
    }

    /// Whether a guard holds the lock at this moment (a hint: it may change
    /// at once).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// The value, through exclusive access to the lock.
    #[cfg(not(loom))]
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// The value.
    #[cfg(not(loom))]
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: Default> Default for TryLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> std::fmt::Debug for TryLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TryLock")
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}

impl<T> Drop for TryLockGuard<'_, T> {
    #[inline(never)]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for TryLockGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}
