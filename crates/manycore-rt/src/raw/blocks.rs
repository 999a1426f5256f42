//! Completion records that fit one cache line come from a small per-thread
//! queue of line-sized, line-aligned blocks, oldest first. A block is taken
//! by the thread that makes the record (the caller) and given back to the
//! queue of the thread that frees it (whichever end finishes last), so
//! blocks move between threads; a queue keeps at most `KEEP` of them.
//!
//! Why not `Box`: the allocator hands the block it was just given back at
//! once, and the waiter then writes (frees, then initialises) a line that
//! the completer wrote a moment ago: on the caller's critical path it waits
//! for that line to come back from the other core. Here a freed block goes
//! to the back of the queue and is taken again only after a few others. A
//! whole line also means no false sharing with whatever the allocator put
//! beside a record smaller than a line.

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::ptr::NonNull;

/// One cache line.
const BLOCK: Layout = match Layout::from_size_align(64, 64) {
    Ok(l) => l,
    Err(_) => panic!("64-byte blocks"),
};
/// Blocks kept per thread (more are given back to the allocator).
const KEEP: usize = 16;
/// Blocks a thread keeps in reserve before it reuses one, so that the
/// block it takes is not the one it just freed.
const RESERVE: usize = 2;

struct Queue(VecDeque<NonNull<u8>>);

impl Drop for Queue {
    fn drop(&mut self) {
        for p in self.0.drain(..) {
            // SAFETY: every block in the queue came from `alloc(BLOCK)`
            // and is unused.
            unsafe { dealloc(p.as_ptr(), BLOCK) };
        }
    }
}

thread_local! {
    static FREE: RefCell<Queue> = const { RefCell::new(Queue(VecDeque::new())) };
}

/// True if records of type `R` use the blocks.
const fn fits<R>() -> bool {
    std::mem::size_of::<R>() <= BLOCK.size() && std::mem::align_of::<R>() <= BLOCK.align()
}

/// A block for an `R`: the oldest free one, or a new one. None if `R`
/// does not fit a block (the caller boxes it).
#[inline]
pub(super) fn take<R>() -> Option<NonNull<R>> {
    if !fits::<R>() {
        return None;
    }
    let reused = FREE
        .try_with(|q| {
            let mut q = q.borrow_mut();
            if q.0.len() > RESERVE {
                q.0.pop_front()
            } else {
                None
            }
        })
        .ok()
        .flatten();
    let p = match reused {
        Some(p) => p,
        None => {
            // SAFETY: BLOCK has a non-zero size.
            let p = unsafe { alloc(BLOCK) };
            NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(BLOCK))
        }
    };
    Some(p.cast())
}

/// Gives back the block of a record of type `R` whose contents were
/// dropped. Returns false if `R` does not use blocks (the caller frees
/// it as a Box).
///
/// # Safety
/// `p` came from [`take::<R>`], and nothing refers to it any more.
#[inline]
pub(super) unsafe fn give<R>(p: NonNull<R>) -> bool {
    if !fits::<R>() {
        return false;
    }
    let p = p.cast::<u8>();
    let kept = FREE
        .try_with(|q| {
            let mut q = q.borrow_mut();
            if q.0.len() < KEEP {
                q.0.push_back(p);
                true
            } else {
                false
            }
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: guaranteed by the caller; blocks come from alloc(BLOCK).
        unsafe { dealloc(p.as_ptr(), BLOCK) };
    }
    true
}
