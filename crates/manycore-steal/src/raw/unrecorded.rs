//! The unrecorded join: `a` then `b` as plain calls, with `b` in a drop
//! guard that runs it if `a` unwinds.

use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{self, AssertUnwindSafe};

/// An unrecorded join: `a` then `b` as plain calls, with Rayon's panic
/// semantics (the caller has counted the join). `a` is called where it
/// lies, and `b` waits in a drop guard that runs it if `a` unwinds (both
/// run, `a`'s panic wins).
///
/// Why not `catch_unwind`: it hands its closure to `std::panicking::try`
/// through a union in memory, so the closures of every join would be copied
/// on the way, with 16-byte loads of what the caller has just written with
/// 8-byte stores. Such a load cannot be forwarded from the store buffer and
/// waits for the stores to retire (figures:
/// docs/notes/2026-11-25-steal-join-codegen.md).
#[inline(always)]
pub(crate) fn join_unrecorded<C: Copy, RA, RB, B: FnOnce(C) -> RB>(
    c: C,
    a: impl FnOnce(C) -> RA,
    b: B,
) -> (RA, RB) {
    let guard = RunOnUnwind {
        b: ManuallyDrop::new(b),
        c,
    };
    let ra = a(c);
    let b = guard.disarm();
    (ra, b(c))
}

/// Holds the `b` of an unrecorded join while `a` runs; dropped only if `a`
/// unwinds, and then runs `b`. It owns `b` (by value, and its drop is
/// inlined), so that on the normal path nothing takes `b`'s address: the
/// optimiser may keep `b`'s captures in registers across the call of `a`,
/// as the sequential code keeps its locals. (A guard holding `&mut b` with
/// an out-of-line drop would make `b`, and everything it borrows, live in
/// memory: stores and loads on every join.)
struct RunOnUnwind<C: Copy, B: FnOnce(C) -> RB, RB> {
    b: ManuallyDrop<B>,
    c: C,
}

impl<C: Copy, B: FnOnce(C) -> RB, RB> RunOnUnwind<C, B, RB> {
    /// `a` returned: hands `b` back without running the guard.
    #[inline(always)]
    fn disarm(self) -> B {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so this is the one place `b` is
        // taken out of this guard.
        unsafe { ManuallyDrop::take(&mut me.b) }
    }
}

impl<C: Copy, B: FnOnce(C) -> RB, RB> Drop for RunOnUnwind<C, B, RB> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: drop runs at most once, and only if the guard was not
        // disarmed (which takes `b` out and forgets the guard).
        let b = unsafe { ManuallyDrop::take(&mut self.b) };
        // A fresh slot, written here on the unwinding path only, and handed
        // over by address. Handed over by value (an indirect argument for a
        // closure bigger than two words), the callee's argument would be
        // the guard's own memory (the copy is elided): the guard would live
        // in memory, and every join would write `b` into it before calling
        // `a`. With the slot the guard's address never escapes, it stays in
        // registers, and the landing pad rebuilds `b` from them.
        let mut slot = MaybeUninit::new((b, self.c));
        // SAFETY: the slot is initialised, and it is a `MaybeUninit`, so
        // after the callee has moved its contents out nothing drops them
        // again.
        unsafe { run_after_panic_at(slot.as_mut_ptr()) };
    }
}

/// [`run_after_panic`] on the contents of a slot.
///
/// # Safety
/// `p` points to an initialised `(b, c)` that the caller will not use (nor
/// drop) afterwards: it is moved out here.
#[cold]
#[inline(never)]
unsafe fn run_after_panic_at<C, RB, B: FnOnce(C) -> RB>(p: *mut (B, C)) {
    // SAFETY: per the contract, initialised and moved out exactly once.
    let (b, c) = unsafe { p.read() };
    run_after_panic(b, c);
}

/// The unwinding path of an unrecorded join: runs `b` (Rayon: both run);
/// a second panic while unwinding would abort, so it is caught and dropped.
#[cold]
#[inline(never)]
fn run_after_panic<C, RB>(b: impl FnOnce(C) -> RB, c: C) {
    let _ = panic::catch_unwind(AssertUnwindSafe(move || b(c)));
}
