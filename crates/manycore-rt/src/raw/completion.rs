//! The completion record an invocation's result travels through, shared by
//! its completer and its single waiter without a reference count.

use crate::error::InvokeError;
use manycore_sync::atomic::{AtomicU32, Ordering};
use manycore_sync::cell::UnsafeCell;
#[cfg(not(loom))]
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::Waker;

#[cfg(not(loom))]
use super::blocks;

// The state word's bits. Each is set at most once per record; only WAITER
// is ever cleared (by the waiter, to withdraw a registration).

/// The result is in the value cell. Set once, by the completer
/// ([`Tx::complete`], also when a dropped `Tx` completes with `Shutdown`),
/// right after it wrote the value, with `fetch_add(DONE, AcqRel)`: its
/// Release half publishes the value to the waiter's Acquire loads of the
/// state (`is_done`, `register`, `cancel`, `Rx::drop`); its Acquire half
/// pairs with the Release of `register`'s `fetch_or(WAITER)` (the waker is
/// visible), of `cancel`'s CAS and of `Rx::drop`'s `fetch_or(GONE)`. The
/// `prev` it returns decides the completer's path: fast if neither WAITER
/// nor CANCELLED was set.
const DONE: u32 = 1;
/// The waiter has stored a waker and wants to be woken. Set by the waiter
/// in `register`, with `fetch_or(WAITER, AcqRel)` after it wrote the waker
/// cell (Release hands the waker to the completer's Acquire DONE). Cleared
/// by the waiter only: by CAS while DONE is clear (`register` before it
/// stores a new waker, `cancel`, `Rx::drop`), or with a Relaxed
/// `fetch_and` when `register`'s `fetch_or` found DONE already set (the
/// completer took its fast path without seeing it, and nothing reads the
/// bit but the waiter). Seen by the completer in DONE's `prev`: it then
/// takes the waker and wakes it (slow path).
const WAITER: u32 = 2;
/// The waiter gave up (a timeout) before the result came. Set by the
/// waiter in `cancel`, by a CAS (AcqRel; Acquire on failure) that also
/// clears WAITER, and only while DONE is clear: if DONE won, the result is
/// taken instead. Seen by the completer in DONE's `prev`: it then drops the
/// late result itself, on its own thread (slow path), and reports it late.
const CANCELLED: u32 = 4;
/// The waiter's end (`Rx`) is dropped. Set by `Rx::drop` with
/// `fetch_or(GONE, AcqRel)` unless the completer had already finished (then
/// the waiter frees the record without it): Release orders the waiter's
/// last touches of the record before the completer's free; Acquire lets the
/// waiter free the record itself if the `prev` it got says the completer
/// finished first. Seen by the completer in the `prev` of DONE (fast path)
/// or FIN (slow path): it then frees the record.
const GONE: u32 = 8;
/// The completer has finished its slow path. Set once by the completer,
/// after it took the waker or the late value out of the record, with
/// `fetch_add(FIN, AcqRel)`: Release ends its use of the record before a
/// waiter that sees FIN frees it; Acquire pairs with GONE, if the completer
/// is the one to free. Until FIN, a waiter that saw WAITER or CANCELLED
/// beside DONE does not free the record.
const FIN: u32 = 16;

/// The meeting point of an invocation's completer (on the callee core) and
/// its single waiter (a thread, a core, or an async task): one allocation,
/// owned jointly by a [`Tx`] (the completer) and an [`Rx`] (the waiter), with
/// no reference count. The state word says who still needs it, and whoever
/// finishes last frees it.
///
/// Protocol (one state word):
/// * completer: write the value; set DONE (`fetch_add`: see `complete`). If
///   neither WAITER nor CANCELLED was set (the fast path), it is finished: it
///   frees the record if GONE was set, else leaves it to the waiter.
///   Otherwise (slow path) it takes the waker (WAITER) or the value it must
///   drop (CANCELLED), then sets FIN (`fetch_add`), frees the record if GONE
///   was set, and wakes the waker.
/// * the completer is therefore finished once DONE is set and either neither
///   WAITER nor CANCELLED is, or FIN is. WAITER and CANCELLED are only ever
///   set by the waiter before DONE (a WAITER set after DONE by `register` is
///   cleared again at once, before anything reads it).
/// * waiter: if DONE, take the value. To (re)register: withdraw WAITER by CAS
///   (fails only if DONE arrived), store the waker, `fetch_or(WAITER)`; if that
///   saw DONE, the result is there and nobody will wake us (clear the WAITER).
/// * timeout: `cancel` sets CANCELLED and withdraws WAITER in one CAS, unless
///   DONE is set (then the result won). The completer, seeing CANCELLED, drops
///   the late result itself, on its core.
/// * waiter dropped: frees the record if the completer is finished; else
///   withdraws WAITER (dropping its waker), then `fetch_or(GONE)`, and frees
///   the record if the completer finished meanwhile.
///
/// The waker cell is written by the waiter only while WAITER and DONE are both
/// clear, and read by the completer only after it set DONE with WAITER set, so
/// the two never touch it at once. On the fast path the completer does one
/// atomic read-modify-write and the waiter none. Model-checked in
/// `loom_tests.rs`, where a freed record is poisoned rather than deallocated
/// so that any touch after the free fails the model.
struct Completion<T> {
    state: AtomicU32,
    value: UnsafeCell<Option<Result<T, InvokeError>>>,
    waker: UnsafeCell<Option<Waker>>,
    /// Poison for the loom models (not a loom object: no extra interleavings).
    #[cfg(loom)]
    freed: std::sync::atomic::AtomicBool,
}

/// Makes a completion record; returns its completer's and its waiter's end.
pub(crate) fn completion<T>() -> (Tx<T>, Rx<T>) {
    let c = Completion {
        state: AtomicU32::new(0),
        value: UnsafeCell::new(None),
        waker: UnsafeCell::new(None),
        #[cfg(loom)]
        freed: std::sync::atomic::AtomicBool::new(false),
    };
    #[cfg(not(loom))]
    let p = match blocks::take::<Completion<T>>() {
        Some(p) => {
            // SAFETY: `take` gave us an unused block with room and alignment
            // for a Completion<T>.
            unsafe { p.as_ptr().write(c) };
            p
        }
        None => NonNull::from(Box::leak(Box::new(c))),
    };
    // Freed by `free` (under loom, never deallocated but poisoned, so that a
    // touch after the free is caught by `check` instead of being UB).
    #[cfg(loom)]
    let p = NonNull::from(Box::leak(Box::new(c)));
    (Tx { p }, Rx { p })
}

/// Loom models only: a completion and a probe that tells whether its record
/// was freed (records are never deallocated under loom).
#[cfg(all(loom, test))]
pub(crate) fn completion_with_probe<T>() -> (Tx<T>, Rx<T>, impl Fn() -> bool) {
    let (tx, rx) = completion::<T>();
    let p = tx.p.as_ptr() as usize;
    let probe = move || {
        // SAFETY: under loom records are never deallocated.
        let c = unsafe { &*(p as *const Completion<T>) };
        c.freed.load(std::sync::atomic::Ordering::Relaxed)
    };
    (tx, rx, probe)
}

/// The completer's end of a completion record.
pub(crate) struct Tx<T> {
    p: NonNull<Completion<T>>,
}

/// The waiter's end of a completion record.
pub(crate) struct Rx<T> {
    p: NonNull<Completion<T>>,
}

// SAFETY: a Tx moves a value of T to the waiter, and the record it points to
// is shared only with the single Rx under the protocol above.
unsafe impl<T: Send> Send for Tx<T> {}
// SAFETY: as for Tx; the value crosses threads once, so T: Send.
unsafe impl<T: Send> Send for Rx<T> {}
// SAFETY: the only method callable through `&Rx` from several threads at once
// is `is_done` (an atomic load); the crate calls the others from the single
// waiter only (an `Invocation` exposes them through `self` or `&mut self`).
unsafe impl<T: Send> Sync for Rx<T> {}

impl<T> Completion<T> {
    #[inline]
    fn check(&self) {
        #[cfg(loom)]
        assert!(
            !self.freed.load(std::sync::atomic::Ordering::Relaxed),
            "completion record touched after it was freed"
        );
    }
}

/// Frees a record whose two ends are both finished with it.
///
/// # Safety
/// `p` came from `completion`, and neither end will touch it again.
unsafe fn free<T>(p: NonNull<Completion<T>>) {
    #[cfg(not(loom))]
    {
        // SAFETY: guaranteed by the caller: the record is initialised and
        // nobody refers to it any more.
        unsafe { std::ptr::drop_in_place(p.as_ptr()) };
        // SAFETY: as above; the block came from `blocks::take` exactly when
        // a Completion<T> fits one, else from Box::leak.
        if !unsafe { blocks::give(p) } {
            // SAFETY: from Box::leak, contents already dropped: free the
            // memory only.
            drop(unsafe { Box::from_raw(p.as_ptr().cast::<ManuallyDrop<Completion<T>>>()) });
        }
    }
    #[cfg(loom)]
    {
        // SAFETY: guaranteed by the caller; records are never deallocated under
        // loom, so the reference is valid.
        let c = unsafe { p.as_ref() };
        assert!(
            !c.freed.swap(true, std::sync::atomic::Ordering::Relaxed),
            "completion record freed twice"
        );
        // Drop the contents as a real free would (leak checks see them go).
        // SAFETY: both ends are finished with the record.
        drop(c.value.with_mut(|v| unsafe { (*v).take() }));
        // SAFETY: as above.
        drop(c.waker.with_mut(|w| unsafe { (*w).take() }));
    }
}

impl<T> Tx<T> {
    /// Stores the result and wakes a registered waiter. Returns false if the
    /// waiter had given up (the result was then dropped here, on this thread).
    pub(crate) fn complete(self, r: Result<T, InvokeError>) -> bool {
        let p = self.p;
        std::mem::forget(self);
        // SAFETY: the record lives until both ends are finished, and this end
        // is not finished until below.
        let c = unsafe { p.as_ref() };
        c.check();
        // SAFETY: only the completer writes the value, once, and the waiter
        // reads it only after observing DONE, which is set after this write.
        // The cell still holds the `None` it was made with, so it is
        // overwritten without being read (and dropped) first: a read would
        // fetch the line shared, and the write after it would then fetch it
        // again, exclusive; a bare write fetches it once (the waiter's core
        // holds it: this is the one line transfer of the result's way back).
        c.value.with_mut(|v| unsafe { v.write(Some(r)) });
        // AcqRel: Release publishes the value to the waiter's Acquire load of
        // DONE; Acquire pairs with the Release of `register` so the waker
        // stored before WAITER is visible here, and with `Rx::drop`'s GONE.
        //
        // An add, not an or: only this completer sets DONE, once, so the bit
        // is clear here and adding it is setting it. On x86 `fetch_or` with
        // its old value is a load and a `lock cmpxchg` loop: the load fetches
        // the waiter's line shared, then the cmpxchg fetches it again,
        // exclusive; `fetch_add` is one `lock xadd`, one fetch of the line.
        let prev = c.state.fetch_add(DONE, Ordering::AcqRel);
        if prev & (WAITER | CANCELLED) == 0 {
            if prev & GONE != 0 {
                // SAFETY: the waiter is gone and we are finished.
                unsafe { free(p) };
            }
            return true;
        }
        // Slow path: the waiter registered a waker, or gave up. Until FIN, the
        // waiter does not free the record.
        let late = prev & CANCELLED != 0;
        let (value, waker) = if late {
            // SAFETY: the waiter cancelled before DONE, so it never reads the
            // value: it is ours to drop.
            (c.value.with_mut(|v| unsafe { (*v).take() }), None)
        } else {
            // SAFETY: WAITER was set when we set DONE; from then on the waiter
            // never writes the waker cell (it only writes with both bits clear).
            (None, c.waker.with_mut(|w| unsafe { (*w).take() }))
        };
        // AcqRel: Release ends our use of the record before the waiter frees
        // it; Acquire pairs with `Rx::drop`'s GONE if we are to free it.
        // An add sets FIN as an or would: only we set it, once (see DONE).
        let prev = c.state.fetch_add(FIN, Ordering::AcqRel);
        if prev & GONE != 0 {
            // SAFETY: the waiter is gone and we are finished.
            unsafe { free(p) };
        }
        drop(value);
        if let Some(w) = waker {
            w.wake();
        }
        !late
    }
}

impl<T> Drop for Tx<T> {
    /// A completer dropped unrun (the runtime shut down) resolves the
    /// invocation to `Shutdown`.
    fn drop(&mut self) {
        let tx = Tx { p: self.p };
        tx.complete(Err(InvokeError::Shutdown));
    }
}

impl<T> Rx<T> {
    /// The record's address: unique among the records alive, and the record
    /// lives while its completer does (an invocation's identity while it is
    /// pending).
    pub(crate) fn id(&self) -> usize {
        self.p.as_ptr() as usize
    }

    fn c(&self) -> &Completion<T> {
        // SAFETY: the record lives until both ends are finished; this end is
        // finished only in Drop.
        let c = unsafe { self.p.as_ref() };
        c.check();
        c
    }

    /// True once the result is stored.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        // Acquire; pairs with the Release half of `fetch_add(DONE)` in `complete`.
        self.c().state.load(Ordering::Acquire) & DONE != 0
    }

    /// Takes the result. Returns None if not done yet or already taken.
    /// Single waiter only.
    pub(crate) fn take(&self) -> Option<Result<T, InvokeError>> {
        if !self.is_done() {
            return None;
        }
        // SAFETY: DONE was observed with Acquire, so the completer's write is
        // visible and finished; the single waiter is the only reader (a late
        // result, which the completer drops, is never taken: `cancel` reports
        // whether the result won).
        self.c().value.with_mut(|v| unsafe { (*v).take() })
    }

    /// Registers `waker` to be woken on completion. Returns true if the result
    /// is already there (then nothing will be woken). Single waiter only.
    pub(crate) fn register(&self, waker: &Waker) -> bool {
        let c = self.c();
        let s = c.state.load(Ordering::Acquire);
        if s & DONE != 0 {
            return true;
        }
        if s & WAITER != 0 {
            // Withdraw the old registration; fails only if DONE arrived meanwhile.
            // Acquire on failure; pairs with the completer's Release.
            if c.state
                .compare_exchange(s, s & !WAITER, Ordering::Acquire, Ordering::Acquire)
                .is_err()
            {
                return true;
            }
        }
        // SAFETY: WAITER is clear and we are the only waiter, so the completer
        // will not touch the waker cell unless it sees the WAITER we set below.
        c.waker.with_mut(|w| unsafe { *w = Some(waker.clone()) });
        // AcqRel: Release hands the waker to the completer's Acquire
        // `fetch_add(DONE)`;
        // Acquire lets us read the value if DONE is already set.
        if c.state.fetch_or(WAITER, Ordering::AcqRel) & DONE != 0 {
            // The completer took its fast path without seeing our WAITER: take
            // the bit back so the state says the completer is finished.
            c.state.fetch_and(!WAITER, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// The waiter gives up (timeout). Returns true if the result had already
    /// arrived (the result wins; take it), false if the invocation is now
    /// deactivated (the completer will drop the late result). Single waiter.
    pub(crate) fn cancel(&self) -> bool {
        let c = self.c();
        let mut s = c.state.load(Ordering::Acquire);
        loop {
            if s & DONE != 0 {
                return true;
            }
            // AcqRel: Release so the completer's Acquire `fetch_add(DONE)` sees
            // the withdrawal; Acquire (also on failure) to read the value if
            // DONE won.
            match c.state.compare_exchange(
                s,
                (s | CANCELLED) & !WAITER,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        if s & WAITER != 0 {
            // SAFETY: we withdrew WAITER before DONE, so the completer will never
            // touch the waker cell: it is ours to empty.
            drop(c.waker.with_mut(|w| unsafe { (*w).take() }));
        }
        false
    }
}

/// True if the completer is finished with a record in state `s`.
#[inline]
fn completer_finished(s: u32) -> bool {
    s & DONE != 0 && (s & (WAITER | CANCELLED) == 0 || s & FIN != 0)
}

impl<T> Drop for Rx<T> {
    fn drop(&mut self) {
        let c = self.c();
        // Acquire; pairs with the completer's Release (DONE or FIN).
        let mut s = c.state.load(Ordering::Acquire);
        if completer_finished(s) {
            // SAFETY: the completer is finished and so are we.
            unsafe { free(self.p) };
            return;
        }
        if s & WAITER != 0 && s & DONE == 0 {
            // Withdraw our registration (fails only if DONE arrived).
            match c
                .state
                .compare_exchange(s, s & !WAITER, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: WAITER withdrawn before DONE: the completer will
                    // never touch the waker cell.
                    drop(c.waker.with_mut(|w| unsafe { (*w).take() }));
                }
                Err(now) => s = now,
            }
            if completer_finished(s) {
                // SAFETY: as above.
                unsafe { free(self.p) };
                return;
            }
        }
        // AcqRel: Release so that everything we did is done before the
        // completer frees; Acquire to free it ourselves if it finished first.
        let prev = c.state.fetch_or(GONE, Ordering::AcqRel);
        if completer_finished(prev) {
            // SAFETY: the completer finished before it could see GONE, so it
            // will not free; we are last.
            unsafe { free(self.p) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The results of everyday calls travel in one-line blocks (if this fails,
    /// the record grew and such calls went back to the allocator).
    #[test]
    fn common_records_fit_a_block() {
        assert!(
            size_of::<Completion<u64>>() <= 64,
            "{}",
            size_of::<Completion<u64>>()
        );
        assert!(size_of::<Completion<()>>() <= 64);
        assert!(size_of::<Completion<String>>() <= 64);
        assert!(size_of::<Completion<[u64; 16]>>() > 64);
    }

    /// Records of both kinds (blocks and boxes), completed and dropped in
    /// either order, on either thread: every value arrives, nothing is freed
    /// twice (a double free would abort the test process).
    #[test]
    fn records_are_reused_safely_across_threads() {
        for round in 0..200u64 {
            let (txs, rxs): (Vec<Tx<u64>>, Vec<Rx<u64>>) = (0..8).map(|_| completion()).unzip();
            let big: Vec<_> = (0..8).map(|_| completion::<[u64; 16]>()).collect();
            let t = std::thread::spawn(move || {
                for (i, tx) in txs.into_iter().enumerate() {
                    tx.complete(Ok(round * 100 + i as u64));
                }
            });
            // Drop every other waiter early: its completer may then free the
            // record, on the other thread.
            let kept: Vec<(usize, Rx<u64>)> = rxs
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == 1)
                .collect();
            t.join().unwrap();
            for (i, rx) in kept {
                assert_eq!(rx.take(), Some(Ok(round * 100 + i as u64)));
            }
            for (i, (tx, rx)) in big.into_iter().enumerate() {
                tx.complete(Ok([i as u64; 16]));
                assert_eq!(rx.take(), Some(Ok([i as u64; 16])));
            }
        }
    }
}
