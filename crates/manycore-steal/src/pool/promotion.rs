//! Promotion, the victim's side: at a tick (or an eager recorded join) a
//! busy worker hands its oldest latent frames to hungry workers.

use super::Pool;
use crate::raw::{self, JobHeader, Local};
use std::ptr::NonNull;

impl Pool {
    /// At a tick (or a recorded join) of worker `me`, whose chain starts at
    /// `start`: hand the oldest latent frames to hungry workers, one each:
    /// first to those that `handback` names (they returned a piece of ours
    /// and marked themselves HUNGRY before their `DONE`, which we saw; no
    /// demand bit is claimed for them), then to those whose demand bit is set.
    ///
    /// A handback thief's demand bit may be set too, or be set after we
    /// served it (`publish_demand` races with us): a victim that claims such
    /// a stale bit fails its CAS (the mailbox holds a job or is EMPTY) and
    /// puts its frame back, as for a thief that withdrew.
    ///
    /// Masks the kick handler (`raw::kick`) meanwhile: it must not promote
    /// a frame between this serve's finding and promoting it, nor while it
    /// puts one back.
    pub(crate) fn serve(&self, local: &Local, me: usize, handback: u64) {
        let _masked = local.mask();
        self.serve_chain(local.head(), me, handback, true);
    }

    /// The kick handler's serve (`raw::kick`): the handler has interrupted
    /// worker `me`, unmasked, whose chain starts at `start`; it serves
    /// demand bits only (the handback list is the interrupted code's), and
    /// steers nobody (steering allocates; the thief that kicked is awake).
    /// Runs in a signal handler: no allocation, no lock, no panic.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn serve_kicked(&self, local: &Local, start: *const JobHeader, me: usize) {
        let _masked = local.mask();
        self.serve_chain(start, me, 0, false);
    }

    fn serve_chain(&self, start: *const JobHeader, me: usize, handback: u64, steer: bool) {
        let mut direct = handback & !(1u64 << me);
        let mut served = 0u64;
        while direct != 0 {
            let Some(job) = raw::oldest_latent(start) else {
                return;
            };
            let t = direct.trailing_zeros() as usize;
            direct &= !(1u64 << t);
            if t < self.workers.len() && self.hand_over(job, me, t, false) {
                served |= 1u64 << t;
                self.workers[me].counters.bump_handbacks();
            }
        }
        // A thief just served directly may have set its bit meanwhile:
        // claiming that would only fail.
        let mut hint = self.hungry.peek() & !(1u64 << me) & !served;
        while hint != 0 {
            // Claim a thief only with a frame in hand: a claimed demand bit
            // that is not served would leave the thief unseen by everyone.
            let Some(job) = raw::oldest_latent(start) else {
                return;
            };
            let t = hint.trailing_zeros() as usize;
            hint &= !(1u64 << t);
            if !self.hungry.claim(t) {
                continue; // another victim claimed this thief
            }
            self.hand_over(job, me, t, steer);
        }
    }

    /// Promotes `job` (worker `me`'s oldest latent frame) to thief `t` and
    /// puts it in `t`'s mailbox if `t` is still HUNGRY; then steers `t` (if
    /// `steer`) and wakes it. Returns false if `t` was no longer HUNGRY (it
    /// withdrew, or another victim served it): the frame was never seen and
    /// is put back.
    fn hand_over(&self, job: NonNull<JobHeader>, me: usize, t: usize, steer: bool) -> bool {
        raw::promote(job, me, t);
        let ok = self.workers[t].mailbox.offer(job);
        if ok {
            // Before the wake-up: a sleeping thief cannot have started the
            // job yet, and wakes where it is steered. (A thief served by
            // handback marked itself hungry just now: awake, not steered.)
            if steer {
                self.steer(t, me);
            }
            self.workers[me].counters.bump_promotions();
            self.wake(t);
        } else {
            raw::unpromote(job);
        }
        ok
    }
}

/// A join of a worker whose chain starts at `local.head`: if some worker is
/// hungry, serve it now (one Relaxed load when nobody is).
#[inline(always)]
pub(crate) fn serve_if_hungry(local: &Local) {
    if !local.eager.get() {
        return;
    }
    if let Some((p, me)) = local.pool() {
        if local.handback.get() != 0 || p.hungry.peek() & !(1u64 << me) != 0 {
            serve_now(p, local, me);
        }
    }
}

#[cold]
#[inline(never)]
fn serve_now(p: &Pool, local: &Local, me: usize) {
    local.eager.set(false);
    p.serve(local, me, local.handback.replace(0));
}
