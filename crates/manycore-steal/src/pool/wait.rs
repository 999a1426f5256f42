//! The owner's wait for a promoted frame: take it back, or wait for the
//! thief's `DONE` while running work handed to it and polling messages.

use super::heartbeat::poll_host;
use crate::raw::{self, JobHeader, Local};
use manycore_sync::SpinBudget;
use std::time::Duration;

/// Largest tick interval multiplier after promotions that came back unstolen.
const MAX_BACKOFF: u32 = 16;

/// How long an owner waits for its stolen job before it announces demand.
#[cfg(not(loom))]
const QUIET_WAIT: Duration = Duration::from_micros(2);

/// The owner's side of a promoted frame handed to worker `thief`: take it
/// back if the thief has not started it (returns false: run `b` inline), or
/// wait for the thief's `DONE` while running other work (returns true: the
/// result is in the frame).
pub(crate) fn wait_stolen(local: &Local, job: &JobHeader, thief: usize) -> bool {
    let (pool, me) = local
        .pool()
        .expect("a promoted frame implies a bound worker");
    // Not tried once the thief has marked the frame STARTED: the CAS would
    // fail, and take the thief's mailbox line away from it just before it
    // marks itself hungry.
    if !raw::is_started(job) && !raw::is_done(job) && pool.workers[thief].mailbox.reclaim(job) {
        pool.workers[me].counters.bump_reclaims();
        // If the thief was steered, it stays so until it runs again (its
        // idle loop or its next job gives it its full set back). Restored
        // here, while it is still waking up, it could be woken onto this
        // CPU, behind us, and not run for milliseconds
        // (docs/notes/2026-11-25-steal-steering.md).
        local
            .backoff
            .set((local.backoff.get() * 2).min(MAX_BACKOFF));
        return false;
    }
    // First wait a little without asking for work: a piece stolen from a
    // small tree is about to come back, and helping with what is left of it
    // would cost both workers more (claiming, handing over, withdrawing)
    // than it saves.
    #[cfg(not(loom))]
    {
        let mut quiet = SpinBudget::new(QUIET_WAIT);
        while !raw::is_done(job) && quiet.spin() {}
    }
    wait_until(local, &|| raw::is_done(job));
    local.backoff.set(1);
    true
}

/// Worker `local` waits until `done()`: it runs work it finds meanwhile
/// (frames handed to it, spawned, injected and broadcast jobs), asks for
/// work, spins a little, polls messages and sleeps on its event count (each
/// sleep bounded), until `done()`. Whoever makes `done()` true rings the
/// worker's event count after (`Pool::wake`).
pub(crate) fn wait_until(local: &Local, done: &dyn Fn() -> bool) {
    let (pool, me) = local.pool().expect("a waiting worker is bound");
    let ec = &pool.workers[me].ec;
    // Created at the first sleep: the wait for work starts then.
    let mut kicker: Option<super::Kicker> = None;
    let mut spin = SpinBudget::new(if cfg!(loom) {
        Duration::ZERO
    } else {
        pool.spin
    });
    loop {
        if done() {
            break;
        }
        // Help: run what a victim (usually the thief itself) hands us, or
        // queued jobs.
        if let Some(w) = pool.find_work(me) {
            pool.run_work(me, w, local);
            spin.reset();
            kicker = None;
            continue;
        }
        pool.register(me);
        if spin.spin() {
            continue;
        }
        poll_host(pool, local);
        let key = ec.prepare_wait();
        if done() || pool.has_work(me) {
            ec.cancel_wait();
            continue;
        }
        // Bounded so that messages are still polled while we wait; kicks a
        // busy worker (probably our thief, in a long leaf) now and then.
        let kicker = kicker.get_or_insert_with(|| super::Kicker::new(std::time::Instant::now()));
        pool.sleep_kicking(me, key, kicker, Some(Duration::from_millis(1)));
        spin.reset();
    }
    if let Some(j) = pool.withdraw(me) {
        pool.run_job(j, local);
    }
}
