//! `Turnstile`: the lock word and FIFO software queue of a gate (the
//! software thread queue that CEFOS puts in front of a `gate_thread` instead
//! of self-continuations, section 4.2 of Kusakabe, Taniguchi, Amamiya, *A
//! Study of a Continuation-based Fine-grain Multithreaded Operating System
//! CEFOS*). Core-agnostic: a waiter is any `W`, and whoever gets a waiter
//! back from [`Turnstile::release`] dispatches it.
//!
//! Word states: `0` free; `HELD`; `HELD | QUEUED` (held, and the queue is
//! non-empty). The uncontended paths are one CAS each and never touch the
//! queue. `QUEUED` is set and cleared only under the queue's lock, and
//! always together with the push / the pop that empties the queue, so
//! `QUEUED` <=> the queue is non-empty. A release that finds `QUEUED` pops
//! exactly one waiter and leaves `HELD` set: the gate passes to that waiter
//! without ever being free, so nothing can barge in between, and waiters get
//! the gate in the order they were queued. `loom_tests.rs` checks mutual
//! exclusion, the single handoff and FIFO order.

use manycore_sync::atomic::{AtomicU8, Ordering};
use manycore_sync::Mutex;
use std::collections::VecDeque;

const HELD: u8 = 1;
const QUEUED: u8 = 2;

/// A gate's lock word and waiter queue.
pub(crate) struct Turnstile<W> {
    word: AtomicU8,
    queue: Mutex<VecDeque<W>>,
}

impl<W> Turnstile<W> {
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU8::new(0),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// Takes the gate if it is free (the test-and-set of self-continuation).
    ///
    /// Acquire; pairs with the Release of the fast path in `release`, so the
    /// previous holder's work happens before ours.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        self.word
            .compare_exchange(0, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the gate for `w` if it is free (returns `Some(w)`: `w` holds
    /// it now), or queues `w` behind the waiters already there (returns
    /// `None`: a later `release` hands the gate to `w`).
    pub(crate) fn acquire_or_enqueue(&self, w: W) -> Option<W> {
        if self.try_acquire() {
            return Some(w);
        }
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let s = self.word.load(Ordering::Relaxed);
            if s == 0 {
                // Released since our first try: take it (Acquire as above).
                if self
                    .word
                    .compare_exchange(0, HELD, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Some(w);
                }
                continue;
            }
            // Held. Mark the queue non-empty (unless it is marked already:
            // only the lock holder changes QUEUED, and we hold the lock).
            // This CAS races with the holder's fast release (HELD -> 0):
            // exactly one of the two wins; if the release wins we loop and
            // take the free gate, if we win the release sees QUEUED and
            // takes the slow path, which needs this lock, so it sees `w`.
            if s == HELD
                && self
                    .word
                    .compare_exchange(HELD, HELD | QUEUED, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            q.push_back(w);
            return None;
        }
    }

    /// Releases the gate held by the caller. Returns `None` if it is free
    /// now, or the one waiter it was handed to (still `HELD`; the caller
    /// dispatches that waiter, which releases in its turn).
    pub(crate) fn release(&self) -> Option<W> {
        // Release; pairs with the Acquire CASes above. Fails only if QUEUED
        // is set (nobody else changes the word while we hold the gate).
        if self
            .word
            .compare_exchange(HELD, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return None;
        }
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let w = q.pop_front();
        match w {
            // The last waiter: clear QUEUED, keep HELD (it is the waiter's
            // now). A plain store: under the lock nobody else may change
            // QUEUED, and with HELD set no acquirer's CAS can succeed.
            Some(_) if q.is_empty() => self.word.store(HELD, Ordering::Relaxed),
            Some(_) => {}
            // Not reachable while QUEUED <=> non-empty holds; free the gate
            // rather than leave it held by nobody. Release as above.
            None => self.word.store(0, Ordering::Release),
        }
        w
    }

    /// Whether the gate is held right now (a snapshot).
    pub(crate) fn is_held(&self) -> bool {
        self.word.load(Ordering::Relaxed) & HELD != 0
    }

    /// Waiters queued right now (a snapshot).
    pub(crate) fn queued(&self) -> usize {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
