//! The recorded join: link a frame into the chain, run `a`, then run `b`
//! inline or collect it from the thief; and its unwinding path.

use super::frame::{Frame, DONE, LATENT};
use super::local::Local;
use manycore_sync::atomic::Ordering;
use std::panic::{self, AssertUnwindSafe};

/// A recorded join: links a frame holding `b` into the chain, runs `a`, then
/// runs `b` inline if it is still latent, or collects it from the thief that
/// took it. `b` is told whether it runs on a thief.
///
/// While the worker is eager (`Local::eager`), the join also serves a hungry
/// worker at once (one Relaxed load of the demand word) rather than only at
/// the next tick.
///
/// Fast path: a few plain loads and stores; no atomic RMW, fence or allocation.
#[inline(always)]
pub(crate) fn join<A, B, RA, RB>(local: &Local, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    let prev = local.head();
    let frame = Frame::new(b, prev);
    local.link(&frame.header);
    // If `a` (or the tick) unwinds, the guard finishes the frame (runs `b`,
    // or waits for the thief that has it) before the frame goes away. Not
    // `catch_unwind`: it would hand `a` over through memory (see
    // `join_unrecorded`).
    let guard = RecordedGuard {
        local,
        frame: &frame,
    };
    let n = local.beat.get();
    if n == 0 {
        crate::pool::tick(local);
    } else {
        local.beat.set(n - 1);
        crate::pool::serve_if_hungry(local);
    }
    let ra = a();
    std::mem::forget(guard);
    local.unlink(prev);
    // Acquire; pairs with the Release store of `DONE` in `run_frame`.
    if frame.header.state.load(Ordering::Acquire) == LATENT {
        // SAFETY: never published (still latent), so the owner owns `b`; taken once.
        let b = unsafe { frame.take_b() };
        (ra, b(false))
    } else {
        join_promoted(local, &frame, ra)
    }
}

/// Finishes a recorded join whose `a` unwinds: see [`unwind_recorded`].
struct RecordedGuard<'a, B, RB>
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    local: &'a Local,
    frame: &'a Frame<B, RB>,
}

impl<B, RB> Drop for RecordedGuard<'_, B, RB>
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    #[inline(always)]
    fn drop(&mut self) {
        unwind_recorded(self.local, self.frame);
    }
}

/// The unwinding path of a recorded join (Rayon: both closures run, `a`'s
/// panic wins): unlinks the frame, then runs `b` inline if it is still
/// latent or was taken back from its thief, or waits for the thief's
/// result and drops it. A panic of `b` (or of dropping its result) is
/// caught and dropped: a second panic while unwinding would abort.
#[cold]
#[inline(never)]
fn unwind_recorded<B, RB>(local: &Local, frame: &Frame<B, RB>)
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    local.unlink(frame.header.prev);
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        // Acquire; pairs with the Release store of `DONE` in `run_frame`.
        let state = frame.header.state.load(Ordering::Acquire);
        let run_b = state == LATENT
            || (state != DONE
                && !{
                    let thief = frame.header.thief.get();
                    crate::pool::wait_stolen(local, &frame.header, thief)
                });
        if run_b {
            // SAFETY: still latent (never published), or taken back out of
            // the thief's mailbox before the thief saw it: the owner owns
            // `b`; taken once.
            let b = unsafe { frame.take_b() };
            drop(b(false));
        } else {
            local.eager.set(true);
            // SAFETY: we saw `DONE` (Acquire), here or in `wait_stolen`.
            drop(unsafe { frame.take_result() });
        }
    }));
}

#[cold]
#[inline(never)]
fn join_promoted<B, RA, RB>(local: &Local, frame: &Frame<B, RB>, ra: RA) -> (RA, RB)
where
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    let state = frame.header.state.load(Ordering::Acquire);
    let thief = frame.header.thief.get();
    if state == DONE || crate::pool::wait_stolen(local, &frame.header, thief) {
        // The piece came back: the next recorded join may hand out another,
        // and the thief (HUNGRY since before its `DONE`) may get it directly.
        local.eager.set(true);
        local.handback.set(local.handback.get() | 1u64 << thief);
        // SAFETY: we saw `DONE` (Acquire), here or in `wait_stolen`.
        match unsafe { frame.take_result() } {
            Ok(rb) => (ra, rb),
            Err(p) => panic::resume_unwind(p),
        }
    } else {
        // SAFETY: the owner took the job back out of the thief's mailbox
        // before the thief saw it, so the owner owns `b` again; taken once.
        let b = unsafe { frame.take_b() };
        (ra, b(false))
    }
}
