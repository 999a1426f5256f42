//! `PerCore`: the state a core's thread keeps for this crate, in one
//! thread-local: its registry of pending instances, its ready stack, the
//! handles to itself kept for frames, and its free lists. A firing reaches
//! it once (one state check) and passes it down by reference; each part
//! sits in its own cell, so holding the context while a body runs borrows
//! nothing (a body reaches the context again through the thread-local,
//! and borrows the part it needs for as long as it needs it).
//!
//! Thread exit drops the parts in the order below: the registry first
//! (emptying every pending instance), then the ready stack (emptying what
//! was ready), then the kept handles, then the free lists (giving every
//! block back). While it is being dropped the context is gone for the
//! thread: a drop that signals, pushes, keeps a core or frees a block
//! meanwhile takes its fallback (refused, a message, dropped, the global
//! allocator), as it would after.

use crate::here::Kept;
use crate::raw::slab::{Global, Lists};
use crate::ready::Ready;
use crate::registry::Registry;
use std::cell::RefCell;

/// One core thread's state (any thread has one; only a core's uses more
/// than its free lists).
pub(crate) struct PerCore {
    pub(crate) registry: RefCell<Registry>,
    pub(crate) ready: RefCell<Ready>,
    pub(crate) kept: RefCell<Kept>,
    pub(crate) lists: Lists<Global>,
}

thread_local! {
    static PER_CORE: PerCore = const {
        PerCore {
            registry: RefCell::new(Registry::new()),
            ready: RefCell::new(Ready::new()),
            kept: RefCell::new(Kept::new()),
            lists: Lists::new(Global),
        }
    };
}

/// Runs `f` with this thread's context; None if the thread is exiting (its
/// context is being dropped, or is gone).
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&PerCore) -> R) -> Option<R> {
    PER_CORE.try_with(f).ok()
}
