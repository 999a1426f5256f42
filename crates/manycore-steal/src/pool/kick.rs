//! Kicks, the hungry side: a worker that has waited for work for a while
//! (idle, or an owner waiting for its stolen piece) interrupts a busy
//! worker (`raw::kick`), whose handler promotes its oldest latent frames as
//! a tick would. Without kicks, latent work moves only when its owner
//! reaches a join: a worker in a long leaf (a sequential loop) or blocked
//! inside a join's `a` (on something that `b` must do) keeps it.
//!
//! The schedule: the first kick after `FIRST_KICK` of waiting (a busy
//! worker that joins ticks far more often and serves the demand itself),
//! then after twice as long each time, up to `MAX_KICK_DELAY` between
//! kicks, until the waiter gets work. A kick costs the busy worker a signal
//! delivery (a few microseconds); the waiter's doubling bounds the cost
//! when the busy worker has no latent work to give. A worker that sees
//! nobody busy does not kick; it sleeps (at most `IDLE_SLEEP`, in case a
//! worker became busy without waking it) until it is woken.

use super::Pool;
use crate::raw::Local;
use std::time::{Duration, Instant};

/// How long a worker waits for work before it kicks a busy one.
const FIRST_KICK: Duration = Duration::from_micros(100);
/// The longest wait between two kicks by the same waiter.
#[cfg_attr(loom, allow(dead_code))]
const MAX_KICK_DELAY: Duration = Duration::from_millis(10);
/// How long an idle worker that sees nobody busy sleeps before it looks
/// again (a worker that took a queued job does not wake the others).
#[cfg_attr(loom, allow(dead_code))]
const IDLE_SLEEP: Duration = Duration::from_millis(100);

/// A waiter's kick schedule (owned by the waiting worker).
#[derive(Debug)]
pub(crate) struct Kicker {
    /// When the next kick is due.
    due: Instant,
    /// The delay after the next kick, doubled by each kick.
    delay: Duration,
    /// Where the round-robin search for a busy worker starts.
    next: usize,
}

impl Kicker {
    /// A schedule for a wait that starts now.
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            due: now + FIRST_KICK,
            delay: FIRST_KICK * 2,
            next: 0,
        }
    }

    /// The waiter got work: the next wait starts afresh.
    pub(crate) fn reset(&mut self, now: Instant) {
        self.due = now + FIRST_KICK;
        self.delay = FIRST_KICK * 2;
    }

    /// How long to sleep at most before looking again (0: a kick is due).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn sleep_for(&self, now: Instant) -> Duration {
        self.due.saturating_duration_since(now)
    }

    /// If a kick is due, kicks a busy worker of `pool` (not `me`) and
    /// schedules the next. Returns whom it kicked.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn kick_if_due(&mut self, pool: &Pool, me: usize, now: Instant) -> Option<usize> {
        if now < self.due {
            return None;
        }
        self.due = now + self.delay;
        self.delay = (self.delay * 2).min(MAX_KICK_DELAY);
        self.kick_now(pool, me)
    }

    /// Kicks the next busy worker of `pool` (not `me`), round robin.
    pub(crate) fn kick_now(&mut self, pool: &Pool, me: usize) -> Option<usize> {
        let v = pool.busy_worker(me, self.next)?;
        self.next = v + 1;
        pool.kick(v).then_some(v)
    }
}

impl Pool {
    /// A worker other than `me` that does not ask for work (probably busy),
    /// searching round robin from `from`.
    pub(crate) fn busy_worker(&self, me: usize, from: usize) -> Option<usize> {
        let n = self.workers.len();
        let hungry = self.hungry.peek();
        (0..n)
            .map(|i| (from + i) % n)
            .find(|&v| v != me && hungry & (1u64 << v) == 0)
    }

    /// Whether some worker other than `me` is (probably) busy.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn someone_busy(&self, me: usize) -> bool {
        self.busy_worker(me, 0).is_some()
    }

    /// Interrupts worker `v` (its handler serves the demand); false if it
    /// could not be sent.
    #[cfg(not(loom))]
    pub(crate) fn kick(&self, v: usize) -> bool {
        match self.workers[v]
            .tid
            .load(manycore_sync::atomic::Ordering::Relaxed)
        {
            0 => false,
            tid => crate::raw::kick(tid),
        }
    }

    /// Under loom there are no signals: the kick is a flag that the
    /// victim's model code delivers at points of its choosing
    /// ([`deliver_kick`]), standing for the moment the signal lands.
    #[cfg(loom)]
    pub(crate) fn kick(&self, v: usize) -> bool {
        self.workers[v]
            .kicked
            .swap(true, manycore_sync::atomic::Ordering::AcqRel);
        true
    }
}

/// The kick handler's work, on the kicked thread: unless masked, serve
/// demand from the chain's latent frames.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn on_kick(local: &Local) {
    let Some(start) = local.head_if_unmasked() else {
        return;
    };
    if start.is_null() {
        return;
    }
    if let Some((p, me)) = local.pool() {
        p.serve_kicked(local, start, me);
    }
}

/// Loom models: the kick sent to the calling worker lands now (if any).
#[cfg(all(loom, test))]
pub(crate) fn deliver_kick() {
    crate::raw::with_local(|local| {
        if let Some((p, me)) = local.pool() {
            if p.workers[me]
                .kicked
                .swap(false, manycore_sync::atomic::Ordering::Acquire)
            {
                on_kick(local);
            }
        }
    });
}

impl Pool {
    /// Worker `me`, about to sleep on its event count (prepared as `key`,
    /// its condition re-checked): sleeps at most `cap` (`None`: until
    /// woken) and, if the pool kicks and someone is busy, only until the
    /// next kick is due, then kicks.
    #[cfg(not(loom))]
    pub(crate) fn sleep_kicking(
        &self,
        me: usize,
        key: manycore_sync::WaitKey,
        kicker: &mut Kicker,
        cap: Option<Duration>,
    ) {
        let ec = &self.workers[me].ec;
        if !self.kicks {
            match cap {
                None => ec.wait(key),
                Some(c) => drop(ec.wait_timeout(key, c)),
            }
            return;
        }
        let now = Instant::now();
        let busy = self.someone_busy(me);
        let d = if busy {
            kicker.sleep_for(now)
        } else {
            kicker.reset(now);
            IDLE_SLEEP
        };
        let d = cap.map_or(d, |c| d.min(c));
        if !ec.wait_timeout(key, d)
            && busy
            && kicker.kick_if_due(self, me, Instant::now()).is_some()
        {
            self.workers[me].counters.bump_kicks();
        }
    }

    /// Loom: kicks a busy worker (if the pool kicks) and sleeps until woken.
    #[cfg(loom)]
    pub(crate) fn sleep_kicking(
        &self,
        me: usize,
        key: manycore_sync::WaitKey,
        kicker: &mut Kicker,
        _cap: Option<Duration>,
    ) {
        if self.kicks && kicker.kick_now(self, me).is_some() {
            self.workers[me].counters.bump_kicks();
        }
        self.workers[me].ec.wait(key);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::pool::Host;
    use proptest::prelude::*;

    struct Quiet;
    impl Host for Quiet {
        fn poll_once(&self) -> usize {
            0
        }
        fn notify(&self, _i: usize) {}
    }

    proptest! {
        /// The schedule's invariants: the first kick is due `FIRST_KICK`
        /// after a (re)start; kicks are due ever later, at most
        /// `MAX_KICK_DELAY` apart and at least twice as far apart as the
        /// previous two until then; a reset starts afresh.
        #[test]
        fn kick_schedule(steps in proptest::collection::vec((0u64..30_000, any::<bool>()), 1..40)) {
            let pool = Pool::new(1, Box::new(Quiet), Duration::ZERO);
            let t0 = Instant::now();
            let mut k = Kicker::new(t0);
            let mut now = t0;
            prop_assert_eq!(k.sleep_for(now), FIRST_KICK);
            let mut last_gap = Duration::ZERO;
            for (us, reset) in steps {
                now += Duration::from_micros(us);
                if reset {
                    k.reset(now);
                    prop_assert_eq!(k.sleep_for(now), FIRST_KICK);
                    last_gap = Duration::ZERO;
                    continue;
                }
                let due = now + k.sleep_for(now);
                // One worker: nobody to kick, but the schedule moves on.
                let kicked = k.kick_if_due(&pool, 0, now);
                prop_assert!(kicked.is_none());
                if now >= due {
                    let gap = k.sleep_for(now);
                    prop_assert!(gap <= MAX_KICK_DELAY);
                    prop_assert!(gap >= FIRST_KICK * 2);
                    prop_assert!(gap == MAX_KICK_DELAY || gap >= last_gap * 2);
                    last_gap = gap;
                } else {
                    prop_assert_eq!(now + k.sleep_for(now), due);
                }
            }
        }
    }
}
