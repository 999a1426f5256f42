//! The calling thread's core state: null off the cores, and on a core's
//! thread, while the guard that `enter` returns lives, the core's state.
//!
//! The thread-local itself is declared by its user (the core loop), of type
//! `CurrentCore<T>`, so that this module knows nothing of what a core's
//! state is; the pointer inside is private, so only `enter` sets it and
//! only its guard clears it.
//!
//! A `Cell` of a raw pointer rather than a `RefCell<Option<Rc<_>>>`: a
//! thread-local without a destructor needs no registration check on access,
//! and reading it stores nothing (a `RefCell` borrow writes its flag twice),
//! which matters on every send.

use std::cell::Cell;
use std::marker::PhantomData;
use std::thread::LocalKey;

/// What the thread-local holds: a pointer to the thread's core state, null
/// while the thread is not a core.
pub(crate) struct CurrentCore<T>(Cell<*const T>);

impl<T> CurrentCore<T> {
    /// Not a core (yet).
    pub(crate) const fn new() -> Self {
        Self(Cell::new(std::ptr::null()))
    }
}

/// While it lives, its `T` is this thread's core state; dropped (at the end
/// of the core, or while unwinding out of it), the thread is no longer a
/// core. It borrows the `T`, so the borrow checker keeps the `T` alive and
/// in place for as long as the pointer can be read.
pub(crate) struct CoreGuard<'a, T: 'static> {
    key: &'static LocalKey<CurrentCore<T>>,
    /// Borrows the state; `*const` keeps the guard on its thread.
    _state: PhantomData<(&'a T, *const T)>,
}

impl<T> std::fmt::Debug for CoreGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CoreGuard")
    }
}

impl<T> Drop for CoreGuard<'_, T> {
    fn drop(&mut self) {
        self.key.with(|c| c.0.set(std::ptr::null()));
    }
}

/// Makes `local` this thread's core state (in `key`) for as long as the
/// returned guard lives.
///
/// # Safety
/// Nothing may borrow `local` mutably while the guard lives (it is handed
/// out as `&T` to any code on this thread); the guard must be dropped, not
/// leaked, and stay on this thread's stack (it is not `Send`); and `local`
/// must outlive every coroutine resumed on this thread while the guard
/// lives (a coroutine suspended inside `with_current`'s closure still
/// holds the reference it was given).
pub(crate) unsafe fn enter<'a, T>(
    key: &'static LocalKey<CurrentCore<T>>,
    local: &'a T,
) -> CoreGuard<'a, T> {
    key.with(|c| c.0.set(local));
    CoreGuard {
        key,
        _state: PhantomData,
    }
}

/// Runs `f` with this thread's core state (in `key`), if this thread is a
/// core.
#[inline]
pub(crate) fn with_current<T, R>(
    key: &'static LocalKey<CurrentCore<T>>,
    f: impl FnOnce(Option<&T>) -> R,
) -> R {
    let p = key.with(|c| c.0.get());
    // SAFETY: a non-null pointer was set by `enter` and is cleared by its
    // guard's drop; the guard borrows the state, so the state is alive, in
    // place and (by `enter`'s contract) not mutably borrowed while the
    // pointer is set. The guard is dropped only by its owner (the core
    // loop, at its top level or when unwinding out of it), never inside
    // `f`, so the reference, which does not outlive `f`, stays valid while
    // `f` runs (and, by `enter`'s contract, while a coroutine suspended
    // inside `f` may still resume or unwind).
    f(unsafe { p.as_ref() })
}
