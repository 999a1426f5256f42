//! `OwnerCell`: a cell that one thread owns for good, the first that uses
//! it (or the one that made it, if it says so). Only that thread ever gets
//! at the contents; any other is refused (`None`), never let in. It is how
//! an instance keeps its owner's half (slots, count, body) in the same
//! allocation as the part every handle shares, without a lock: the
//! protocol (`README.md`) has only the owner core's thread touch that half,
//! and this cell turns a breach of that rule into a refusal instead of a
//! data race.
//!
//! The owner is a thread id from a process-wide counter (never reused, so
//! a thread that exits cannot be impersonated by a later one). Binding is
//! one `compare_exchange` from "nobody" to the caller's id; after that a
//! check is one Relaxed load and a compare. Relaxed is enough: nothing is
//! published through the word. The contents were written before the cell
//! was shared (whatever shared it, an `Arc` sent through a channel or a
//! ring, ordered that), and afterwards only one thread reads or writes
//! them, so its own program order is the only order there is.
//!
//! A borrow flag (touched by the owner only) refuses re-entry: `with`
//! called again from inside its own closure gets `None`.

use manycore_sync::atomic::{AtomicU64, Ordering};
use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;

/// No thread owns the cell yet.
const NOBODY: u64 = 0;

/// The next thread id to hand out (ids start at 1: 0 is `NOBODY`).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    /// This thread's id; `NOBODY` until first asked. No destructor (a
    /// `const` Cell of an integer), so it stays readable while the thread's
    /// other thread-locals are being destroyed.
    static ID: Cell<u64> = const { Cell::new(NOBODY) };
}

/// The calling thread's id: unique among every thread the process ever
/// had.
pub(crate) fn thread_id() -> u64 {
    ID.with(|c| {
        let v = c.get();
        if v != NOBODY {
            return v;
        }
        let v = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        c.set(v);
        v
    })
}

/// Whom a new cell will belong to: the thread that asked (if it said
/// `here`), or the first thread to use the cell. Asked for before the
/// cell's contents are made, so that making the cell calls nothing (a call
/// in the middle makes the compiler stage the contents on the stack). Not
/// `Send`: it names the thread that holds it.
#[derive(Clone, Copy)]
pub(crate) struct Owner {
    id: u64,
    _this_thread: PhantomData<*const ()>,
}

impl Owner {
    /// The calling thread if `here`, else the first user.
    #[inline]
    pub(crate) fn here_if(here: bool) -> Self {
        Self {
            id: if here { thread_id() } else { NOBODY },
            _this_thread: PhantomData,
        }
    }
}

/// A value only its owner thread can reach.
pub(crate) struct OwnerCell<T> {
    owner: AtomicU64,
    /// Whether `with` is running on the owner thread (owner only).
    busy: UnsafeCell<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: the contents are reached only through `with` / `with_as`, which
// let in one thread, the owner, and never while another `with` of the same
// cell runs on it (the busy flag); so no two threads ever touch `value` or
// `busy` concurrently. The value may be used (and is dropped) on a thread
// other than its maker's: it must be `Send`. Nothing is shared between
// threads by reference through the cell, so `T: Sync` is not needed.
unsafe impl<T: Send> Sync for OwnerCell<T> {}
// SAFETY: moving the cell moves the value with it, which `T: Send` allows
// (the owner id only refers to a thread, it is no reference into one).
unsafe impl<T: Send> Send for OwnerCell<T> {}

impl<T> OwnerCell<T> {
    /// A cell owned by the calling thread if `here`, else by the first
    /// thread to call `with`.
    #[inline]
    #[cfg(test)]
    pub(crate) fn new_for(here: bool, value: T) -> Self {
        Self::new_owned(Owner::here_if(here), value)
    }

    /// A cell owned by `owner` (asked for on this thread: it is not
    /// `Send`).
    #[inline]
    pub(crate) fn new_owned(owner: Owner, value: T) -> Self {
        Self::owned_by(owner.id, value)
    }

    fn owned_by(owner: u64, value: T) -> Self {
        Self {
            owner: AtomicU64::new(owner),
            busy: UnsafeCell::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` on the contents if the calling thread owns the cell (or
    /// nobody does yet: then it does from now on) and no `with` of this cell
    /// runs further up its stack; `None` otherwise, without calling `f`.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.with_as(thread_id(), f)
    }

    /// `with` as the thread `me`, for a loom model (whose threads are not
    /// threads of the process, so the model names them itself).
    #[cfg(all(test, loom))]
    pub(crate) fn with_in_model<R>(&self, me: u64, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.with_as(me, f)
    }

    /// `with` as the thread `me`: private, as it is sound only if `me` is
    /// the caller's own id (two threads passing one id would both be let in).
    #[inline]
    fn with_as<R>(&self, me: u64, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let owner = self.owner.load(Ordering::Relaxed);
        if owner != me {
            if owner != NOBODY || me == NOBODY {
                return None;
            }
            // Unowned: the first caller takes it. A loser of this race is
            // refused like any other non-owner.
            self.owner
                .compare_exchange(NOBODY, me, Ordering::Relaxed, Ordering::Relaxed)
                .ok()?;
        }
        // SAFETY: only the owner gets here (checked above; the id is the
        // caller's own, and ids are never shared or reused), so `busy` is
        // never read or written by two threads at once.
        let busy = unsafe { &mut *self.busy.get() };
        if *busy {
            return None;
        }
        *busy = true;
        // Clears the flag however `f` ends (return or unwind).
        struct Release<'a>(&'a UnsafeCell<bool>);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                // SAFETY: still on the owner thread, inside the borrow it
                // opened; no other reference to the flag is alive.
                unsafe { *self.0.get() = false };
            }
        }
        let _release = Release(&self.busy);
        // SAFETY: the owner thread only, and no other `with` of this cell is
        // running on it (the busy flag was clear and is now set until
        // `_release` drops): this is the only reference to the value.
        let value = unsafe { &mut *self.value.get() };
        Some(f(value))
    }
}
